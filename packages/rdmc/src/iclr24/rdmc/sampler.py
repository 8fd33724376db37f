"""Reverse Diffusion Monte Carlo (Alg. 1): the reverse OU SDE driven by Monte Carlo score estimates."""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import torch
from torch import Tensor

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.tracking import StepLog

from .diffusion import GRIDS
from .diffusion import exponential_integrator_step
from .diffusion import reverse_time_grid
from .diffusion import tweedie_mean
from .schedule import SCHEDULES
from .schedule import inner_sample_sizes
from .score import METHODS
from .score import score_estimate
from .targets import CountedTarget
from .targets import Target
from .targets import check_target

__all__ = ["SampleInfo", "rdmc_sample", "ESTIMATORS"]


def listening(log: StepLog) -> bool:
    """Whether anyone reads a :class:`StepLog` (callbacks, files or DEBUG records); when nobody does, the samplers
    compute no step metrics, so a plain call does the work it did before logging existed."""
    import logging

    return bool(log.callbacks or log.writers or log.logger.isEnabledFor(logging.DEBUG))


ESTIMATORS = (*METHODS, "exact")


@dataclass
class SampleInfo:
    """What a sampler did. ``grad_calls`` / ``logp_calls`` count every point at which ∇ln p* / ln p* was evaluated
    (totals over all ``n`` samples); ``*_per_sample`` divide by ``n``."""

    method: str
    n: int
    grad_calls: int
    logp_calls: int
    seconds: float
    config: dict = field(default_factory=dict)
    extras: dict = field(default_factory=dict)

    @property
    def grad_calls_per_sample(self) -> float:
        return self.grad_calls / self.n

    @property
    def logp_calls_per_sample(self) -> float:
        return self.logp_calls / self.n

    @property
    def calls_per_sample(self) -> float:
        """Gradient plus log-density calls per sample."""
        return (self.grad_calls + self.logp_calls) / self.n

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(
            grad_calls_per_sample=self.grad_calls_per_sample,
            logp_calls_per_sample=self.logp_calls_per_sample,
            calls_per_sample=self.calls_per_sample,
        )
        return d


def _resolve_dim(target: Target, dim: int | None, x_init: Tensor | None) -> int:
    for cand in (dim, getattr(target, "dim", None), None if x_init is None else x_init.shape[-1]):
        if cand is not None:
            if isinstance(cand, bool) or not isinstance(cand, int) or cand < 1:
                raise InputError(f"dim must be a positive int, got {cand!r}")
            return cand
    raise InputError("cannot tell the dimension: give dim=d, x_init of shape (n, d), or a target with a .dim")


def _positive_int(name: str, v: object, minimum: int = 1, maximum: int = 10**7) -> int:
    """A count in [minimum, maximum]: sample, step and chain counts far past any real run are refused up front."""
    if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= maximum:
        raise InputError(f"{name} must be an int >= {minimum} (at most {maximum}), got {v!r}")
    return v


