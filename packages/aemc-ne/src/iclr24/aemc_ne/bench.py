"""Benchmarks behind ``aemc-ne bench``: AEMC-NE's training cost as a ratio to AEMC's (same main net, same data),
against the observation count and the element-wise net's width; memory of column minibatches vs the full batch on
an ML-100K-sized matrix; predict latency for 1e5 (user, item) pairs. Threads pinned to 1, interleaved medians."""

from __future__ import annotations

import numpy as np

from iclr24.paperkit.bench import BenchReport
from iclr24.paperkit.bench import benchmark
from iclr24.paperkit.errors import InputError

from .completion import AEMC
from .completion import AEMCNE
from .data import Ratings
from .data import make_synthetic

SIZES = {  # mode -> (synthetic m, n, epochs per timed call, repeats, ML-100K-shaped rows, cols, ratings)
    "smoke": (20, 60, 2, 1, 60, 90, 1_000),
    "quick": (120, 600, 5, 3, 943, 1682, 100_000),
    "full": (120, 600, 10, 7, 943, 1682, 100_000),
}


def _ml100k_shaped(n_users: int, n_items: int, n: int, seed: int = 0) -> Ratings:
    """A random ratings matrix with ML-100K's shape and count (every user and item rated), values 1..5."""
    rng = np.random.default_rng(seed)
    u = np.concatenate([np.arange(n_users), rng.integers(0, n_users, n - n_users)])
    i = np.concatenate([rng.integers(0, n_items, n_users), rng.integers(0, n_items, n - n_users)])
    key = np.unique(u * n_items + i)
    return Ratings(
        key // n_items, key % n_items, rng.integers(1, 6, len(key)).astype(float), n_users, n_items
    )


def run_benchmarks(mode: str = "quick") -> BenchReport:
    if mode not in SIZES:
        raise InputError(f"mode must be one of {sorted(SIZES)}, got {mode!r}")
    m, n, epochs, repeats, nu, ni, nr = SIZES[mode]
    results = []
    fit = dict(epochs=epochs, eval_every=epochs, val_fraction=0.0, standardize=True, quiet=True)
    hidden = (m // 2, max(m // 6, 2), m // 2)
    for rate in (0.1, 0.5):
        d = make_synthetic(m, n, 6 if m > 20 else 2, "sigmoid5", obs_rate=rate, seed=0)
        results.append(
            benchmark(
                lambda d=d: AEMCNE(main_hidden=hidden).fit(d.train, **fit),
                baseline=lambda d=d: AEMC(main_hidden=hidden).fit(d.train, **fit),
                name=f"AEMC-NE fit, {epochs} epochs, {m}x{n}, obs {rate} ({len(d.train)} entries)",
                baseline_name="AEMC (no g)",
                repeats=repeats,
                warmup=1,
                threads=1,
            )
        )
    d = make_synthetic(m, n, 6 if m > 20 else 2, "sigmoid5", obs_rate=0.5, seed=0)
    for width in (8, 64):
        results.append(
            benchmark(
                lambda w=width: AEMCNE(main_hidden=hidden, elem_hidden=(w, w)).fit(d.train, **fit),
                baseline=lambda: AEMC(main_hidden=hidden).fit(d.train, **fit),
                name=f"AEMC-NE fit, g = 1-{width}-{width}-1, obs 0.5",
                baseline_name="AEMC (no g)",
                repeats=repeats,
                warmup=1,
                threads=1,
            )
        )
    ml = _ml100k_shaped(nu, ni, nr)
    big = dict(epochs=1, eval_every=1, val_fraction=0.0, quiet=True)
    results.append(
        benchmark(
            lambda: AEMCNE(main_hidden=(500,), activation="sigmoid").fit(ml, batch_size=128, **big),
            baseline=lambda: AEMCNE(main_hidden=(500,), activation="sigmoid").fit(ml, **big),
            name=f"AEMC-NE epoch, {nu}x{ni}, columns in minibatches of 128",
            baseline_name="full batch",
            repeats=max(1, repeats // 2),
            warmup=0,
            memory=True,
            threads=1,
        )
    )
    model = AEMCNE(main_hidden=(500,), activation="sigmoid").fit(ml, **big)
    rng = np.random.default_rng(1)
    q = 100_000 if mode != "smoke" else 1_000
    pu, pi = rng.integers(0, nu, q), rng.integers(0, ni, q)
    ae = AEMC(main_hidden=(500,), activation="sigmoid").fit(ml, **big)
    results.append(
        benchmark(
            lambda: model.predict(pu, pi),
            baseline=lambda: ae.predict(pu, pi),
            name=f"AEMC-NE predict {q} (user, item) pairs, {nu}x{ni}",
            baseline_name="AEMC predict",
            repeats=repeats,
            warmup=1,
            threads=1,
        )
    )
    mb = lambda b: 4 * b * (2 * nu + 500) / 2**20  # fp32 input + hidden + output of b item columns
    mem = next(r for r in results if "minibatches" in r.name)
    notes = [
        f"dense activations per step on the {nu}x{ni} matrix (input + hidden + output, fp32): full batch "
        f"{mb(ni):.1f} MiB, minibatch of 128 columns {mb(128):.1f} MiB; measured peak-RSS growth of one epoch: "
        f"minibatch {(mem.peak_mem_bytes or 0) / 2**20:.1f} MiB, full batch "
        f"{(mem.baseline_peak_mem_bytes or 0) / 2**20:.1f} MiB (allocator reuse makes these lower bounds)",
        "speedup = baseline median / ours median: below 1 means AEMC-NE costs more than the baseline",
        "one torch thread, interleaved repeats, medians; fit times include set-up (sparse input, network build)",
        "the ML-100K-shaped matrix is random (same shape and rating count), so the bench needs no data download",
    ]
    return BenchReport(results=results, notes=notes)
