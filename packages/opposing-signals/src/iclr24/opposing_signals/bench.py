"""Benchmarks behind ``opposing-signals bench``: ours against the baseline in one run, ratios of medians.

1. Tracking overhead: one full-batch GD step with every example's loss recorded (reusing the step's forward pass)
   against the plain step, N = 1200 digits, MLP 64-128-128-128-10. Target: ratio <= 1.3.
2. Hessian-vector products for sharpness: ``torch.func`` (forward-over-reverse) against double backward
   (``autograd.grad(create_graph=True)``), 20 HVPs = one sharpness estimate.
Threads pinned to 1; interleaved medians of repeats.
"""

from __future__ import annotations

import torch

from iclr24.paperkit.bench import BenchReport, benchmark
from iclr24.paperkit.seeding import torch_threads

from .data import make_opposing_digits
from .hessian import make_hvp, top_eigenvalue
from .tracking import LossTracker, mean_loss, per_example_loss
from .training import make_mlp

__all__ = ["run_benchmarks"]


def _gd_step_fns(n: int):
    d = make_opposing_digits(n_train=n, n_a=min(60, n // 20), n_b=min(30, n // 40))
    x, y = d.x_train, d.y_train
    model = make_mlp()
    opt = torch.optim.SGD(
        model.parameters(), lr=1e-4
    )  # tiny steps: the workload stays the same across repeats
    tracker = LossTracker(model, (x, y))
    state = {"t": 0}

    def plain():
        opt.zero_grad(set_to_none=True)
        loss = mean_loss("mse")(model(x), y)
        loss.backward()
        opt.step()

    def tracked():
        opt.zero_grad(set_to_none=True)
        per = per_example_loss(model(x), y, "mse")
        tracker.record(state["t"], per)
        state["t"] += 1
        per.mean().backward()
        opt.step()

    return tracked, plain, model, x, y, tracker


def run_benchmarks(mode: str = "quick") -> BenchReport:
    n = 300 if mode == "smoke" else 1200
    repeats = {"smoke": 2, "quick": 15, "full": 41}[mode]
    warmup = 1 if mode == "smoke" else 2
    tracked, plain, model, x, y, tracker = _gd_step_fns(n)
    r1 = benchmark(
        tracked,
        baseline=plain,
        repeats=repeats,
        warmup=warmup,
        threads=1,
        name=f"GD step + per-example tracking (N={n})",
        baseline_name="plain GD step",
    )
    loss_fn = mean_loss("mse")
    hvp_f, dim = make_hvp(model, loss_fn, (x, y), method="func")
    hvp_d, _ = make_hvp(model, loss_fn, (x, y), method="double_backward")
    iters = 3 if mode == "smoke" else 20
    reps = {"smoke": 1, "quick": 5, "full": 9}[mode]
    r2 = benchmark(
        lambda: top_eigenvalue(hvp_f, dim, iters=iters),
        baseline=lambda: top_eigenvalue(hvp_d, dim, iters=iters),
        repeats=reps,
        warmup=1,
        threads=1,
        name=f"sharpness, {iters} HVPs, torch.func",
        baseline_name="double backward",
    )
    overhead = r1.median_s / r1.baseline_median_s
    steps = 1501
    notes = [
        f"tracking overhead per GD step: x{overhead:.3f} of the plain step (target <= 1.3)",
        f"one sharpness estimate ({iters} HVPs) costs x{r2.median_s / r1.baseline_median_s:.1f} plain GD steps "
        f"(torch.func); measure it every m steps to trade accuracy for time",
        f"history memory for N={n} x {steps} steps (float32): {4 * n * steps / 2**20:.1f} MiB "
        f"(tracker.nbytes after this bench: {tracker.nbytes()} bytes)",
        "torch threads pinned to 1; medians of interleaved repeats; absolute times depend on the machine",
    ]
    with torch_threads(1):
        a = top_eigenvalue(hvp_f, dim, iters=iters)
    with torch_threads(2):
        b = top_eigenvalue(hvp_f, dim, iters=iters)
    notes.append(f"sharpness at 1 vs 2 threads: {a:.6f} vs {b:.6f} (|diff| {abs(a - b):.2e})")
    return BenchReport(results=[r1, r2], notes=notes)
