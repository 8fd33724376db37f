"""Benchmarks behind ``tab-snn bench``: forward+backward time per norm type, against TEBN, in one run.

1. the seq-digits spiking MLP (batch 64, T = 8, 8 -> 128 -> 128 -> 10), one train step's forward + backward;
2. one norm layer on a conv activation ``[64, T, 64, 8, 8]`` for T in {4, 8};
3. TAB with cumulative sums against the official loop of T BatchNorms on prefixes (same layer, T = 8).
One thread, process CPU time (steadier than wall time on a shared machine), round-robin interleaved medians.
"""

from __future__ import annotations

import torch

from iclr24.paperkit.bench import BenchReport
from iclr24.paperkit.bench import BenchResult
from iclr24.paperkit.bench import benchmark
from iclr24.paperkit.bench import benchmark_many
from iclr24.paperkit.errors import InputError

from .model import SpikingMLP
from .norms import make_norm
from .norms import tab_normalize_loop

__all__ = ["run_benchmarks"]

BENCH_NORMS = ("tab", "tebn", "tdbn", "bntt", "none")


def _step(module: torch.nn.Module, x: torch.Tensor):
    def f() -> None:
        module.zero_grad(set_to_none=True)
        xi = x.detach().requires_grad_(x.dim() == 5)
        out = module(xi)
        out.square().mean().backward()

    return f


def run_benchmarks(mode: str = "quick") -> BenchReport:
    if mode not in ("smoke", "quick", "full"):
        raise InputError(f"mode must be smoke, quick or full, got {mode!r}")
    repeats = {"smoke": 2, "quick": 7, "full": 15}[mode]
    batch, channels, side = (8, 8, 4) if mode == "smoke" else (64, 64, 8)
    gen = torch.Generator().manual_seed(0)
    results: list[BenchResult] = []
    torch.manual_seed(0)
    x = torch.rand(batch, 8, 8, generator=gen)
    cases = {f"MLP T=8 {n}": _step(SpikingMLP(8, 10, 8, norm=n), x) for n in BENCH_NORMS}
    results += benchmark_many(
        cases, baseline="MLP T=8 tebn", repeats=repeats, warmup=1, clock="cpu", threads=1
    )
    for T in (4, 8):
        xc = torch.randn(batch, T, channels, side, side, generator=gen)
        cases = {
            f"layer [{batch},{T},{channels},{side},{side}] {n}": _step(make_norm(n, channels, T), xc)
            for n in BENCH_NORMS
        }
        results += benchmark_many(
            cases,
            baseline=f"layer [{batch},{T},{channels},{side},{side}] tebn",
            repeats=repeats,
            warmup=1,
            clock="cpu",
            threads=1,
        )
    tab = make_norm("tab", channels, 8)
    xc = torch.randn(batch, 8, channels, side, side, generator=gen)

    def loop() -> None:
        tab.zero_grad(set_to_none=True)
        xi = xc.detach().requires_grad_()
        tab_normalize_loop(xi, tab.weight, tab.bias, tab.p, tab.eps).square().mean().backward()

    results.append(
        benchmark(
            _step(tab, xc),
            baseline=loop,
            repeats=repeats,
            warmup=1,
            name="TAB cumsum T=8",
            baseline_name="TAB official loop T=8",
            clock="cpu",
            threads=1,
        )
    )
    notes = [
        "forward + backward of one step, torch threads = 1, process CPU time, interleaved medians",
        f"{repeats} repeats; speedup = baseline / ours (> 1: ours faster); the target is TAB <= 1.5x TEBN "
        "(speedup >= 0.67) at T = 8",
    ]
    return BenchReport(results=results, notes=notes)
