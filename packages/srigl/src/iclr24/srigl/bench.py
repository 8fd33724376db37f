"""Benchmarks behind ``srigl bench``: the condensed layer against dense ``F.linear`` and torch CSR (interleaved
medians, ratios), and the training-step overhead of SRigL over dense training."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from iclr24.paperkit import BenchResult, benchmark
from iclr24.paperkit.bench import BenchReport

from .condensed import CondensedLinear
from .masks import layer_budget, random_constant_fan_in_mask

__all__ = [
    "SpeedGrid",
    "run_benchmarks",
    "time_condensed_layer",
    "training_overhead",
    "speed_table",
    "speedup_figure",
    "default_grid",
    "SMOKE_GRID",
]


@dataclass(frozen=True)
class SpeedGrid:
    """The timing grid: a constant fan-in ``in_features -> out_features`` layer (ViT-B/16 MLP-out shape)."""

    out_features: int = 768
    in_features: int = 3072
    sparsities: tuple[float, ...] = (0.8, 0.9, 0.95, 0.99)
    batches: tuple[int, ...] = (1, 256)
    threads: tuple[int, ...] = (1, 2)
    variants: tuple[str, ...] = (
        "gather",
        "gather_kmajor",
        "compiled_gather",
        "fused_int32",
        "fused_int16",
        "fused_avx2_int32",
        "fused_avx2_int16",
    )
    repeats: int = 100  # per pair at batch 1; batches > 1 use repeats // 10 (at least 5)
    seed: int = 0


@contextlib.contextmanager
def _threads(n: int):
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _variant_fn(name: str, w: torch.Tensor, b: torch.Tensor, mask: torch.Tensor, x: torch.Tensor):
    """A zero-argument callable computing the layer with variant ``name`` (None when unavailable here)."""
    if name in ("gather", "gather_kmajor"):
        layer = CondensedLinear.from_weight(
            w, b, mask, variant=name, index_dtype=torch.int32 if name == "gather_kmajor" else torch.int64
        )
        return lambda: layer(x)
    if name == "compiled_gather":
        torch._dynamo.reset()  # a fresh compile per configuration (stale graphs gave 16 ms outliers)
        layer = CondensedLinear.from_weight(w, b, mask, variant="gather", index_dtype=torch.int32).eval()
        fn = torch.compile(layer, dynamic=False)
        try:
            fn(x)
        except Exception as e:  # noqa: BLE001 - no compiler: report the variant as unavailable
            warnings.warn(f"torch.compile unavailable: {e}", stacklevel=2)
            return None
        return lambda: fn(x)
    if name.startswith("fused"):
        from .kernels import kernel_available

        if not kernel_available():
            return None
        dt = torch.int16 if name.endswith("int16") else torch.int32
        layer = CondensedLinear.from_weight(w, b, mask, variant="fused", index_dtype=dt)
        layer.kernel_mode = "avx2_packed" if "avx2" in name else "plain"
        return lambda: layer(x)
    raise ValueError(f"unknown variant {name!r}")


def time_condensed_layer(grid: SpeedGrid = SpeedGrid(), show_progress: bool = False) -> list[dict]:
    """Time every (sparsity, batch, threads, variant) of ``grid``: each variant against dense ``F.linear`` and
    against CSR ``F.linear`` (each pair interleaved, ``grid.repeats`` runs, medians). float32, inference mode.

    Returns rows ``{sparsity, batch, threads, variant, k, us, dense_us, csr_us, x_dense, x_csr}``."""
    from iclr24.paperkit import progress

    gen = torch.Generator().manual_seed(grid.seed)
    rows = []
    total = len(grid.sparsities) * len(grid.batches) * len(grid.threads)
    bar = progress(total=total, desc="condensed timing", disable=not show_progress)
    for s in grid.sparsities:
        budget = layer_budget(grid.out_features * grid.in_features, 1.0 - s)
        k = budget // grid.out_features
        mask = random_constant_fan_in_mask(grid.out_features, grid.in_features, k, gen)
        w = torch.randn(grid.out_features, grid.in_features, generator=gen) * mask / k**0.5
        b = torch.randn(grid.out_features, generator=gen)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "sparse CSR support is in beta"
            w_csr = w.to_sparse_csr()
        for batch in grid.batches:
            x = torch.randn(batch, grid.in_features, generator=gen)
            # batch 1 is the claim (>= 100 runs); large batches are reported only, with fewer runs
            reps = grid.repeats if batch == 1 else max(5, grid.repeats // 10)
            warm = 10 if batch == 1 else 2
            for t in grid.threads:
                with _threads(t), torch.no_grad():
                    dense = lambda x=x, w=w, b=b: F.linear(x, w, b)
                    csr = lambda x=x, w_csr=w_csr, b=b: F.linear(x, w_csr, b)
                    for v in grid.variants:
                        fn = _variant_fn(v, w, b, mask, x)
                        if fn is None:
                            continue
                        err = float((fn() - dense()).abs().max())
                        rd = benchmark(
                            fn, baseline=dense, repeats=reps, warmup=warm, name=v, baseline_name="dense"
                        )
                        rc = benchmark(
                            fn, baseline=csr, repeats=reps, warmup=warm, name=v, baseline_name="csr"
                        )
                        rows.append(
                            {
                                "sparsity": s,
                                "batch": batch,
                                "threads": t,
                                "variant": v,
                                "k": k,
                                "us": 1e6 * (rd.median_s + rc.median_s) / 2,
                                "dense_us": 1e6 * rd.baseline_median_s,
                                "csr_us": 1e6 * rc.baseline_median_s,
                                "x_dense": rd.speedup,
                                "x_csr": rc.speedup,
                                "max_abs_err": err,
                                "bench": (rd, rc),
                            }
                        )
                bar.update(1)
    bar.close()
    return rows


def speed_table(rows: Sequence[dict]) -> str:
    """Markdown table of :func:`time_condensed_layer` rows."""
    lines = [
        "| sparsity | batch | threads | variant | k | condensed (us) | dense (us) | CSR (us) | x dense | x CSR |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['sparsity']:.2f} | {r['batch']} | {r['threads']} | {r['variant']} | {r['k']} | "
            f"{r['us']:.1f} | {r['dense_us']:.1f} | {r['csr_us']:.1f} | {r['x_dense']:.2f} | "
            f"{r['x_csr']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def speedup_figure(rows: Sequence[dict], batch: int = 1):
    """Speed-up over dense vs sparsity, one line per (variant, threads), at ``batch``; returns the figure."""
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    keys = sorted({(r["variant"], r["threads"]) for r in rows if r["batch"] == batch})
    for v, t in keys:
        pts = sorted(
            (r["sparsity"], r["x_dense"])
            for r in rows
            if r["batch"] == batch and r["variant"] == v and r["threads"] == t
        )
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{v}, {t} thr")
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.axhline(3.4, color="red", lw=0.8, ls="--", label="paper: 3.4x at 90% (4 thr)")
    ax.set_xlabel("sparsity")
    ax.set_ylabel("speed-up over dense F.linear")
    ax.set_yscale("log")
    ax.set_title(f"condensed 3072->768, batch {batch}, float32 CPU")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def training_overhead(steps: int = 200, sparsity: float = 0.9, repeats: int = 5) -> BenchResult:
    """Wall time of ``steps`` SRigL training steps (Delta T = 20, so 10 mask updates in 200 steps) of the digits
    MLP vs the same steps of dense training (ratio < 1 means SRigL is slower)."""
    from torch import nn

    from .data import digits_split
    from .models import mlp
    from .sparsifier import SRigL

    d = digits_split(0)
    xb, yb = d.x_train[:64], d.y_train[:64]

    def make(sparse: bool):
        torch.manual_seed(0)
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        sp = (
            SRigL(model, opt, sparsity, steps * 10, delta_t=20, distribution="uniform", seed=0)
            if sparse
            else None
        )

        def run() -> None:
            for _ in range(steps):
                opt.zero_grad(set_to_none=True)
                nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
                if sp is not None:
                    sp.step()

        return run

    return benchmark(
        make(True),
        baseline=make(False),
        repeats=repeats,
        warmup=1,
        name=f"SRigL train {steps} steps (S={sparsity})",
        baseline_name="dense train",
    )


SMOKE_GRID = SpeedGrid(
    out_features=96,
    in_features=384,
    sparsities=(0.9,),
    batches=(1,),
    threads=(1,),
    variants=("gather",),
    repeats=5,
)


def default_grid(quick: bool) -> SpeedGrid:
    """quick: 90% and 99%, batch 1, no torch.compile; full: the whole grid."""
    if quick:
        return SpeedGrid(
            sparsities=(0.9, 0.99),
            batches=(1,),
            variants=("gather", "gather_kmajor", "fused_int16", "fused_avx2_int32", "fused_avx2_int16"),
        )
    return SpeedGrid()


def run_benchmarks(mode: str = "quick") -> BenchReport:
    """The condensed-layer timing grid (each variant vs dense and vs CSR) and SRigL's training overhead.
    ``mode``: smoke (one tiny layer), quick (90%/99%, batch 1) or full (the whole grid)."""
    if mode not in ("smoke", "quick", "full"):
        raise ValueError(f"mode must be smoke, quick or full, got {mode!r}")
    quick = mode != "full"
    grid = SMOKE_GRID if mode == "smoke" else default_grid(quick)
    rows = time_condensed_layer(grid)
    results: list[BenchResult] = []
    for r in rows:
        for res in r["bench"]:
            results.append(
                BenchResult(
                    name=f"{r['variant']} S={r['sparsity']} B={r['batch']} T={r['threads']}",
                    median_s=res.median_s,
                    times_s=res.times_s,
                    baseline_name=res.baseline_name,
                    baseline_median_s=res.baseline_median_s,
                    baseline_times_s=res.baseline_times_s,
                )
            )
    results.append(training_overhead(steps=100 if quick else 200, repeats=3 if quick else 5))
    err = max(r["max_abs_err"] for r in rows)
    notes = [
        f"condensed {grid.in_features}->{grid.out_features} constant fan-in layer, float32; each variant vs dense "
        "F.linear and vs torch CSR F.linear at the same thread count; interleaved repeats, medians; "
        "speedup = baseline median / ours median",
        f"max |condensed - dense| over the grid: {err:.3e}",
        "last row: SRigL training steps of the digits MLP vs dense training (speedup < 1: SRigL is slower)",
    ]
    return BenchReport(results=results, notes=notes)
