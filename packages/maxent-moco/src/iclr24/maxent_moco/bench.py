"""Benchmarks behind the ``bench`` subcommand: ours against the baseline in one run, ratios of medians.

* MoCo solve time, |S| in {36, 100, 400} x d in {1, 2, 3, 5}: :func:`correct` (SVD + batched Newton) against
  :func:`correct_bfgs` (one joint BFGS on the mean dual, the reference approach), on policy-evaluation rows of a
  Garnet model (LocallySmoothed, lambda = 1) with the basis made of the first d VI iterates (increasingly collinear,
  as MoCoVI's past values are). The constraint violation each reaches is printed with the case.
* One CliffWalk control correction (144 rows, d = 3), the target being < 0.5 s.
* MoCoDyna's samples per second against Dyna's (same stream, the paper's intervals).
* OS-Dyna on the official schedule (re-solved after every sample): 3 seeds vectorised in lock-step against 3 runs.
"""

from __future__ import annotations

import numpy as np

from iclr24.paperkit.bench import BenchReport
from iclr24.paperkit.bench import BenchResult
from iclr24.paperkit.bench import benchmark
from iclr24.paperkit.errors import InputError

from .envs import cliffwalk
from .envs import garnet
from .envs import locally_smoothed
from .moco import correct
from .moco import correct_bfgs
from .planning import policy_kernel
from .sample import Dyna
from .sample import MoCoDyna
from .sample import OSDyna

__all__ = ["run_benchmarks"]


def _instance(S: int, d: int, seed: int = 0):
    mdp = garnet(seed=seed, n_states=S, n_actions=2, branching=min(12, S), n_rewards=min(12, S))
    pi = np.zeros(S, dtype=np.int64)
    Ppi, rpi = policy_kernel(mdp.P, mdp.R, pi)
    Phat, _ = policy_kernel(locally_smoothed(mdp.P, 1.0), mdp.R, pi)
    V, cols = np.zeros(S), []
    for _ in range(d):  # the first d VI iterates, as MoCoVI's basis of past values
        V = rpi + mdp.gamma * Ppi @ V
        cols.append(V)
    Phi = np.stack(cols, axis=1)
    return Phat, Phi, Ppi @ Phi


def _violation(P_bar, Phi, Psi) -> float:
    scale = np.maximum(Phi.max(axis=0) - Phi.min(axis=0), 1e-300)
    return float((np.abs(P_bar @ Phi - Psi) / scale).max())


def _solver_cases(mode: str) -> tuple[list[BenchResult], list[str]]:
    """MoCo solve time: batched Newton against the joint BFGS (Newton alone at |S| = 400)."""
    results: list[BenchResult] = []
    notes: list[str] = []
    # The joint BFGS takes seconds to minutes per call beyond |S| = 36 (tens of minutes at |S| = 400), so quick mode
    # keeps to |S| = 36, and full mode times Newton alone at |S| = 400 (the README gives one-off BFGS timings there).
    cases = [(36, d) for d in ((1,) if mode == "smoke" else (1, 2, 3, 5))]
    if mode == "full":
        cases += [(S, d) for S in (100, 400) for d in (1, 2, 3, 5)]
    repeats = 1 if mode == "smoke" else 3
    for S, d in cases:
        Phat, Phi, Psi = _instance(S, d)
        args = (Phat, Phi, Psi)
        e_new = _violation(correct(*args).P_bar, Phi, Psi)
        if S >= 400:
            r = benchmark(
                lambda a=args: correct(*a),
                repeats=repeats,
                warmup=0,
                name=f"MoCo |S|={S} d={d} newton (viol {e_new:.1e})",
            )
            results.append(r)
            notes.append(f"|S|={S} d={d}: max relative violation newton {e_new:.2e} (BFGS not timed)")
            continue
        e_ref = _violation(correct_bfgs(*args).P_bar, Phi, Psi)
        r = benchmark(
            lambda a=args: correct(*a),
            baseline=lambda a=args: correct_bfgs(*a),
            repeats=repeats,
            warmup=0,
            name=f"MoCo |S|={S} d={d} newton (viol {e_new:.1e})",
            baseline_name=f"joint BFGS (viol {e_ref:.1e})",
        )
        results.append(r)
        notes.append(f"|S|={S} d={d}: max relative violation newton {e_new:.2e}, BFGS {e_ref:.2e}")
    return results, notes


