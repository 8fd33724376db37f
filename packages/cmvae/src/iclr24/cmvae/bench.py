"""Benchmarks behind ``cmvae bench``: training-step time against the number of modalities M (every modality is
reconstructed from every sampling modality: about M^2 decoder passes) and against the number of clusters K
(linear, and small), the seconds of the post-hoc cluster selection on its own, and the diffusion refinement's cost
per sample against plain decoding. One thread, interleaved medians, ratios."""

from __future__ import annotations

import torch

from iclr24.paperkit.bench import BenchReport
from iclr24.paperkit.bench import benchmark

from .diffusion import DiffusionRefiner
from .model import build_mlp_model

__all__ = ["run_benchmarks"]


def _step_fn(M: int, C: int, D: int, hidden: int, B: int):
    torch.manual_seed(0)
    model = build_mlp_model([D] * M, hidden=(hidden, hidden), n_clusters_max=C)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, amsgrad=True)
    xs = [torch.rand(B, D) for _ in range(M)]

    def step():
        opt.zero_grad(set_to_none=True)
        model.loss(xs).backward()
        opt.step()

    return step, model, xs


def run_benchmarks(mode: str) -> BenchReport:
    D, hidden, B = 64, {"smoke": 32, "quick": 128, "full": 256}[mode], 128
    repeats = {"smoke": 2, "quick": 5, "full": 9}[mode]
    results = []
    base, _, _ = _step_fn(2, 20, D, hidden, B)
    for M in (3, 5):
        fn, _, _ = _step_fn(M, 20, D, hidden, B)
        results.append(benchmark(fn, baseline=base, name=f"train step, M={M} (expect ~{(M / 2) ** 2:.2f}x M=2)",
                                 baseline_name="train step, M=2", repeats=repeats, warmup=1, threads=1, clock="cpu"))  # fmt: skip
    base, _, _ = _step_fn(3, 5, D, hidden, B)
    for C in (20, 40):
        fn, _, _ = _step_fn(3, C, D, hidden, B)
        results.append(benchmark(fn, baseline=base, name=f"train step, K={C} clusters", baseline_name="K=5 clusters",
                                 repeats=repeats, warmup=1, threads=1, clock="cpu"))  # fmt: skip
    n = {"smoke": 256, "quick": 3000, "full": 6000}[mode]
    _, model, _ = _step_fn(3, 20, D, hidden, n)
    xs = [torch.rand(n, D) for _ in range(3)]
    results.append(benchmark(lambda: model.select_num_clusters(xs), baseline=lambda: model.predict_clusters(xs),
                             name=f"cluster selection K_max=20 -> 2 on {n} tuples",
                             baseline_name="one clustering pass", repeats=max(2, repeats // 2), warmup=1, threads=1,
                             clock="cpu"))  # fmt: skip
    steps = {"smoke": 10, "quick": 200, "full": 200}[mode]
    ref = DiffusionRefiner(D, 3, steps=steps, hidden=hidden)
    cond = torch.rand(100, D)
    results.append(benchmark(lambda: ref.refine(cond, 0), baseline=lambda: model.sample(100, seed=0),
                             name=f"diffusion refinement of 100 samples ({steps} DDPM steps)",
                             baseline_name="CMVAE prior sampling of 100 tuples", repeats=max(2, repeats // 2),
                             warmup=1, threads=1, clock="cpu"))  # fmt: skip
    return BenchReport(
        results=results,
        notes=[
            "torch pinned to one thread; medians of interleaved repeats; process CPU time",
            f"MLP encoders/decoders {D} -> {hidden} -> {hidden}, batch {B}, d = 10, d_w = 4, K = 1 (IWAE looser)",
            "a 'speedup' below 1 is the cost ratio ours/baseline: M=5 vs M=2 ~ (5/2)^2 = 6.25 if decoders dominate",
        ],
    )
