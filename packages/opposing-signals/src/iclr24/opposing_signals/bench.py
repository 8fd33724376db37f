"""Benchmarks behind ``opposing-signals bench``: ours against the baseline in one run, ratios of medians.

1. Tracking overhead: one full-batch GD step with every example's loss recorded (reusing the step's forward pass)
   against the plain step, N = 1200 digits, MLP 64-128-128-128-10. Target: ratio <= 1.3.
2. Hessian-vector products for sharpness: ``torch.func`` (forward-over-reverse) against double backward
   (``autograd.grad(create_graph=True)``), 20 HVPs = one sharpness estimate.
3. The README's own-data block at CIFAR size: 5000 synthetic 32x32 RGB images, a small ResNet (no normalisation
   layers, as in Cohen et al.'s EoS networks), a tracker on every image with cross-entropy, a few SGD steps, one
   sharpness measurement, physical batches of 500: its time (once) and the growth of the process's peak resident
   memory (``paperkit.bench.peak_rss_delta``). Memory only, no baseline.
Threads pinned to 1; interleaved medians of repeats.
"""

from __future__ import annotations

import time

import torch
from torch import nn

from iclr24.paperkit import pinned_threads
from iclr24.paperkit.bench import BenchReport
from iclr24.paperkit.bench import BenchResult
from iclr24.paperkit.bench import benchmark
from iclr24.paperkit.bench import peak_rss_delta

from .data import make_opposing_digits
from .groups import find_opposing_groups
from .hessian import make_hvp
from .hessian import top_eigenvalue
from .tracking import LossTracker
from .tracking import mean_loss
from .tracking import per_example_loss
from .train import make_mlp
from .train import train

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


class _Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1)
        self.skip = nn.Identity() if stride == 1 and c_in == c_out else nn.Conv2d(c_in, c_out, 1, stride)

    def forward(self, x):
        return torch.relu(self.skip(x) + self.conv2(torch.relu(self.conv1(x))))


def small_resnet(width: int = 16, n_classes: int = 10, seed: int = 0) -> nn.Module:
    """A small ResNet for 32x32 RGB images: a stem and three residual stages (width, 2 width, 4 width; strides 1,
    2, 2), global average pooling, a linear head; no normalisation layers."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return nn.Sequential(
            nn.Conv2d(3, width, 3, 1, 1),
            nn.ReLU(),
            _Block(width, width, 1),
            _Block(width, 2 * width, 2),
            _Block(2 * width, 4 * width, 2),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(4 * width, n_classes),
        )


def own_data_block(
    x: torch.Tensor,
    y: torch.Tensor,
    model: nn.Module,
    steps: int,
    sharpness_iters: int,
    physical_batch_size: int,
):
    """The README's "Using your own data" block, as written there (SGD with cross-entropy, a tracker on a fixed
    subset, sharpness once on a fixed subset, physical batches), then the groups."""
    tracker = LossTracker(
        model, (x, y), loss="ce", subset=min(5000, len(y)), physical_batch_size=physical_batch_size
    )
    history = train(
        model,
        x,
        y,
        tracker=tracker,  # trains with the tracker's loss ("ce")
        optimizer="sgd",
        lr=0.05,
        batch_size=128,
        steps=steps,
        physical_batch_size=physical_batch_size,
        sharpness_every=10**9,  # once, at step 0
        sharpness_iters=sharpness_iters,
        sharpness_subset=min(5000, len(y)),
    )
    groups = find_opposing_groups(tracker, k=min(20, tracker.n), window=steps, cluster="kmeans")
    return history, groups


def _cifar_size_row(mode: str) -> tuple[BenchResult, list[str]]:
    # full: the configuration measured for the README (about 4.5 CPU minutes); quick: a quarter of the width and
    # three HVPs, so that the row takes about a CPU minute (memory per HVP does not depend on how many run)
    n = 200 if mode == "smoke" else 5000
    iters = {"smoke": 2, "quick": 3, "full": 5}[mode]
    width = {"smoke": 4, "quick": 8, "full": 16}[mode]
    steps, pb = 2, 500
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    model = small_resnet(width=width)
    out: dict = {}

    def block():
        t0 = time.perf_counter()
        out["history"], out["groups"] = own_data_block(x, y, model, steps, iters, pb)
        out["seconds"] = time.perf_counter() - t0

    with pinned_threads(1):
        peak = peak_rss_delta(block)
    if peak is None:  # no /proc (not Linux): time only
        peak_note = "peak RSS not measurable on this platform"
    else:
        peak_note = f"peak RSS growth {peak / 2**30:.2f} GiB (limit 4 GiB)"
    hist = out["history"]
    n_params = sum(p.numel() for p in model.parameters())
    name = (
        f"own-data block, CIFAR size: {n} x 3x32x32, small ResNet (width {width}, {n_params / 1e3:.0f}k params), "
        f"SGD {steps} "
        f"steps + CE tracking of {n} + 1 sharpness ({iters} Lanczos HVPs), physical batch {pb}"
    )
    res = BenchResult(name=name, median_s=out["seconds"], times_s=[out["seconds"]], peak_mem_bytes=peak)
    notes = [
        f"own-data block at CIFAR size: {peak_note}; sharpness {hist.sharpness[0]:.4g} at step 0; the data itself "
        f"is {x.numel() * 4 / 2**20:.0f} MiB (made before the measurement); one timed run, not a median",
    ]
    return res, notes


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
    with pinned_threads(1):
        a = top_eigenvalue(hvp_f, dim, iters=iters)
    with pinned_threads(2):
        b = top_eigenvalue(hvp_f, dim, iters=iters)
    notes.append(f"sharpness at 1 vs 2 threads: {a:.6f} vs {b:.6f} (|diff| {abs(a - b):.2e})")
    r3, notes3 = _cifar_size_row(mode)
    return BenchReport(results=[r1, r2, r3], notes=notes + notes3)
