"""The Langevin baselines the paper compares against, with the same oracle counters as rdMC.

ULA:  x ← x + h ∇ln p*(x) + sqrt(2h) ξ                      (one gradient call per step and sample)
MALA: the ULA proposal accepted with the Metropolis-Hastings ratio (one gradient + one log-density call per step
      and sample, plus one of each at the start).
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import torch
from torch import Tensor

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.tracking import StepLog

from .sampler import SampleInfo
from .sampler import _check_x_init
from .sampler import _positive_int
from .sampler import _resolve_dim
from .sampler import listening
from .targets import CountedTarget
from .targets import Target
from .targets import check_target

__all__ = ["ula", "mala", "langevin_steps_for_budget", "stream_seed"]

_STREAMS = {"ula": 1, "mala": 2}


def stream_seed(seed: int, method: str) -> int:
    """The generator seed of ``method``'s random stream for the user's ``seed``: ULA and MALA with the same ``seed``
    draw independent initial points and noise (so that two baselines are two independent measurements)."""
    import numpy as np

    if method not in _STREAMS:
        raise InputError(f"method must be one of {sorted(_STREAMS)}, got {method!r}")
    check_int(seed, "seed", minimum=0, maximum=2**63 - 1)
    return int(np.random.SeedSequence([seed, _STREAMS[method]]).generate_state(1, np.uint64)[0] >> 1)


def langevin_steps_for_budget(method: str, budget: int) -> int:
    """The number of steps whose oracle cost per sample is at most ``budget`` (ULA: s; MALA: 2(s+1))."""
    check_int(budget, "budget", minimum=1, maximum=10**9)
    if method == "ula":
        return max(1, budget)
    if method == "mala":
        return max(1, budget // 2 - 1)
    raise InputError(f"method must be 'ula' or 'mala', got {method!r}")


def _init(
    method: str,
    target: Target,
    n: int,
    step_size: float,
    steps: int,
    x_init,
    init_std: float,
    seed: int,
    dim: int | None,
    dtype: torch.dtype,
    device,
) -> tuple[Tensor, torch.Generator]:
    check_target(target)
    _positive_int("n", n)
    _positive_int("steps", steps, 1)
    if not (float(step_size) > 0 and math.isfinite(float(step_size))):
        raise InputError(f"step_size must be a finite number > 0, got {step_size}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"seed must be a non-negative int, got {seed!r}")
    d = _resolve_dim(target, dim, None if x_init is None else torch.as_tensor(x_init))
    gen = torch.Generator(device=device).manual_seed(stream_seed(seed, method))
    if x_init is not None:
        return _check_x_init(x_init, n, d, dtype, device), gen
    if not (float(init_std) > 0 and math.isfinite(float(init_std))):
        raise InputError(f"init_std must be a finite number > 0, got {init_std}")
    return float(init_std) * torch.randn(n, d, generator=gen, dtype=dtype, device=device), gen


def _sample_info(
    method: str,
    n: int,
    counted: CountedTarget,
    t0: float,
    steps: int,
    h: float,
    seed: int,
    init_std: float,
    x_init,
    **extras: Any,
) -> SampleInfo:
    """The ``SampleInfo`` of a baseline run: its oracle counts, the seconds since ``t0`` and its config."""
    return SampleInfo(
        method=method,
        n=n,
        grad_calls=counted.grad_calls,
        logp_calls=counted.logp_calls,
        seconds=time.perf_counter() - t0,
        config=dict(steps=steps, step_size=h, seed=seed, init_std=init_std if x_init is None else None),
        extras=extras,
    )


def ula(
    target: Target,
    n: int,
    steps: int,
    step_size: float = 0.05,
    *,
    x_init: Tensor | None = None,
    init_std: float = 1.0,
    seed: int = 0,
    dim: int | None = None,
    dtype: torch.dtype = torch.float64,
    device: str | torch.device = "cpu",
    callbacks: Any = None,
    log_dir: str | os.PathLike | None = None,
) -> tuple[Tensor, SampleInfo]:
    """Unadjusted Langevin: ``steps`` steps of x ← x + h∇ln p*(x) + sqrt(2h)ξ from N(0, init_std² I) (or
    ``x_init``), ``n`` chains in parallel, ``steps`` >= 1. Returns the last iterates ``(n, d)`` and a ``SampleInfo``
    with exactly ``n·steps`` gradient calls. Its random stream is :func:`stream_seed` (``seed``, "ula").
    ``callbacks`` / ``log_dir`` (as in :func:`rdmc_sample`) get ``grad_norm`` (the mean ‖∇ln p*‖ over the chains)
    and the cumulative ``grad_calls`` each step; logging changes no draw."""
    x, gen = _init("ula", target, n, step_size, steps, x_init, init_std, seed, dim, dtype, device)
    counted = CountedTarget(target)
    h = float(step_size)
    log = StepLog(log_dir, callbacks, name="rdmc")
    on = listening(log)
    t0 = time.perf_counter()
    with torch.no_grad(), log:
        for step in range(steps):
            g = counted.grad_log_prob(x)
            x = x + h * g + math.sqrt(2 * h) * torch.randn(x.shape, generator=gen, dtype=dtype, device=device)
            if on:
                log(step, {"grad_norm": float(g.norm(dim=-1).mean()), "grad_calls": counted.grad_calls})
        log.close({"grad_calls": counted.grad_calls})
    return x, _sample_info("ula", n, counted, t0, steps, h, seed, init_std, x_init)


def mala(
    target: Target,
    n: int,
    steps: int,
    step_size: float = 0.1,
    *,
    x_init: Tensor | None = None,
    init_std: float = 1.0,
    seed: int = 0,
    dim: int | None = None,
    dtype: torch.dtype = torch.float64,
    device: str | torch.device = "cpu",
    callbacks: Any = None,
    log_dir: str | os.PathLike | None = None,
) -> tuple[Tensor, SampleInfo]:
    """Metropolis-adjusted Langevin: ULA proposals y = x + h∇ln p*(x) + sqrt(2h)ξ accepted with probability
    min(1, p*(y) N(x; y + h∇ln p*(y), 2h) / (p*(x) N(y; x + h∇ln p*(x), 2h))). ``n·(steps+1)`` gradient and
    log-density calls; ``info.extras["acceptance_rate"]``. Its random stream is :func:`stream_seed` (``seed``,
    "mala"), independent of ULA's for the same ``seed``. ``callbacks`` / ``log_dir`` (as in :func:`rdmc_sample`)
    get the step's ``acceptance`` rate and the cumulative oracle calls each step; logging changes no draw."""
    x, gen = _init("mala", target, n, step_size, steps, x_init, init_std, seed, dim, dtype, device)
    counted = CountedTarget(target)
    h = float(step_size)
    log = StepLog(log_dir, callbacks, name="rdmc")
    on = listening(log)
    t0 = time.perf_counter()
    acc_total = 0.0
    with torch.no_grad(), log:
        lp, g = counted.log_prob(x), counted.grad_log_prob(x)
        for step in range(steps):
            y = x + h * g + math.sqrt(2 * h) * torch.randn(x.shape, generator=gen, dtype=dtype, device=device)
            lpy, gy = counted.log_prob(y), counted.grad_log_prob(y)
            log_alpha = (
                lpy - lp + (((y - x - h * g) ** 2).sum(-1) - ((x - y - h * gy) ** 2).sum(-1)) / (4 * h)
            )
            acc = torch.log(torch.rand(n, generator=gen, dtype=dtype, device=device)) < log_alpha
            rate = float(acc.to(dtype).mean())
            acc_total += rate
            a = acc.unsqueeze(-1)
            x, g, lp = torch.where(a, y, x), torch.where(a, gy, g), torch.where(acc, lpy, lp)
            if on:
                calls = {"grad_calls": counted.grad_calls, "logp_calls": counted.logp_calls}
                log(step, {"acceptance": rate, **calls})
        log.close({"acceptance_rate": acc_total / steps, "grad_calls": counted.grad_calls})
    return x, _sample_info(
        "mala", n, counted, t0, steps, h, seed, init_std, x_init, acceptance_rate=acc_total / steps
    )
