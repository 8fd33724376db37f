"""Monte Carlo estimates of the diffused score ∇ln p_t(x) through the mean of the regularised posterior (spec §2).

q_t(x0|x) ∝ p*(x0) N(x0; e^{t}x, (e^{2t}-1) I),  ∇ln p_t(x) = -(x - e^{-t} E_{q_t}[x0]) / (1 - e^{-2t}).

Inner estimators of m_t(x) = E_{q_t}[x0], all vectorised over the particles ``x`` ``(N, d)``:

- ``"is"``: self-normalised importance sampling with the Gaussian factor as proposal: m log-density calls.
- ``"ula"``: the paper's MCMC variant: ``n_chains`` ULA chains on q_t started from its Gaussian factor,
  ``inner_steps`` steps each, mean of the second half of the iterates: n·s gradient calls.
- ``"is+ula"``: a hybrid, not the paper's variant: the same chains started from an importance resample of m
  proposals (SLIPS-style): m log-density calls plus n·s gradient calls. Better when q_t is multimodal (large t,
  separated modes), where chains from the Gaussian factor fall into the wrong posterior mode.
- ``"mala"``: Metropolis-adjusted chains started from the Gaussian factor: n·(s+1) gradient and n·(s+1)
  log-density calls.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float

from .diffusion import posterior_gaussian_params
from .diffusion import posterior_grad_log_prob
from .diffusion import score_from_posterior_mean
from .targets import Target
from .targets import check_target

__all__ = ["METHODS", "score_estimate", "posterior_mean_estimate", "inner_step_size"]

METHODS = ("is", "ula", "is+ula", "mala")


def inner_step_size(t: float, inner_step: float, lipschitz: float | None = None) -> float:
    """The inner Langevin step, clipped to τ_t ≤ ½·min(1/L, (1-e^{-2t})/e^{-2t}) (spec §2)."""
    t = check_float(t, "t", minimum=0, maximum=350, open_min=True)
    inner_step = check_float(inner_step, "inner_step", minimum=0, open_min=True)
    if lipschitz is not None:
        lipschitz = check_float(lipschitz, "lipschitz", minimum=0, open_min=True)
    # Eq. (inner step): τ_t ≤ ½·min(1/L, (1-e^{-2t})/e^{-2t}), (1-e^{-2t})/e^{-2t} = e^{2t} - 1
    cap = 0.5 * math.expm1(2 * float(t))
    if lipschitz is not None:
        cap = min(cap, 0.5 / float(lipschitz))
    return min(float(inner_step), cap)


def _check_int(name: str, v: object, minimum: int, maximum: int = 10**7) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= maximum:
        raise InputError(f"{name} must be an int >= {minimum} (at most {maximum}), got {v!r}")
    return v


def _importance(
    x: Tensor, t: float, target: Target, m: int, gen: torch.Generator | None
) -> tuple[Tensor, Tensor]:
    """m proposals z ~ N(e^{t}x, (e^{2t}-1)I) per particle ``(N, m, d)`` and their normalised weights ``(N, m)``."""
    mean, var = posterior_gaussian_params(x, t)
    z = mean.unsqueeze(1) + math.sqrt(var) * torch.randn(
        x.shape[0], m, x.shape[1], generator=gen, dtype=x.dtype, device=x.device
    )
    # Eq. (posterior) with the Gaussian factor as proposal: w_j ∝ q_t(z_j|x)/N(z_j; e^t x, (e^{2t}-1)I) = p*(z_j)
    logw = target.log_prob(z)
    dead = torch.isneginf(logw).all(-1)
    if dead.any():
        raise InputError(
            f"importance sampling at t={t:.4g}: all {m} proposals have zero target density for "
            f"{int(dead.sum())} particle(s); increase m, or start from a better initial law"
        )
    return z, torch.softmax(logw, dim=-1)  # log-sum-exp normalisation


def _langevin_chains(
    z: Tensor,
    x: Tensor,
    t: float,
    target: Target,
    steps: int,
    tau: float,
    mala: bool,
    gen: torch.Generator | None,
) -> tuple[Tensor, float]:
    """Run ``steps`` ULA/MALA steps on q_t(·|x) for chains ``z`` ``(N, n, d)``; return the mean of the second half of
    the iterates ``(N, d)`` and the acceptance rate (1.0 for ULA)."""
    xb = x.unsqueeze(1)
    mean, var = posterior_gaussian_params(xb, t)

    def log_q(y: Tensor) -> Tensor:
        return target.log_prob(y) - ((y - mean) ** 2).sum(-1) / (2 * var)

    burn = steps // 2
    acc_sum = torch.zeros((), dtype=z.dtype, device=z.device)
    total = torch.zeros_like(z)
    g = posterior_grad_log_prob(z, xb, t, target.grad_log_prob(z))
    lq = log_q(z) if mala else None
    n_acc = 0
    for i in range(steps):
        noise = torch.randn(z.shape, generator=gen, dtype=z.dtype, device=z.device)
        # Eq. (inner ULA): z ← z + τ ∇ln q_t(z|x) + √(2τ) ξ
        y = z + tau * g + math.sqrt(2 * tau) * noise
        if i < steps - 1 or mala:
            gy = posterior_grad_log_prob(y, xb, t, target.grad_log_prob(y))
        else:
            gy = g  # the last ULA iterate needs no gradient
        if mala:
            lqy = log_q(y)
            fwd = ((y - z - tau * g) ** 2).sum(-1)
            bwd = ((z - y - tau * gy) ** 2).sum(-1)
            log_alpha = lqy - lq + (fwd - bwd) / (4 * tau)
            u = torch.rand(log_alpha.shape, generator=gen, dtype=z.dtype, device=z.device)
            acc = torch.log(u) < log_alpha
            acc_sum = acc_sum + acc.to(z.dtype).mean()
            n_acc += 1
            a = acc.unsqueeze(-1)
            z, g, lq = torch.where(a, y, z), torch.where(a, gy, g), torch.where(acc, lqy, lq)
        else:
            z, g = y, gy
        if i >= burn:
            total = total + z
    # Eq. (score), MCMC estimate of the posterior mean: the average of the second half of the chains' iterates
    m_hat = (total / (steps - burn)).mean(1)
    return m_hat, float(acc_sum / n_acc) if mala else 1.0


def posterior_mean_estimate(
    x: Tensor,
    t: float,
    target: Target,
    method: str = "is",
    *,
    m: int = 200,
    n_chains: int = 10,
    inner_steps: int = 20,
    inner_step: float = 0.05,
    lipschitz: float | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Monte Carlo estimate of m_t(x) = E_{q_t(·|x)}[x0], ``(N, d) -> (N, d)``. See the module docstring."""
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    check_target(target)
    if not isinstance(x, Tensor) or x.ndim != 2 or not x.is_floating_point():
        got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise InputError(f"x must be a float tensor of shape (N, d), got {got}")
    t = float(t)
    if not (t > 0 and math.isfinite(t)):
        raise InputError(f"t must be a finite number > 0, got {t}")
    if method in ("is", "is+ula"):
        _check_int("m", m, 1)
    if method != "is":
        _check_int("n_chains", n_chains, 1)
        _check_int("inner_steps", inner_steps, 1)
        if not (float(inner_step) > 0 and math.isfinite(float(inner_step))):
            raise InputError(f"inner_step must be a finite number > 0, got {inner_step}")
        if lipschitz is not None and not float(lipschitz) > 0:
            raise InputError(f"lipschitz must be > 0 (or None), got {lipschitz}")
    n, d = x.shape
    if method == "is":
        z, w = _importance(x, t, target, m, generator)
        # Eq. (score), IS estimate of the posterior mean: m̂ = Σ_j w_j z_j
        return (w.unsqueeze(-1) * z).sum(1)
    tau = inner_step_size(t, inner_step, lipschitz)
    if method == "is+ula":
        z, w = _importance(x, t, target, m, generator)
        idx = torch.multinomial(w, n_chains, replacement=True, generator=generator)  # (N, n): IS resample
        z0 = torch.gather(z, 1, idx.unsqueeze(-1).expand(n, n_chains, d))
    else:
        mean, var = posterior_gaussian_params(x, t)
        z0 = mean.unsqueeze(1) + math.sqrt(var) * torch.randn(
            n, n_chains, d, generator=generator, dtype=x.dtype, device=x.device
        )
    m_hat, _ = _langevin_chains(z0, x, t, target, inner_steps, tau, method == "mala", generator)
    return m_hat


def score_estimate(
    x: Tensor,
    t: float,
    target: Target,
    method: str = "is",
    *,
    m: int = 200,
    n_chains: int = 10,
    inner_steps: int = 20,
    inner_step: float = 0.05,
    lipschitz: float | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """ŝ(x, t) ≈ ∇ln p_t(x) = -(x - e^{-t} m̂_t(x)) / (1 - e^{-2t}), ``(N, d) -> (N, d)`` (spec §2, Tweedie).

    ``method``: ``"is"`` | ``"ula"`` | ``"is+ula"`` | ``"mala"`` (see the module docstring for what each costs).
    ``m``: importance proposals per particle; ``n_chains``, ``inner_steps``, ``inner_step``: the inner Langevin
    chains (the step is clipped to ½·min(1/L, e^{2t}-1) with L = ``lipschitz`` when given). Wrap ``target`` in
    ``CountedTarget`` to count the oracle calls.
    """
    m_hat = posterior_mean_estimate(
        x,
        t,
        target,
        method,
        m=m,
        n_chains=n_chains,
        inner_steps=inner_steps,
        inner_step=inner_step,
        lipschitz=lipschitz,
        generator=generator,
    )
    return score_from_posterior_mean(x, t, m_hat)
