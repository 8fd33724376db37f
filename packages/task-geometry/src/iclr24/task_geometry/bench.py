"""Benchmarks behind ``task-geometry bench``: the vectorised PS and CCGP against plain loops, and batched student
training against one student at a time. One thread, interleaved medians, ratios."""

from __future__ import annotations

import numpy as np

from iclr24.paperkit.bench import BenchReport
from iclr24.paperkit.bench import benchmark

from .metrics import balanced_dichotomies
from .metrics import ccgp
from .metrics import ccgp_naive
from .metrics import parallelism_score
from .metrics import parallelism_score_naive
from .students import TrainConfig
from .students import train_student
from .students import train_students
from .tasks import walsh_cube


def _geometry(P: int, n_per: int, N: int = 64, seed: int = 0):
    g = np.random.default_rng(seed)
    cond = np.repeat(np.arange(P), n_per)
    means = g.standard_normal((P, N))
    return means, means[cond] + 0.5 * g.standard_normal((cond.size, N)), cond, balanced_dichotomies(P)[1]


def run_benchmarks(mode: str) -> BenchReport:
    sizes = {"smoke": (4, 8), "quick": (8, 12), "full": (8, 12, 16)}[mode]
    repeats = {"smoke": 2, "quick": 5, "full": 7}[mode]
    results = []
    for P in sizes:
        means, Z, cond, y = _geometry(P, 20)
        results.append(
            benchmark(
                lambda means=means, y=y: parallelism_score(means, y),
                baseline=lambda means=means, y=y: parallelism_score_naive(means, y),
                name=f"PS, P={P}: Gram-matrix vectorised over {int(np.prod(range(1, P // 2 + 1)))} pairings",
                baseline_name="loop over pairings and pairs",
                repeats=repeats if P < 16 else 1,  # the loop takes tens of seconds at P = 16
                warmup=1 if P < 16 else 0,
                threads=1,
                clock="cpu",
            )
        )
        splits = 200 if P > 12 else None
        results.append(
            benchmark(
                lambda Z=Z, cond=cond, y=y, s=splits: ccgp(Z, cond, y, classifier="ridge", max_splits=s),
                baseline=lambda Z=Z, cond=cond, y=y, s=splits: ccgp_naive(
                    Z, cond, y, classifier="ridge", max_splits=s
                ),
                name=f"CCGP, P={P}: all splits from per-condition sufficient statistics",
                baseline_name="refit each split from its trials (same ridge classifier)",
                repeats=repeats,
                warmup=1,
                threads=1,
                clock="cpu",
            )
        )
    n, epochs = {"smoke": (256, 1), "quick": (1000, 2), "full": (5000, 5)}[mode]
    task = walsh_cube(3, 1, 1.0, n_samples=n)
    cfg = TrainConfig(epochs=epochs)
    results.append(
        benchmark(
            lambda: train_students([task] * 6, ["tanh", "relu"] * 3, [0, 0, 1, 1, 2, 2], cfg),
            baseline=lambda: [
                train_student(task, a, cfg, seed=s) for a in ("tanh", "relu") for s in range(3)
            ],
            name=f"train 6 students (tanh/relu x 3 seeds, {n} samples, {epochs} epochs) as one batched ensemble",
            baseline_name="one student at a time",
            repeats=max(2, repeats // 2),
            warmup=1,
            threads=1,
            clock="cpu",
        )
    )
    return BenchReport(
        results=results,
        notes=[
            "torch and numpy pinned to one thread; medians of interleaved repeats; process CPU time "
            "(steadier than the wall clock on a shared machine, equal to it on an idle one)",
            "PS and CCGP give the same numbers as their loops (tests pin this); the ensemble is the same training",
            f"sizes: P in {sizes}, 20 trials per condition, 64 hidden units; CCGP at P = 16 samples 200 splits",
        ],
    )
