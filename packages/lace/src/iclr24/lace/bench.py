"""Benchmarks behind ``lace bench``: training step with vs without the constraint terms (L = 25), layouts/s at 100 vs
50 DDIM steps, and beautify's cost on its own. One torch thread, interleaved medians."""

from __future__ import annotations

import torch

from iclr24.paperkit.bench import BenchReport
from iclr24.paperkit.bench import benchmark

from .beautify import beautify
from .diffusion import ddim_sample
from .diffusion import training_loss
from .layout import encode_layout
from .model import LaceConfig
from .model import make_model


def _layouts(n: int, L: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    k = torch.randint(3, L + 1, (n,), generator=g)
    mask = torch.arange(L)[None, :] < k[:, None]
    wh = 0.05 + 0.2 * torch.rand(n, L, 2, generator=g)
    xy = wh / 2 + (1 - wh) * torch.rand(n, L, 2, generator=g)
    labels = torch.randint(0, 4, (n, L), generator=g)
    return torch.cat([xy, wh], -1), labels, mask


def run_benchmarks(mode: str) -> BenchReport:
    sizes = {"smoke": (4, 2, 2, 10), "quick": (32, 5, 3, 100), "full": (64, 7, 3, 1000)}[mode]
    batch, repeats, warmup, beautify_iters = sizes
    L = 25
    net = (
        dict(dim=64, heads=4, layers=3, ff=128) if mode != "smoke" else dict(dim=16, heads=2, layers=1, ff=32)
    )
    lace = LaceConfig(**net, max_elements=L)
    base = LaceConfig(**net, max_elements=L, align_weight=0.0, overlap_weight=0.0)
    torch.manual_seed(0)
    model = make_model(lace)
    tok = encode_layout(*_layouts(batch, L), lace.num_classes, L)

    def step(cfg):
        def f():
            loss, _ = training_loss(model, tok, cfg)
            model.zero_grad(set_to_none=True)
            loss.backward()

        return f

    results = [
        benchmark(
            step(lace),
            baseline=step(base),
            repeats=repeats,
            warmup=warmup,
            name="train step, LACE",
            baseline_name="train step, no constraints",
            threads=1,
        )
    ]
    x_T = torch.randn(batch, L, lace.seq_dim)
    model.eval()
    results.append(
        benchmark(
            lambda: ddim_sample(model, x_T, lace, steps=100),
            baseline=lambda: ddim_sample(model, x_T, lace, 50),
            repeats=repeats,
            warmup=1,
            name=f"DDIM 100 steps, {batch} layouts",
            baseline_name=f"DDIM 50 steps, {batch} layouts",
            threads=1,
        )
    )
    b, _, m = _layouts(batch, L, seed=1)
    results.append(
        benchmark(
            lambda: beautify(b, m, iterations=beautify_iters),
            repeats=max(1, repeats // 2),
            warmup=1,
            name=f"beautify, {beautify_iters} iterations, {batch} layouts",
            threads=1,
        )
    )
    per_layout = results[1].median_s / batch
    return BenchReport(
        results=results,
        notes=[
            f"L = {L} elements, batch {batch} (x4 in training), d = {net['dim']}, {net['layers']} layers, 1 thread",
            "train-step speedup < 1 means the constraint terms cost time: their cost ratio is 1 / speedup",
            f"DDIM 100 steps: {1 / per_layout:.1f} layouts/s; the ratio of 50 to 100 steps is the speedup",
            "beautify: the official post-processing runs 1000 Adam iterations",
        ],
    )
