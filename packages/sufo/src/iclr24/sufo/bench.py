"""``sufo bench``: RSA for N = 1000 (target < 1 s per layer), the PC-removal curve vectorised vs naive
reconstruction, and feature-extraction throughput at batch 8 and 32 (threads pinned)."""

from __future__ import annotations

import numpy as np

from iclr24.paperkit.bench import BenchReport, benchmark

from .similarity import rsa
from .sparsity import low_rank_approx, pc_removal_curve


def run_benchmarks(mode: str) -> BenchReport:
    if mode not in ("smoke", "quick", "full"):
        raise ValueError(f"mode must be smoke, quick or full, got {mode!r}")
    n = {"smoke": 200, "quick": 1000, "full": 1000}[mode]
    d = {"smoke": 32, "quick": 384, "full": 768}[mode]
    reps = 3 if mode == "smoke" else 5
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    res = [benchmark(lambda: rsa(x, y), repeats=reps, warmup=1, name=f"RSA, N={n}, d={d}", threads=1)]
    labels = (x[:, 0] > 0).astype(int)
    w = rng.standard_normal(d)

    def predict(z):
        return (z @ w > 0).astype(int)

    ks = list(range(0, min(d, 64) + 1, 4))

    def naive():
        from sklearn.metrics import f1_score

        mu = x.mean(0)
        return [f1_score(labels, predict(low_rank_approx(x, k) + mu), average="macro") for k in ks]

    res.append(
        benchmark(
            lambda: pc_removal_curve(x, predict, labels, ks),
            baseline=naive,
            repeats=max(2, reps - 2),
            warmup=0,
            name=f"PC-removal curve, {len(ks)} points (one SVD)",
            baseline_name="naive (one SVD per point)",
            threads=1,
        )
    )
    if mode != "smoke":
        from .data import synthetic_reports
        from .features import extract_features, load_encoder

        model, tok = load_encoder(num_labels=3)
        texts = synthetic_reports(64, seed=0).texts
        for bs in (8, 32):
            r = benchmark(
                lambda bs=bs: extract_features(model, tok, texts, batch_size=bs, max_length=64),
                repeats=3,
                warmup=1,
                name=f"MiniLM features, 64 docs, batch {bs}",
                threads=2,
            )
            res.append(r)
    notes = [
        "one thread for RSA and PCA, two for feature extraction; interleaved repeats, medians",
        "docs/s of feature extraction = 64 / median seconds",
    ]
    return BenchReport(results=res, notes=notes)
