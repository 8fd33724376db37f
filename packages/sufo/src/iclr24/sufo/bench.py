"""``sufo bench``: RSA for N = 1000 (target < 1 s per layer), the PC-removal curve vectorised vs naive
reconstruction, feature-extraction throughput at batch 8 and 32, and the CPU seconds of one fine-tuning epoch
(threads pinned)."""

from __future__ import annotations

import numpy as np

from iclr24.paperkit.bench import BenchReport
from iclr24.paperkit.bench import benchmark
from iclr24.paperkit.errors import InputError

from .similarity import rsa
from .sparsity import low_rank_approx
from .sparsity import pc_removal_curve


def run_benchmarks(mode: str) -> BenchReport:
    if mode not in ("smoke", "quick", "full"):
        raise InputError(f"mode must be smoke, quick or full, got {mode!r}")
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

        return [f1_score(labels, predict(low_rank_approx(x, k)), average="macro") for k in ks]

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
    res.append(_finetune_epoch(mode))
    if mode != "smoke":
        from .data import synthetic_reports
        from .features import extract_features
        from .features import load_encoder

        model, tok = load_encoder(num_labels=3)
        texts = synthetic_reports(64, seed=0).texts
        for bs in (8, 32):
            r = benchmark(
                lambda bs=bs: extract_features(model, tok, texts, batch_size=bs, max_length=64),
                repeats=3,
                warmup=1,
                name=f"MiniLM features, 64 docs, batch {bs}",
                clock="cpu",
                threads=1,
            )
            res.append(r)
    notes = [
        "one thread throughout; interleaved repeats, medians; feature extraction and fine-tuning in CPU time "
        "(steadier than the wall clock on a shared machine)",
        "docs/s of feature extraction = 64 / median seconds",
        "fine-tuning: one epoch of the reproduction's recipe (AdamW, weighted sampler, clip 1.0) on 48 reports "
        "plus its validation pass over 8, one thread, CPU time; smoke mode times a tiny random BERT instead",
    ]
    return BenchReport(results=res, notes=notes)


def _finetune_epoch(mode: str):
    """CPU seconds of one fine-tuning epoch (MiniLM; a tiny random BERT in smoke mode), one thread."""
    from .data import split
    from .data import synthetic_reports
    from .features import load_encoder
    from .features import tiny_encoder
    from .finetune import FineTuneConfig
    from .finetune import fine_tune

    ds = synthetic_reports(56, seed=0)
    train, val = split(ds, test_fraction=8 / 56, seed=0)
    if mode == "smoke":
        model, tok = tiny_encoder(num_labels=3, seed=0)
        name = "fine-tune tiny BERT, 1 epoch of 48 reports (batch 8)"
    else:
        model, tok = load_encoder(num_labels=3, seed=0)
        name = "fine-tune MiniLM, 1 epoch of 48 reports (batch 8, 64 tokens)"
    cfg = FineTuneConfig(lr=2e-4, batch_size=8, epochs=1, max_length=64, seed=0)
    return benchmark(
        lambda: fine_tune(model, tok, train, val, cfg),
        repeats=1 if mode == "smoke" else 3,
        warmup=0,
        name=name,
        clock="cpu",
        threads=1,
    )
