"""Samplers at a given oracle budget per sample: the equal-budget settings used by the claims, CLI and benchmarks.

Budget = gradient calls + log-density calls per sample.

- ``rdmc-is``: K outer steps, m = budget // K importance proposals per step on average (K·m log-density calls).
- ``rdmc-ula``: the paper's MCMC variant: ULA chains on q_t started from its Gaussian factor
  N(e^t x, (e^{2t}-1) I), inner_steps = 20 (when it fits) and n_chains = budget // (K·inner_steps).
- ``rdmc-is+ula``: a hybrid (SLIPS-style), not the paper's variant: half the budget to IS (m = budget // (2K)),
  half to ULA chains started from an importance resample (n_chains·inner_steps = budget // (2K)).
- ``ula``: ``budget`` steps of step size 0.05 from N(0, init_std² I).
- ``mala``: budget // 2 - 1 steps of step size 0.1 from N(0, init_std² I) (one gradient and one log-density call
  per step, and one of each at the start).

The rdMC rows spread the inner budget over the outer steps with ``settings.schedule`` (``"paper"``: n_k ∝
1/(1-e^{-2t_k}); ``"constant"``: the same at every step), on ``settings.grid``.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from iclr24.paperkit.errors import InputError

from .langevin import langevin_steps_for_budget
from .langevin import mala
from .langevin import ula
from .sampler import SampleInfo
from .sampler import rdmc_sample
from .targets import Target

__all__ = ["METHOD_NAMES", "BudgetSettings", "budget_settings", "sample_with_budget"]

METHOD_NAMES = ("rdmc-is", "rdmc-ula", "rdmc-is+ula", "ula", "mala")


@dataclass(frozen=True)
class BudgetSettings:
    """Defaults of the equal-budget comparison (calibrated on seed 0 for the 2-D mixture: T = 2, K = 20, ULA
    h = 0.05, MALA h = 0.1, inner ULA τ = 0.05); ``schedule`` and ``grid`` as in :func:`rdmc_sample`; ``init_std``:
    the baselines' initial law N(0, init_std² I); ``delta``: rdMC's early-stopping time (None: run to t = 0)."""

    T: float = 2.0
    K: int = 20
    inner_steps: int = 20
    inner_step: float = 0.05
    ula_step: float = 0.05
    mala_step: float = 0.1
    schedule: str = "paper"
    grid: str = "uniform"
    delta: float | None = None
    init_std: float = 1.0
    lipschitz: float | None = None


def _inner_chains(calls: int, s: BudgetSettings) -> dict:
    """The inner ULA of one outer step within ``calls`` oracle calls per sample: chains of at most
    ``s.inner_steps`` steps, as many as the calls pay for (at least one)."""
    steps = min(s.inner_steps, calls)
    return dict(n_chains=max(1, calls // steps), inner_steps=steps, inner_step=s.inner_step)


def budget_settings(method: str, budget: int, settings: BudgetSettings = BudgetSettings()) -> dict:
    """The keyword arguments of the sampler behind ``method`` for ``budget`` oracle calls per sample."""
    if method not in METHOD_NAMES:
        raise InputError(f"method must be one of {METHOD_NAMES}, got {method!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise InputError(f"budget must be a positive int (oracle calls per sample), got {budget!r}")
    s, k = settings, settings.K
    outer = dict(T=s.T, K=k, schedule=s.schedule, grid=s.grid, delta=s.delta, lipschitz=s.lipschitz)
    if method == "rdmc-is":
        if budget < k:
            raise InputError(
                f"budget {budget} is below K = {k} (one proposal per outer step); raise it or lower K"
            )
        return dict(outer, estimator="is", m=budget // k)
    if method == "rdmc-ula":
        per_step = budget // k
        if per_step < 1:
            raise InputError(f"budget {budget} is below K = {k}; raise it or lower K")
        return dict(outer, estimator="ula", **_inner_chains(per_step, s))
    if method == "rdmc-is+ula":
        half = budget // (2 * k)
        if half < 1:
            raise InputError(f"budget {budget} is below 2K = {2 * k}; raise it or lower K")
        return dict(outer, estimator="is+ula", m=half, **_inner_chains(half, s))
    if method == "ula":
        return dict(steps=langevin_steps_for_budget("ula", budget), step_size=s.ula_step, init_std=s.init_std)
    if budget < 4:
        raise InputError(f"MALA needs a budget of at least 4 calls per sample, got {budget}")
    return dict(steps=langevin_steps_for_budget("mala", budget), step_size=s.mala_step, init_std=s.init_std)


def sample_with_budget(
    target: Target,
    method: str,
    n: int,
    budget: int,
    seed: int = 0,
    settings: BudgetSettings = BudgetSettings(),
    **kwargs,
) -> tuple[Tensor, SampleInfo]:
    """Draw ``n`` samples with ``method`` at ``budget`` oracle calls per sample. Extra ``kwargs`` go to the sampler."""
    kw = {**budget_settings(method, budget, settings), **kwargs}
    if method.startswith("rdmc"):
        return rdmc_sample(target, n, seed=seed, **kw)
    fn = ula if method == "ula" else mala
    return fn(target, n, kw.pop("steps"), kw.pop("step_size"), seed=seed, **kw)
