"""The OU forward process and the pieces of the reverse SDE (pure functions; the paper's §2-3).

The paper's PDF could not be opened offline, so the ``# Eq. (...)`` lines below name each formula instead of
numbering it (``grep -n "Eq. ("`` lists them):

- Eq. (OU): dx_t = -x_t dt + √2 dB_t, so p_t = p* * N(e^{-t}·, (1-e^{-2t}) I).
- Eq. (reverse SDE): dY_s = (Y_s + 2∇ln p_{T-s}(Y_s)) ds + √2 dB_s, discretised with the exponential integrator.
- Eq. (posterior): q_t(x0|x) ∝ exp(-f*(x0) - ‖x - e^{-t}x0‖² / (2(1-e^{-2t}))).
- Eq. (score): ∇ln p_t(x) = E_{q_t(·|x)}[-(x - e^{-t}x0)/(1-e^{-2t})].
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor

__all__ = [
    "posterior_gaussian_params",
    "score_from_posterior_mean",
    "posterior_grad_log_prob",
    "exponential_integrator_step",
    "tweedie_mean",
    "reverse_time_grid",
    "GRIDS",
]

GRIDS = ("uniform", "exp-linear")


def _check_t(t: float) -> float:
    """A diffusion time in (0, 350]: e^{2t} must stay a float64 (a longer horizon is noise either way)."""
    return check_float(t, "diffusion time t", minimum=0, maximum=MAX_TIME, open_min=True)


MAX_TIME = 350.0


def _state(x: object, name: str, like: Tensor | None = None) -> Tensor:
    """A floating tensor ``(..., d)``; with ``like`` it must have ``like``'s shape."""
    check_tensor(x, name, kind="float", allow_empty=True)
    if like is not None and tuple(x.shape) != tuple(like.shape):
        raise InputError(f"{name} must have the shape of x {tuple(like.shape)}, got {tuple(x.shape)}")
    return x


def posterior_gaussian_params(x: Tensor, t: float) -> tuple[Tensor, float]:
    """The Gaussian factor of the regularised posterior q_t(x0|x) ∝ p*(x0) N(x0; e^{t}x, (e^{2t}-1) I).

    Returns the mean e^{t} x ``(..., d)`` and the scalar variance e^{2t} - 1.
    """
    t = _check_t(t)
    _state(x, "x")
    # Eq. (posterior): q_t(x0|x) ∝ p*(x0) N(x0; e^{t} x, (e^{2t}-1) I)
    return math.exp(t) * x, math.expm1(2 * t)


def score_from_posterior_mean(x: Tensor, t: float, m: Tensor) -> Tensor:
    """Tweedie: ∇ln p_t(x) = -(x - e^{-t} m_t(x)) / (1 - e^{-2t}), with m_t(x) = E_{q_t(·|x)}[x0]. ``(..., d)``."""
    t = _check_t(t)
    _state(m, "m", _state(x, "x"))
    # Eq. (score): ∇ln p_t(x) = -(x - e^{-t} E_{q_t}[x0]) / (1 - e^{-2t})
    return -(x - math.exp(-t) * m) / (-math.expm1(-2 * t))


def posterior_grad_log_prob(z: Tensor, x: Tensor, t: float, grad_log_prob_z: Tensor) -> Tensor:
    """∇_{x0} ln q_t(x0|x) at x0 = z: ∇ln p*(z) - (z - e^{t}x) / (e^{2t} - 1)
    (= -∇f*(z) + e^{-t}(x - e^{-t}z)/(1 - e^{-2t})). ``z``: ``(..., d)``, ``x`` broadcastable to it."""
    mean, var = posterior_gaussian_params(x, t)
    _state(grad_log_prob_z, "grad_log_prob_z", _state(z, "z"))
    try:
        torch.broadcast_shapes(tuple(x.shape), tuple(z.shape))
    except RuntimeError:
        raise InputError(f"x {tuple(x.shape)} must broadcast to z {tuple(z.shape)}") from None
    # Eq. (posterior), gradient: ∇_{x0} ln q_t = -∇f*(x0) + e^{-t}(x - e^{-t}x0)/(1 - e^{-2t})
    return grad_log_prob_z - (z - mean) / var


