"""Benchmarks behind ``sfda2 bench``: the cost of SF(DA)^2's regularisers over AaD, and of the implicit feature
augmentation against an explicit one that materialises ``M`` augmented copies of every feature.

One training iteration of the adaptation head (bank update, K-NN lookup, loss, backward into a linear feature
layer) on a bank of ``N`` target samples, for bottleneck ``A`` in {64, 256} and ``C`` in {10, 65} classes.
The explicit variant draws ``M`` features ``z + eps``, ``eps ~ N(0, lambda_t Sigma_y)`` (the class-conditional
Gaussian IFA integrates over in closed form) and averages the same cross-entropies over them.
"""

from __future__ import annotations

import torch

from iclr24.paperkit.bench import BenchReport
from iclr24.paperkit.bench import BenchResult
from iclr24.paperkit.bench import benchmark_many
from iclr24.paperkit.bench import peak_rss_delta
from iclr24.paperkit.errors import InputError

from .banks import SFDA2Loss

_QUICK = {
    "grid": [(64, 10), (256, 10), (64, 65), (256, 65)],
    "M": (16, 64),
    "repeats": 5,
    "batch": 64,
    "bank": 2000,
}
SETTINGS = {
    "smoke": {"grid": [(64, 10)], "M": (16,), "repeats": 2, "batch": 32, "bank": 256},
    "quick": _QUICK,
    "full": {**_QUICK, "repeats": 11, "bank": 5000},  # the quick grid, more repeats and a larger bank
}


def explicit_augmentation_loss(
    z: torch.Tensor, w: torch.Tensor, b: torch.Tensor, cov: torch.Tensor, lam: float, M: int, generator=None
) -> torch.Tensor:
    """``mean_n mean_m sum_i 2 CE(w (z_n + eps_nm) + b, i)`` with ``eps_nm ~ N(0, lam Sigma_{y_n})``: the Monte-Carlo
    counterpart of IFA (whose closed form upper-bounds it), with ``M`` copies per sample materialised."""
    logits = z @ w.T + b
    pseudo = logits.argmax(1).detach()
    A = z.shape[1]
    # a batch covariance has rank <= n_c < A: a jitter of 1e-3 of its mean variance makes it factorisable
    S = lam * cov.detach()
    jitter = 1e-3 * torch.diagonal(S, dim1=1, dim2=2).mean(1).clamp_min(1e-6)
    chol, info = torch.linalg.cholesky_ex(
        S + jitter[:, None, None] * torch.eye(A, dtype=z.dtype)
    )  # [C, A, A]
    if bool((info != 0).any()):  # fall back to the diagonal for a class that still fails
        diag = torch.diag_embed(torch.diagonal(S, dim1=1, dim2=2).clamp_min(0).sqrt())
        chol = torch.where((info != 0)[:, None, None], diag, chol)
    eps = torch.randn(z.shape[0], M, A, generator=generator, dtype=z.dtype)
    eps = torch.einsum("nab,nmb->nma", chol[pseudo], eps)
    aug = (z.unsqueeze(1) + eps) @ w.T + b  # [B, M, C]
    ce = torch.logsumexp(aug, dim=2, keepdim=True) - aug  # CE for every target class i: [B, M, C]
    return 2.0 * ce.sum(dim=2).mean()


def _case(A: int, C: int, B: int, N: int, variant: str, M: int = 0, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    feat = torch.nn.Linear(128, A)
    cls = torch.nn.Linear(A, C)
    x_all = torch.randn(N, 128, generator=g)
    with torch.no_grad():
        z_all = feat(x_all)
        logits_all = cls(z_all)
    crit = SFDA2Loss(C, A, alpha_2=1.0, use_ifa=variant == "full", use_fd=variant in ("full", "explicit"))
    crit.init_banks(z_all, logits_all)
    state = {"it": 0}

    def step():
        idx = torch.randint(0, N, (B,), generator=g)
        z = feat(x_all[idx])
        logits = cls(z)
        t = crit(z, logits, idx, state["it"] % 99, 100, cls.weight)
        loss = t["total"]
        if variant == "explicit":
            loss = loss + 1e-4 * explicit_augmentation_loss(z, cls.weight, cls.bias, crit.cov, 2.5, M, g)
        feat.zero_grad()
        cls.zero_grad()
        loss.backward()
        state["it"] += 1

    return step


def run_benchmarks(mode: str = "quick") -> BenchReport:
    if mode not in SETTINGS:
        raise InputError(f"mode must be one of {list(SETTINGS)}, got {mode!r}")
    s = SETTINGS[mode]
    results: list[BenchResult] = []
    notes = [
        f"one adaptation-head iteration (bank of {s['bank']}, batch {s['batch']}, K=5, forward + backward into a "
        f"linear feature layer), torch threads pinned to 1, medians of {s['repeats']} interleaved repeats "
        "(CPU time); absolute times from a shared machine, ratios are what to read",
    ]
    for A, C in s["grid"]:
        cases = {
            f"AaD A={A} C={C}": _case(A, C, s["batch"], s["bank"], "aad"),
            f"SF(DA)^2 A={A} C={C}": _case(A, C, s["batch"], s["bank"], "full"),
        }
        for M in s["M"]:
            cases[f"explicit M={M} A={A} C={C}"] = _case(A, C, s["batch"], s["bank"], "explicit", M)
        rs = benchmark_many(
            cases, baseline=f"AaD A={A} C={C}", repeats=s["repeats"], warmup=1, clock="cpu", threads=1
        )
        results += rs
        med = {r.name: r.median_s for r in rs}
        full = med[f"SF(DA)^2 A={A} C={C}"]
        mem = {}
        for name, fn in cases.items():
            mem[name] = peak_rss_delta(fn)
        ratios = ", ".join(
            f"explicit M={M}/implicit {med[f'explicit M={M} A={A} C={C}'] / full:.2f}x" for M in s["M"]
        )
        mems = ", ".join(f"{k.split(' A=')[0]} {v / 2**20:.1f} MiB" for k, v in mem.items() if v is not None)
        notes.append(
            f"A={A}, C={C}: SF(DA)^2/AaD time {full / med[f'AaD A={A} C={C}']:.2f}x; {ratios}; "
            f"peak RSS growth per iteration: {mems or 'n/a'}"
        )
    return BenchReport(results=results, notes=notes)
