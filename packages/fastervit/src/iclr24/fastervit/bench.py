"""Benchmarks behind ``fastervit bench``: what the paper's Pareto plot (Fig. 1: ImageNet top-1 against images/s)
measures, at CPU scale. Images/s at batch 1 and 16, parameters and MACs of FasterViT-0/1 against the timm models of
the same size the paper compares with (ConvNeXt-T, Swin-T) and EfficientViT-B2, random weights, all timed
round-robin in one run with pinned threads; FasterViT-0 against its no-HAT ablation; and, when the authors' package
is importable (``uv run --with fastervit==1.0.0 fastervit bench``), ours against theirs with identical weights.
``--full`` adds FasterViT-2, DeiT-S, ResNet-50 and the HAT-vs-global-attention layer scaling.

The paper's throughput numbers are A100 GPU, batch 128, AMP; a CPU run says nothing about them. Nothing is gated.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from iclr24.paperkit import BenchReport
from iclr24.paperkit import BenchResult
from iclr24.paperkit import atomic_write_json
from iclr24.paperkit import atomic_write_text
from iclr24.paperkit import benchmark
from iclr24.paperkit import benchmark_many
from iclr24.paperkit import ensure_out_dir
from iclr24.paperkit import pinned_threads
from iclr24.paperkit.errors import InputError

__all__ = [
    "count_macs",
    "run_benchmarks",
    "measure",
    "SETTINGS",
    "throughput_table",
    "OURS",
    "BASELINES",
    "official_parity",
    "THREADS",
]

THREADS = 1  # pinned for every timed call: steadier on a shared machine, and the same for every model
OURS = ("faster_vit_0_224", "faster_vit_1_224")
# timm peers of the same size: the paper's ConvNeXt-T and Swin-T, and EfficientViT-B2 (MIT, 24 M params)
BASELINES = ("convnext_tiny", "swin_tiny_patch4_window7_224", "efficientvit_b2")
FULL_EXTRA = ("faster_vit_2_224", "deit_small_patch16_224", "resnet50")
REFERENCE = "convnext_tiny"
# ImageNet-1K top-1 and A100 images/s as the paper reports them (Table 1; "-" where the paper has no number)
PAPER_TOP1 = {
    "faster_vit_0_224": 82.1,
    "faster_vit_1_224": 83.2,
    "faster_vit_2_224": 84.2,
    "convnext_tiny": 82.0,
    "swin_tiny_patch4_window7_224": 81.3,
}
PAPER_A100_IMG_S = {
    "faster_vit_0_224": 5802,
    "faster_vit_1_224": 4188,
    "faster_vit_2_224": 3161,
    "convnext_tiny": 3196,
    "swin_tiny_patch4_window7_224": 2758,
}


def count_macs(model, img_size: tuple[int, int]) -> int:
    """Multiply-accumulates of one inference forward pass at batch 1 (torch's FLOP counter / 2), counted after a
    warm-up pass so that cached position biases are not counted (as in deploy mode)."""
    from torch.utils.flop_counter import FlopCounterMode

    x = torch.zeros(1, getattr(model, "in_chans", 3), *img_size)
    model.eval()
    with torch.no_grad():
        model(x)
    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        model(x)
    return fc.get_total_flops() // 2


def _build(name: str, img_size: int, **kwargs) -> torch.nn.Module:
    import timm

    from . import registry

    if (
        name in registry.VARIANTS
    ):  # built from our own module even if the official package re-registered the name
        return registry._build(name, resolution=img_size, **kwargs).eval()
    kw = {"img_size": img_size} if ("swin" in name or "deit" in name) else {}
    return timm.create_model(name, pretrained=False, **kw).eval()


def _forward(model: torch.nn.Module, x: torch.Tensor):
    def f():
        with torch.inference_mode():
            model(x)

    return f


def official_parity(
    batch_sizes: Sequence[int] = (1, 16), repeats: int = 3, img_size: int = 224
) -> dict | None:
    """Ours vs the authors' ``fastervit`` package (None when it is not importable): max |logit difference| with the
    official weights copied into ours, and interleaved timings at each batch size (threads pinned)."""
    try:
        from fastervit.models import faster_vit as official  # the authors' package, never our dependency
    except Exception:  # noqa: BLE001 - absent, or broken by the installed timm
        return None
    torch.manual_seed(0)
    theirs = official.faster_vit_0_224(resolution=img_size).eval()
    ours = _build("faster_vit_0_224", img_size)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    out: dict = {"model": "faster_vit_0_224", "timings": [], "results": []}
    x = torch.randn(2, 3, img_size, img_size)
    with torch.inference_mode():
        out["max_abs_logit_diff"] = float((ours(x) - theirs(x)).abs().max())
    for b in batch_sizes:
        xb = torch.randn(b, 3, img_size, img_size)
        r = benchmark(
            _forward(ours, xb),
            baseline=_forward(theirs, xb),
            repeats=repeats,
            warmup=1,
            name=f"ours faster_vit_0_224 bs{b}",
            baseline_name=f"official fastervit 1.0.0 bs{b}",
            clock="cpu",
            threads=THREADS,
        )
        out["results"].append(r)
        out["timings"].append(
            {"batch": b, "ours_s": r.median_s, "official_s": r.baseline_median_s, "speedup": r.speedup}
        )
    return out


def throughput_table(rows: list[dict]) -> str:
    """One Markdown row per model: params, MACs, images/s at each batch and the ratio to ConvNeXt-T, the paper's
    top-1 and A100 images/s."""
    batches = sorted({r["batch"] for r in rows})
    models = list(dict.fromkeys(r["model"] for r in rows))
    head = ["model", "params (M)", "GMACs"]
    for b in batches:
        head += [f"img/s bs{b}", f"bs{b} vs {REFERENCE}"]
    head += ["paper top-1", "paper A100 img/s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in models:
        sub = {r["batch"]: r for r in rows if r["model"] == m}
        first = next(iter(sub.values()))
        cells = [m, f"{first['params'] / 1e6:.1f}", f"{first['macs'] / 1e9:.2f}"]
        for b in batches:
            r = sub.get(b)
            rel = r.get(f"vs_{REFERENCE}") if r else None
            cells += [f"{r['img_per_s']:.2f}" if r else "-", f"x{rel:.2f}" if rel else "-"]
        cells += [str(PAPER_TOP1.get(m, "-")), str(PAPER_A100_IMG_S.get(m, "-"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _short(name: str) -> str:
    return name.replace("_patch4_window7_224", "").replace("_patch16_224", "").replace("_224", "")


def _plot(rows: list[dict], path: Path) -> None:
    """images/s against GMACs at each batch size (the CPU counterpart of the paper's Pareto plot's x-axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr24.paperkit import save_figure

    batches = sorted({r["batch"] for r in rows})
    fig, axes = plt.subplots(1, len(batches), figsize=(4.4 * len(batches), 3.4), squeeze=False)
    for ax, b in zip(axes[0], batches):
        for r in (q for q in rows if q["batch"] == b):
            ours = r["model"].startswith("faster_vit")
            ax.scatter(r["macs"] / 1e9, r["img_per_s"], color="tab:green" if ours else "tab:gray", zorder=3)
            ax.annotate(
                _short(r["model"]),
                (r["macs"] / 1e9, r["img_per_s"]),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
        ax.set_title(f"batch {b}, 224x224, CPU, {THREADS} thread(s)", fontsize=9)
        ax.set_xlabel("GMACs per image")
        ax.set_ylabel("images / s (CPU time)")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path)


SETTINGS = {  # mode -> batch sizes, models, image side, (timed rounds, warm-up rounds), ablation batches, scaling
    "smoke": dict(
        batch_sizes=(1,),
        models=("faster_vit_0_224", "convnext_tiny"),
        img_size=64,
        rounds=(2, 1),
        ablation=(1,),
        scaling=False,
    ),
    "quick": dict(
        batch_sizes=(1, 16),
        models=OURS + BASELINES,
        img_size=224,
        rounds=(2, 1),
        ablation=(1,),
        scaling=False,
    ),
    "full": dict(
        batch_sizes=(1, 16),
        models=OURS + FULL_EXTRA + BASELINES,
        img_size=224,
        rounds=(5, 1),
        ablation=(1, 16),
        scaling=True,
    ),
}


def _throughput_rows(built: dict, batch_sizes: Sequence[int], img_size: int, repeats: int, warmup: int):
    """Round-robin throughput (``paperkit.benchmark_many``, threads pinned, CPU clock) of every built model at each
    batch size, against ConvNeXt-T when it is among them; params, MACs and the ratio to it."""

    names = list(built)
    ref = REFERENCE if REFERENCE in built else names[0]
    rows: list[dict] = []
    results: list[BenchResult] = []
    macs = {}
    with pinned_threads(THREADS):
        for n in names:
            macs[n] = count_macs(built[n], (img_size, img_size))
    for b in batch_sizes:
        x = torch.randn(b, 3, img_size, img_size)
        res = benchmark_many(
            {n: _forward(built[n], x) for n in names},
            baseline=ref,
            repeats=repeats,
            warmup=warmup,
            clock="cpu",
            threads=THREADS,
        )
        for n, r in zip(names, res):
            results.append(
                BenchResult(
                    name=f"{n} bs{b}, round-robin",
                    median_s=r.median_s,
                    times_s=list(r.times_s),
                    baseline_name=f"{ref} bs{b}, round-robin" if n != ref else None,
                    baseline_median_s=r.baseline_median_s if n != ref else None,
                    baseline_times_s=list(r.baseline_times_s or []) if n != ref else None,
                )
            )
            rows.append(
                {
                    "model": n,
                    "batch": b,
                    "median_s": r.median_s,
                    "times_s": list(r.times_s),
                    "img_per_s": b / r.median_s,
                    "params": sum(p.numel() for p in built[n].parameters()),
                    "macs": macs[n],
                    f"vs_{REFERENCE}": (r.baseline_median_s / r.median_s) if ref == REFERENCE else None,
                }
            )
    return rows, results


def _ablation(model: torch.nn.Module, batch_sizes: Sequence[int], img_size: int, repeats: int):
    """The carrier-token cost: FasterViT-0 against itself without HAT (plain window attention in stage 3)."""
    ablation = _build("faster_vit_0_224", img_size, hat=(False, False, False, False))
    results = []
    for b in batch_sizes:
        x = torch.randn(b, 3, img_size, img_size)
        results.append(
            benchmark(
                _forward(model, x),
                baseline=_forward(ablation, x),
                repeats=repeats + 1,
                warmup=1,
                name=f"faster_vit_0_224 bs{b}",
                baseline_name=f"no-HAT ablation bs{b}",
                clock="cpu",
                threads=THREADS,
            )
        )
    return results


def _scaling() -> tuple[list[BenchResult], list[dict]]:
    """One HAT layer against one global-attention layer (k = 7) at maps 14/28/56: reported, never asserted."""
    from .experiments import ScalingConfig
    from .experiments import time_layers

    with pinned_threads(THREADS):
        rows = time_layers(ScalingConfig(repeats=5))
    results = [
        BenchResult(
            name=f"HAT layer {r['size']}x{r['size']}",
            median_s=r["hat_s"],
            times_s=[r["hat_s"]],
            baseline_name=f"global-attention layer {r['size']}x{r['size']}",
            baseline_median_s=r["global_s"],
            baseline_times_s=[r["global_s"]],
        )
        for r in rows
    ]
    return results, rows


def measure(
    batch_sizes: Sequence[int] = (1, 16),
    models: Sequence[str] | None = None,
    img_size: int = 224,
    repeats: int = 2,
    warmup: int = 1,
    out: str | Path | None = None,
    ablation: Sequence[int] | None = None,
    official: bool = True,
) -> tuple[list[BenchResult], list[dict], dict | None]:
    """Time the models round-robin at each batch size; FasterViT-0 vs its no-HAT ablation (at ``ablation``
    batches, default ``batch_sizes``) and, if importable and ``official``, vs the authors' package. Returns (bench
    results, throughput rows, official parity); with ``out``, also writes ``bench_rows.json``, ``throughput.md``
    and ``throughput.png`` there."""
    names = list(models) if models else list(OURS + BASELINES)
    built = {n: _build(n, img_size) for n in names}
    rows, results = _throughput_rows(built, batch_sizes, img_size, repeats, warmup)
    if "faster_vit_0_224" in built:
        results += _ablation(built["faster_vit_0_224"], ablation or batch_sizes, img_size, repeats)
    parity = official_parity(batch_sizes, repeats=repeats + 1) if official and img_size == 224 else None
    if parity is not None:
        results.extend(parity.pop("results"))
    if out is not None:
        out = ensure_out_dir(out)
        atomic_write_json(
            out / "bench_rows.json",
            {
                "rows": rows,
                "pairs": [r.to_dict() for r in results],
                "official_parity": parity,
                "threads": THREADS,
                "img_size": img_size,
            },
        )
        atomic_write_text(out / "throughput.md", throughput_table(rows))
        try:
            _plot(rows, out / "throughput.png")
        except ImportError:  # pragma: no cover
            pass
    return results, rows, parity


def run_benchmarks(mode: str = "quick", out: str | Path | None = None) -> BenchReport:
    """``fastervit bench``: round-robin CPU throughput of FasterViT-0/1 and the timm peers (smoke: FasterViT-0 and
    ConvNeXt-T at 64x64, batch 1), FasterViT-0 vs its no-HAT ablation, ours vs the official package when
    importable, and (full) the layer scaling. With ``out``: throughput.md, throughput.png, bench_rows.json."""
    if mode not in SETTINGS:
        raise InputError(f"mode must be smoke, quick or full, got {mode!r}")
    st = SETTINGS[mode]
    repeats, warmup = st["rounds"]
    results, rows, parity = measure(
        st["batch_sizes"],
        st["models"],
        st["img_size"],
        repeats=repeats,
        warmup=warmup,
        out=out,
        ablation=st["ablation"],
        official=mode != "smoke",
    )
    notes = [
        f"{st['img_size']}x{st['img_size']}, fp32, random weights, torch {torch.__version__}, {THREADS} CPU thread "
        f"(pinned); models timed round-robin (rotating order) on the process CPU clock, medians of {repeats} "
        f"rounds after {warmup} warm-up; speedup = baseline median / ours median",
        "the paper's throughput is A100, batch 128, AMP: this CPU run says nothing about it, and nothing is gated",
    ]
    if st["scaling"]:
        sc_results, sc_rows = _scaling()
        results += sc_results
        notes.append(
            "HAT vs global attention, one layer (dim 64, k = 7), global/HAT time at maps "
            + ", ".join(f"{r['size']}: x{r['global_over_hat']:.2f}" for r in sc_rows)
        )
    if parity is not None:
        notes.append(
            f"official fastervit 1.0.0, same weights: max |logit diff| {parity['max_abs_logit_diff']:.2e}; ours "
            "vs theirs: " + ", ".join(f"bs{t['batch']} x{t['speedup']:.2f}" for t in parity["timings"])
        )
    else:
        notes.append(
            "the authors' fastervit package is not importable: no ours-vs-official ratio in this run"
        )
    artifacts = ["throughput.md", "throughput.png", "bench_rows.json"] if out is not None else []
    return BenchReport(results=results, notes=notes, artifacts=artifacts)