def _check_x_init(x_init: Any, n: int, d: int, dtype: torch.dtype, device: str | torch.device) -> Tensor:
    x = torch.as_tensor(x_init, dtype=dtype, device=device).clone()
    if x.shape != (n, d):
        raise InputError(f"x_init must have shape (n, d) = ({n}, {d}), got {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise InputError("x_init must be finite")
    return x


def rdmc_sample(
    target: Target,
    n: int,
    T: float = 2.0,
    K: int = 20,
    estimator: str = "is",
    *,
    m: int = 200,
    n_chains: int = 10,
    inner_steps: int = 20,
    inner_step: float = 0.05,
    lipschitz: float | None = None,
    schedule: str = "paper",
    grid: str = "uniform",
    warm_start_steps: int = 0,
    warm_start_step: float | None = None,
    delta: float | None = None,
    denoise: bool = False,
    x_init: Tensor | None = None,
    seed: int = 0,
    dim: int | None = None,
    dtype: torch.dtype = torch.float64,
    device: str | torch.device = "cpu",
    max_floats: int = 2**22,
    callbacks: Any = None,
    log_dir: str | os.PathLike | None = None,
) -> tuple[Tensor, SampleInfo]:
    """Draw ``n`` samples from ``target`` with rdMC (Alg. 1). Returns ``(samples (n, d), SampleInfo)``.

    1. Initial law p̂_T: ``x_init`` when given (e.g. exact draws of p_T), else N(0, (1-e^{-2T}) I); then
       ``warm_start_steps`` ULA steps on p_T driven by ŝ(·, T) with step ``warm_start_step``
       (default (1-e^{-2T})/4).
    2. K reverse steps: t_k = T - kη, v ← ŝ(x, t_k), x ← e^{η}x + 2(e^{η}-1)v + sqrt(e^{2η}-1)ξ. η = T/K, or
       (T-δ)/K with early stopping at ``delta`` (then ``denoise=True`` returns the Tweedie mean at δ instead,
       at the cost of one more score estimate). ``grid="exp-linear"`` (needs ``delta``) uses linear steps above
       t = 1 and geometric ones below (see :func:`reverse_time_grid`).

    ``schedule``: how the inner budget is spread over the outer steps. ``"paper"`` (default): the time-dependent
    sample size of the paper's analysis, n_k ∝ 1/(1-e^{-2t_k}) (see :mod:`iclr24.rdmc.schedule`), with the same
    total as ``"constant"``: K·m importance proposals and K·n_chains inner chains in all. ``"constant"``: m
    proposals and n_chains chains at every step. The inner Langevin step is time-dependent either way (clipped to
    ½·min(1/L, e^{2t}-1)).

    ``estimator``: ``"is"`` | ``"ula"`` | ``"is+ula"`` | ``"mala"`` (see :func:`score_estimate`) or ``"exact"``
    (the target's own ``diffused_score(x, t)``: a reference, no oracle calls). Particles are processed in chunks
    so that at most ``max_floats`` proposal floats (chunk·m·d) live at once. A fixed ``seed`` gives bit-identical
    samples for the same arguments.

    Oracle cost per sample (exact, for either schedule): IS: K·m log-density calls; ULA: K·n·s gradient calls;
    IS+ULA: both; MALA: K·n·(s+1) of each; plus m (or n·s) per warm-start step and one more estimate with
    ``denoise`` (these use the constant m and n).

    ``callbacks`` (``f(step, metrics)``, or objects with ``on_step``) and ``log_dir`` (``metrics.jsonl``, and
    TensorBoard event files when installed) get one record per warm-start step and per reverse step: ``t`` (the
    time reached), ``eta``, ``score_norm`` (the mean ‖ŝ‖ over the particles) and the cumulative ``grad_calls`` and
    ``logp_calls``; the end record has the totals. Logging draws no random numbers: the samples are the same
    with or without it.
    """
    check_target(target)
    n = _positive_int("n", n)
    K = _positive_int("K", K)
    m = _positive_int("m (importance proposals per outer step)", m)
    n_chains = _positive_int("n_chains", n_chains)
    inner_steps = _positive_int("inner_steps", inner_steps)
    if schedule not in SCHEDULES:
        raise InputError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if grid not in GRIDS:
        raise InputError(f"grid must be one of {GRIDS}, got {grid!r}")
    warm_start_steps = _positive_int("warm_start_steps", warm_start_steps, 0)
    _positive_int("max_floats", max_floats)
    if estimator not in ESTIMATORS:
        raise InputError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    T = float(T)
    if not (T > 0 and math.isfinite(T)):
        raise InputError(f"T must be a finite number > 0, got {T}")
    if delta is not None:
        delta = float(delta)
        if not 0 < delta < T:
            raise InputError(f"delta (early-stopping time) must satisfy 0 < delta < T = {T}, got {delta}")
    if grid == "exp-linear" and delta is None:
        raise InputError("grid='exp-linear' needs an early-stopping time delta (e.g. delta=0.05)")
    if denoise and delta is None:
        raise InputError(
            "denoise=True needs an early-stopping time delta > 0 (the Tweedie mean at t=0 is undefined)"
        )
    if estimator == "exact" and not callable(getattr(target, "diffused_score", None)):
        raise InputError("estimator='exact' needs a target with diffused_score(x, t) (e.g. GaussianMixture)")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"seed must be a non-negative int, got {seed!r}")
    d = _resolve_dim(target, dim, None if x_init is None else torch.as_tensor(x_init))
    counted = CountedTarget(target)
    gen = torch.Generator(device=device).manual_seed(seed)
    opts = dict(inner_steps=inner_steps, inner_step=inner_step, lipschitz=lipschitz)
    x_start = None if x_init is None else _check_x_init(x_init, n, d, dtype, device)
    h = float(warm_start_step) if warm_start_step is not None else -math.expm1(-2 * T) / 4
    if warm_start_steps and not (h > 0 and math.isfinite(h)):
        raise InputError(f"warm_start_step must be a finite number > 0, got {warm_start_step}")
    log = StepLog(log_dir, callbacks, name="rdmc")  # last: a bad argument leaves no log folder behind
    on = listening(log)

    def report(step: int, t: float, eta: float, v: Tensor) -> None:
        if on:
            metrics = {"t": t, "eta": eta, "score_norm": float(v.norm(dim=-1).mean())}
            log(step, {**metrics, "grad_calls": counted.grad_calls, "logp_calls": counted.logp_calls})

    def score(x: Tensor, t: float, m_t: int = m, n_t: int = n_chains) -> Tensor:
        if estimator == "exact":
            return target.diffused_score(x, t).to(x)
        per_particle = {"is": m_t, "is+ula": max(m_t, n_t), "ula": n_t, "mala": n_t}[estimator]
        chunk = max(1, max_floats // (per_particle * d))
        parts = [
            score_estimate(
                x[i : i + chunk], t, counted, estimator, m=m_t, n_chains=n_t, generator=gen, **opts
            )
            for i in range(0, x.shape[0], chunk)
        ]
        return torch.cat(parts, 0)

    t0 = time.perf_counter()
    with torch.no_grad(), log:
        if x_init is not None:
            x = x_start
        else:  # N(0, (1 - e^{-2T}) I): p_T when T is large
            x = math.sqrt(-math.expm1(-2 * T)) * torch.randn(n, d, generator=gen, dtype=dtype, device=device)
        for j in range(warm_start_steps):  # ULA on p_T driven by the estimated score
            v = score(x, T)
            x = x + h * v + math.sqrt(2 * h) * torch.randn(x.shape, generator=gen, dtype=dtype, device=device)
            report(j, T, 0.0, v)
        times = reverse_time_grid(T, K, delta, grid)
        m_k = inner_sample_sizes(times[:K], K * m, schedule)  # Eq. (sample size), or m at every step
        n_k = inner_sample_sizes(times[:K], K * n_chains, schedule)
        for k in range(K):
            eta = times[k] - times[k + 1]
            # Alg. 1: v_k ← ŝ(x, t_k), the score at the current time t_k (= T - kη on the uniform grid)
            v = score(x, times[k], m_k[k], n_k[k])
            noise = torch.randn(x.shape, generator=gen, dtype=dtype, device=device)
            x = exponential_integrator_step(x, v, eta, noise)
            report(warm_start_steps + k, times[k + 1], eta, v)
        if denoise:
            x = tweedie_mean(x, times[-1], score(x, times[-1]))
        log.close({"grad_calls": counted.grad_calls, "logp_calls": counted.logp_calls})
    seconds = time.perf_counter() - t0
    bad = ~torch.isfinite(x).all(-1)
    if bad.any():
        raise InputError(
            f"rdMC produced {int(bad.sum())} non-finite samples; use a larger early-stopping delta, more proposals m, "
            "or a smaller inner_step"
        )
    info = SampleInfo(
        method=f"rdmc-{estimator}",
        n=n,
        grad_calls=counted.grad_calls,
        logp_calls=counted.logp_calls,
        seconds=seconds,
        config=dict(
            T=T,
            K=K,
            estimator=estimator,
            warm_start_steps=warm_start_steps,
            delta=delta,
            denoise=denoise,
            seed=seed,
            m=m,
            n_chains=n_chains,
            schedule=schedule,
            grid=grid,
            **opts,
        ),
        extras={"times": times, "m_per_step": m_k, "n_chains_per_step": n_k},
    )
    return x, info