def _cliffwalk_cases(mode: str) -> tuple[list[BenchResult], list[str]]:
    """One CliffWalk control correction (144 rows, d = 3) and MoCoDyna's samples per second against Dyna's."""
    mdp = cliffwalk()
    P_hat = locally_smoothed(mdp.P, 1.0)
    rng = np.random.default_rng(0)
    Phi = rng.normal(size=(36, 3)) * 50
    Psi = mdp.P @ Phi
    smoke = mode == "smoke"
    results = [
        benchmark(
            lambda: correct(P_hat, Phi, Psi),
            repeats=1 if smoke else 5,
            warmup=0 if smoke else 1,
            name="MoCo CliffWalk control, 144 rows, d=3",
        )
    ]
    n = {"smoke": 4000, "quick": 30_000, "full": 150_000}[mode]
    kw = dict(alpha=1.0, planning_interval=2000, eval_every=n)
    r = benchmark(
        lambda: MoCoDyna(2, val_queue_interval=6000, **kw).run(mdp, n, seed=0),
        baseline=lambda: Dyna(**kw).run(mdp, n, seed=0),
        repeats={"smoke": 1, "quick": 3, "full": 5}[mode],
        warmup=0,
        name=f"MoCoDyna(d=2) {n} samples",
        baseline_name="Dyna",
    )
    results.append(r)
    notes = [
        f"MoCoDyna(d=2): {n / r.median_s:,.0f} samples/s; Dyna: {n / r.baseline_median_s:,.0f} "
        "samples/s (CliffWalk control, planning every 2000 samples)"
    ]
    # OS-Dyna re-solves after every sample (the official schedule): 3 seeds in one vectorised lock-step batch
    # against the same 3 seeds one after the other
    m = {"smoke": 500, "quick": 5000, "full": 20_000}[mode]
    os_kw = dict(alpha=1.0, eval_every=m)
    r2 = benchmark(
        lambda: OSDyna(**os_kw).run_many(mdp, m, [0, 1, 2]),
        baseline=lambda: [OSDyna(**os_kw).run(mdp, m, seed=s) for s in (0, 1, 2)],
        repeats=1 if smoke else 3,
        warmup=0,
        name=f"OS-Dyna (official) 3 seeds x {m} samples, run_many",
        baseline_name="3 separate runs",
    )
    results.append(r2)
    notes.append(
        f"OS-Dyna (re-solved after every sample): {3 * m / r2.median_s:,.0f} samples/s over 3 seeds in "
        f"lock-step, {3 * m / r2.baseline_median_s:,.0f} samples/s one seed at a time"
    )
    return results, notes


def run_benchmarks(mode: str = "quick") -> BenchReport:
    """The MoCo solver (Newton vs joint BFGS), one CliffWalk correction and MoCoDyna's throughput. ``mode``: smoke
    (one tiny case each, pipeline only), quick or full."""
    if mode not in ("smoke", "quick", "full"):
        raise InputError(f"mode must be smoke, quick or full, got {mode!r}")
    solver, solver_notes = _solver_cases(mode)
    cliff, cliff_notes = _cliffwalk_cases(mode)
    notes = [
        "BLAS threads as the environment sets them (run with OMP_NUM_THREADS=1 for one core); interleaved "
        "repeats, medians; speedup = baseline median / ours median",
        *solver_notes,
        *cliff_notes,
    ]
    return BenchReport(results=solver + cliff, notes=notes)