def exponential_integrator_step(x: Tensor, score: Tensor, eta: float, noise: Tensor) -> Tensor:
    """One exponential-integrator step of the reverse SDE with the score frozen over the step (Alg. 1):

    x ← e^{η} x + 2(e^{η} - 1) v + sqrt(e^{2η} - 1) ξ.

    The factor 2 matters: without it one step on N(0, 1) (score -x) gives variance 1.2214 instead of 1.0221.
    """
    eta = check_float(eta, "step size eta", minimum=0, maximum=MAX_TIME, open_min=True)
    _state(score, "score", _state(x, "x"))
    _state(noise, "noise", x)
    # Eq. (reverse SDE), exponential integrator over [t - η, t] with v frozen: Y ← e^{η}Y + 2(e^{η}-1)v + √(e^{2η}-1) ξ
    return math.exp(eta) * x + 2.0 * math.expm1(eta) * score + math.sqrt(math.expm1(2 * eta)) * noise


def tweedie_mean(x: Tensor, t: float, score: Tensor) -> Tensor:
    """E[x0 | x_t = x] = e^{t} (x + (1 - e^{-2t}) ∇ln p_t(x)) (Tweedie; the denoised output at the last time)."""
    t = _check_t(t)
    _state(score, "score", _state(x, "x"))
    # Eq. (score) solved for the posterior mean: E[x0 | x_t = x] = e^{t}(x + (1 - e^{-2t}) ∇ln p_t(x))
    return math.exp(t) * (x - math.expm1(-2 * t) * score)


def reverse_time_grid(
    T: float, K: int, delta: float | None = None, grid: str = "uniform", switch: float = 1.0
) -> list[float]:
    """The times t_k (k = 0..K-1) at which the score is evaluated, and the end time: ``[t_0 = T, ..., t_{K-1}, t_end]``.

    ``grid="uniform"``: t_k = T - kη. Without ``delta`` η = T/K and the chain ends at t = 0 (the last score is at
    t = η); with ``delta`` η = (T - δ)/K and the chain stops at t = δ (early stopping: the estimator's
    1/(1-e^{-2t}) blows up as t → 0).

    ``grid="exp-linear"`` (the OU time grid of ZOD-MC's ``sde_lib.py``, as the third-party code describes it):
    linear steps above ``switch`` (default t = 1) and geometric steps below it, down to ``delta`` (required), with
    the step continuous at the switch: the grid is uniform in u(t) = t - s for t >= s and u(t) = s·ln(t/s) below.
    Small t, where the score changes fastest, gets short steps.
    """
    if grid not in GRIDS:
        raise InputError(f"grid must be one of {GRIDS}, got {grid!r}")
    T = check_float(T, "T", minimum=0, maximum=MAX_TIME, open_min=True)
    check_int(K, "K", minimum=1, maximum=10**6)
    if delta is not None:
        delta = check_float(delta, "delta", minimum=0, maximum=T, open_min=True, open_max=True)
    if grid == "uniform":
        if delta is None:
            eta = T / K
            return [T - k * eta for k in range(K)] + [0.0]
        eta = (T - delta) / K
        return [T - k * eta for k in range(K)] + [float(delta)]
    if delta is None:
        raise InputError(
            "grid='exp-linear' needs an early-stopping time delta > 0 (its geometric part ends there)"
        )
    s = min(float(switch), float(T))
    if not s > delta:
        raise InputError(f"the grid's switch time {s} must exceed delta = {delta}")

    def u(t: float) -> float:
        return t - s if t >= s else s * math.log(t / s)

    def u_inv(v: float) -> float:
        return v + s if v >= 0 else s * math.exp(v / s)

    ua, ub = u(float(T)), u(float(delta))
    times = [u_inv(ua + (ub - ua) * k / K) for k in range(K)] + [float(delta)]
    times[0] = float(T)
    return times
