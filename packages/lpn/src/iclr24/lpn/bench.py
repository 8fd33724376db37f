"""Benchmarks behind ``lpn bench``: ours against the naive path in one run, interleaved, ratios of medians.

- denoiser latency per image (8x8 MLP, 28x28 conv, 128x128 patch net): inference without ``create_graph`` vs the
  official forward that always keeps the double-backprop graph;
- a training step (double backprop through f = grad psi) vs a plain l2 step of an unconstrained MLP, and the MLP
  LPN's hand-written gradient pass vs autograd's;
- prior inversion: one batched CG for a batch of images vs the official per-image scipy CG loop;
- PnP-PGD iterations: LPN prox without the graph vs with ``create_graph``.
"""

from __future__ import annotations

import torch

from iclr24.paperkit import BenchReport
from iclr24.paperkit import BenchResult
from iclr24.paperkit import benchmark
from iclr24.paperkit.errors import InputError

from .data import digits_split
from .experiments import UnconstrainedDenoiser
from .icnn import ICNN
from .icnn import MLPLPN
from .icnn import ConvLPN28
from .icnn import PatchLPN128
from .loss import l1_loss
from .loss import l2_loss
from .pnp import inpainting_operator
from .pnp import pnp_pgd
from .prior import invert

__all__ = ["run_benchmarks"]


def _naive(model):
    """The official forward: autograd with create_graph=True always (keeps the graph even at inference)."""
    return lambda y: ICNN.forward(model, y, create_graph=True)


def run_benchmarks(mode: str = "quick") -> BenchReport:
    """Denoiser latency, training steps, prior inversion and PnP-PGD iterations against the naive/official path.
    ``mode``: quick (the README's table) or full (the 256-channel 128x128 net, more repeats); smoke runs the quick
    cases once each (pipeline only, for tests)."""
    if mode not in ("smoke", "quick", "full"):
        raise InputError(f"mode must be smoke, quick or full, got {mode!r}")
    quick = mode != "full"
    reps = {"smoke": 1, "quick": 9, "full": 21}[mode]
    notes = [
        f"interleaved repeats ({reps}; {_inv_reps(quick, reps)} for the inversion), medians; speedup = baseline median / ours median",
        "per-image / per-iteration rows divide each timing by the batch size or the iteration count",
        "threads: torch's default (not pinned)",
    ]
    results = _denoise_cases(quick, reps)
    train_results, lpn, tr, yb = _train_steps(reps)
    results += train_results + _invert_and_pnp(lpn, tr, yb, quick, reps)
    return BenchReport(results=results, notes=notes)


def _inv_reps(quick: bool, reps: int) -> int:
    return 1 if reps == 1 else 3 if quick else 5


def _per(r: BenchResult, n: int) -> BenchResult:
    """The same timings per image (or per iteration): every time divided by ``n``."""
    return BenchResult(
        r.name,
        r.median_s / n,
        [t / n for t in r.times_s],
        r.baseline_name,
        r.baseline_median_s / n,
        [t / n for t in r.baseline_times_s],
    )


def _denoise_cases(quick: bool, reps: int) -> list[BenchResult]:
    torch.manual_seed(0)
    out: list[BenchResult] = []
    cases = [
        (
            "denoise 8x8 (mlp 256x3), per image of 64",
            MLPLPN(in_dim=64, hidden=256, layers=3, alpha=0.01),
            torch.rand(64, 64),
        ),
        ("denoise 28x28 (conv28 h64), per image of 16", ConvLPN28(), torch.rand(16, 1, 28, 28)),
        (
            f"denoise 128x128 (patch128 h{32 if quick else 256}), 1 image",
            PatchLPN128(in_channels=1, hidden=32 if quick else 256),
            torch.rand(1, 1, 128, 128),
        ),
    ]
    for name, model, x in cases:
        model.eval()
        n = len(x)
        r = benchmark(
            lambda m=model, x=x: m(x),
            baseline=lambda m=model, x=x: _naive(m)(x),
            repeats=reps,
            name=name,
            baseline_name="official forward (create_graph=True)",
        )
        out.append(_per(r, n))
    return out


def _train_steps(reps: int) -> tuple[list[BenchResult], MLPLPN, torch.Tensor, torch.Tensor]:
    out: list[BenchResult] = []
    # training step: double backprop (LPN) vs a plain unconstrained MLP step
    tr, _ = digits_split(1500)
    xb = tr[:200]
    yb = xb + 0.1 * torch.randn_like(xb)
    lpn = MLPLPN(in_dim=64, hidden=256, layers=3, alpha=0.01).train()
    mlp = UnconstrainedDenoiser(64, 256, 3).train()
    o1, o2 = torch.optim.Adam(lpn.parameters(), 1e-4), torch.optim.Adam(mlp.parameters(), 1e-4)

    def step_lpn():
        o1.zero_grad()
        l1_loss(lpn(yb), xb).backward()
        o1.step()
        lpn.clamp_weights()

    def step_mlp():
        o2.zero_grad()
        l2_loss(mlp(yb), xb).backward()
        o2.step()

    out.append(
        benchmark(
            step_lpn,
            baseline=step_mlp,
            repeats=reps,
            name="train step, LPN (double backprop), b=200",
            baseline_name="unconstrained MLP step",
        )
    )

    def step_lpn_autograd():
        lpn.analytic_gradient = False
        try:
            step_lpn()
        finally:
            lpn.analytic_gradient = True

    out.append(
        benchmark(
            step_lpn,
            baseline=step_lpn_autograd,
            repeats=reps,
            name="train step, LPN hand-written gradient pass, b=200",
            baseline_name="autograd gradient + double backprop",
        )
    )

    return out, lpn, tr, yb


def _invert_and_pnp(
    lpn: MLPLPN, tr: torch.Tensor, yb: torch.Tensor, quick: bool, reps: int
) -> list[BenchResult]:
    out: list[BenchResult] = []
    # prior inversion: batched CG vs per-image CG (official)
    lpn.eval()
    nb = 8 if quick else 32
    x = lpn(yb[:nb]).detach()
    r = benchmark(
        lambda: invert(lpn, x),
        baseline=lambda: invert(lpn, x, per_sample=True),
        repeats=_inv_reps(quick, reps),
        warmup=1,
        name=f"invert (cvx_cg), per image of {nb}",
        baseline_name="per-image CG loop (official)",
    )
    out.append(_per(r, nb))

    # PnP-PGD iterations
    op = inpainting_operator((64,), 0.4)
    ym = op.A(tr[:64])
    iters = 20
    r = benchmark(
        lambda: pnp_pgd(ym, op.A, op.At, lpn, num_iter=iters),
        baseline=lambda: pnp_pgd(ym, op.A, op.At, _naive(lpn), num_iter=iters),
        repeats=reps,
        name="PnP-PGD iteration (64 digits)",
        baseline_name="with create_graph",
    )
    out.append(_per(r, iters))
    return out
