"""Benchmarks behind ``fastervit bench``: CPU throughput of FasterViT-0..2 against the timm models the paper compares
with at similar ImageNet top-1 (all timed round-robin in one run), FasterViT-0 against its no-HAT ablation, and,
when the authors' package is importable (``uv run --with fastervit==1.0.0 fastervit bench``), ours against theirs
with identical weights (logit agreement and speed).

The paper's throughput numbers are A100 GPU, batch 128, AMP; a 2-core CPU says nothing about them."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from iclr24.paperkit import BenchReport, BenchResult, atomic_write_json, benchmark, ensure_out_dir

__all__ = [
    "run_benchmarks",
    "measure",
    "SETTINGS",
    "throughput_table",
    "OURS",
    "BASELINES",
    "official_parity",
]

OURS = ("faster_vit_0_224", "faster_vit_1_224", "faster_vit_2_224")
# timm names of the paper's comparison points (ImageNet top-1 from the paper / timm: 82.1, 81.3, 79.9, 80.4)
BASELINES = ("convnext_tiny", "swin_tiny_patch4_window7_224", "deit_small_patch16_224", "resnet50")
PAPER_TOP1 = {
    "faster_vit_0_224": 82.1,
    "faster_vit_1_224": 83.2,
    "faster_vit_2_224": 84.2,
    "convnext_tiny": 82.1,
    "swin_tiny_patch4_window7_224": 81.3,
    "deit_small_patch16_224": 79.9,
    "resnet50": 80.4,
}
PAPER_A100_IMG_S = {
    "faster_vit_0_224": 5802,
    "faster_vit_1_224": 4188,
    "faster_vit_2_224": 3161,
    "convnext_tiny": 3196,
    "swin_tiny_patch4_window7_224": 2758,
}


def _build(name: str, img_size: int, **kwargs) -> torch.nn.Module:
    import timm

    from . import registry

    if (
        name in registry.VARIANTS
    ):  # built from our own module even if the official package re-registered the name
        return registry._build(name, resolution=img_size, **kwargs).eval()
    kw = {"img_size": img_size} if ("swin" in name or "deit" in name) else {}
    return timm.create_model(name, pretrained=False, **kw).eval()


def _round_robin(models: dict[str, torch.nn.Module], x: torch.Tensor, repeats: int, warmup: int) -> dict:
    """Forward every model on ``x`` in turn, ``warmup`` + ``repeats`` rounds, rotating the order each round."""
    names = list(models)
    times: dict[str, list[float]] = {n: [] for n in names}
    with torch.inference_mode():
        for r in range(warmup + repeats):
            order = names[r % len(names) :] + names[: r % len(names)]
            for n in order:
                t0 = time.perf_counter()
                models[n](x)
                dt = time.perf_counter() - t0
                if r >= warmup:
                    times[n].append(dt)
    return times


def official_parity(
    batch_sizes: Sequence[int] = (1, 16), repeats: int = 3, img_size: int = 224
) -> dict | None:
    """Ours vs the authors' ``fastervit`` package (None when it is not importable): max |logit difference| with the
    official weights copied into ours, and timings at each batch size."""
    try:
        from fastervit.models import faster_vit as official  # the authors' package, never our dependency
    except Exception:  # noqa: BLE001 - absent, or broken by the installed timm
        return None
    torch.manual_seed(0)
    theirs = official.faster_vit_0_224(resolution=img_size).eval()
    ours = _build("faster_vit_0_224", img_size)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    out: dict = {"model": "faster_vit_0_224", "timings": []}
    x = torch.randn(2, 3, img_size, img_size)
    with torch.inference_mode():
        out["max_abs_logit_diff"] = float((ours(x) - theirs(x)).abs().max())
    results = []
    for b in batch_sizes:
        xb = torch.randn(b, 3, img_size, img_size)

        def run(m, xb=xb):
            def f():
                with torch.inference_mode():
                    m(xb)

            return f

        r = benchmark(
            run(ours),
            baseline=run(theirs),
            repeats=repeats,
            warmup=1,
            name=f"ours faster_vit_0_224 bs{b}",
            baseline_name=f"official fastervit 1.0.0 bs{b}",
        )
        results.append(r)
        out["timings"].append(
            {"batch": b, "ours_s": r.median_s, "official_s": r.baseline_median_s, "speedup": r.speedup}
        )
    out["results"] = results
    return out


def throughput_table(rows: list[dict]) -> str:
    lines = [
        "| model | batch | params (M) | GMACs | img/s here | vs convnext_tiny | paper top-1 | paper img/s (A100) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rel = f"x{r['vs_convnext_tiny']:.2f}" if r.get("vs_convnext_tiny") else "-"
        a100 = PAPER_A100_IMG_S.get(r["model"], "-")
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['params'] / 1e6:.1f} | {r['macs'] / 1e9:.2f} | "
            f"{r['img_per_s']:.2f} | {rel} | {PAPER_TOP1.get(r['model'], '-')} | {a100} |"
        )
    return "\n".join(lines) + "\n"


def _plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    batches = sorted({r["batch"] for r in rows})
    fig, axes = plt.subplots(1, len(batches), figsize=(4.2 * len(batches), 3.4), squeeze=False)
    for ax, b in zip(axes[0], batches):
        sub = [r for r in rows if r["batch"] == b]
        colours = ["tab:green" if r["model"].startswith("faster_vit") else "tab:gray" for r in sub]
        ax.barh(
            [r["model"].replace("_patch4_window7_224", "").replace("_patch16_224", "") for r in sub],
            [r["img_per_s"] for r in sub],
            color=colours,
        )
        ax.set_title(f"batch {b}, 224x224, CPU ({torch.get_num_threads()} threads)")
        ax.set_xlabel("images / s")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


SETTINGS = {  # mode -> batch sizes, models (None: OURS + BASELINES), image side, (repeats, warm-up)
    "smoke": dict(batch_sizes=(1,), models=("faster_vit_0_224",), img_size=64, rounds=(2, 1)),
    "quick": dict(batch_sizes=(1, 16), models=None, img_size=224, rounds=(2, 1)),
    "full": dict(batch_sizes=(1, 16), models=None, img_size=224, rounds=(5, 1)),
}


def _throughput_rows(built: dict, batch_sizes: Sequence[int], img_size: int, repeats: int, warmup: int):
    """Round-robin throughput of every built model at each batch size; params, MACs, ratio to ConvNeXt-T."""
    from .cli import count_macs

    names = list(built)
    rows: list[dict] = []
    for b in batch_sizes:
        x = torch.randn(b, 3, img_size, img_size)
        times = _round_robin(built, x, repeats, warmup)
        for n in names:
            med = statistics.median(times[n])
            rows.append(
                {
                    "model": n,
                    "batch": b,
                    "median_s": med,
                    "times_s": times[n],
                    "img_per_s": b / med,
                    "params": sum(p.numel() for p in built[n].parameters()),
                    "macs": count_macs(built[n], (img_size, img_size)) if b == batch_sizes[0] else None,
                }
            )
    macs = {r["model"]: r["macs"] for r in rows if r["macs"] is not None}
    for r in rows:
        r["macs"] = macs[r["model"]]
        ref = next((q for q in rows if q["model"] == "convnext_tiny" and q["batch"] == r["batch"]), None)
        r["vs_convnext_tiny"] = r["img_per_s"] / ref["img_per_s"] if ref else None
    return rows


def _ablation(built: dict, batch_sizes: Sequence[int], img_size: int, repeats: int) -> list[BenchResult]:
    """The carrier-token cost: FasterViT-0 against itself without HAT (plain window attention in stage 3)."""
    if "faster_vit_0_224" not in built:
        return []
    ablation = _build("faster_vit_0_224", img_size, hat=(False, False, False, False))
    results = []
    for b in batch_sizes:
        x = torch.randn(b, 3, img_size, img_size)

        def run(m, x=x):
            def f():
                with torch.inference_mode():
                    m(x)

            return f

        results.append(
            benchmark(
                run(built["faster_vit_0_224"]),
                baseline=run(ablation),
                repeats=repeats + 1,
                warmup=1,
                name=f"faster_vit_0_224 bs{b}",
                baseline_name=f"no-HAT ablation bs{b}",
            )
        )
    return results


def measure(
    batch_sizes: Sequence[int] = (1, 16),
    models: Sequence[str] | None = None,
    img_size: int = 224,
    repeats: int = 2,
    warmup: int = 1,
    out: str | Path | None = None,
) -> tuple[list[BenchResult], list[dict], dict | None]:
    """Time the models round-robin at each batch size; FasterViT-0 vs its no-HAT ablation and (if importable) vs
    the official package with ``paperkit.benchmark``. Returns (pair results, throughput rows, official parity);
    with ``out``, also writes ``bench_rows.json`` and ``throughput.png`` there."""
    names = list(models) if models else list(OURS + BASELINES)
    built = {n: _build(n, img_size) for n in names}
    rows = _throughput_rows(built, batch_sizes, img_size, repeats, warmup)
    results = _ablation(built, batch_sizes, img_size, repeats)
    parity = official_parity(batch_sizes, repeats=repeats + 1)  # the official model runs at 224 only
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
                "threads": torch.get_num_threads(),
                "img_size": img_size,
            },
        )
        try:
            _plot(rows, out / "throughput.png")
        except ImportError:  # pragma: no cover
            pass
    return results, rows, parity


def _row_results(rows: list[dict]) -> list[BenchResult]:
    """The throughput rows as bench results: each model against ConvNeXt-T at the same batch (when timed)."""
    out = []
    for r in rows:
        ref = next((q for q in rows if q["model"] == "convnext_tiny" and q["batch"] == r["batch"]), None)
        paired = ref is not None and ref is not r
        out.append(
            BenchResult(
                name=f"{r['model']} bs{r['batch']}, round-robin",
                median_s=r["median_s"],
                times_s=list(r["times_s"]),
                baseline_name=f"convnext_tiny bs{r['batch']}, round-robin" if paired else None,
                baseline_median_s=ref["median_s"] if paired else None,
                baseline_times_s=list(ref["times_s"]) if paired else None,
            )
        )
    return out


def run_benchmarks(mode: str = "quick") -> BenchReport:
    """``fastervit bench``: round-robin CPU throughput of FasterViT-0..2 and the timm peers (smoke: FasterViT-0 at
    64x64, batch 1), FasterViT-0 vs its no-HAT ablation, and ours vs the official package when importable."""
    if mode not in SETTINGS:
        raise ValueError(f"mode must be smoke, quick or full, got {mode!r}")
    st = SETTINGS[mode]
    repeats, warmup = st["rounds"]
    results, rows, parity = measure(
        st["batch_sizes"], st["models"], st["img_size"], repeats=repeats, warmup=warmup
    )
    notes = [
        f"{st['img_size']}x{st['img_size']}, fp32, random weights, {torch.get_num_threads()} CPU threads; models "
        f"timed round-robin (rotating order), medians of {repeats} rounds after {warmup} warm-up; speedup = "
        "baseline median / ours median",
        "the paper's throughput is A100, batch 128, AMP: this CPU run says nothing about it",
    ]
    notes += [_row_note(r) for r in rows if r["batch"] == st["batch_sizes"][0]]
    if parity is not None:
        notes.append(
            f"official fastervit 1.0.0, same weights: max |logit diff| {parity['max_abs_logit_diff']:.2e}"
        )
    return BenchReport(results=_row_results(rows) + results, notes=notes)


def _row_note(r: dict) -> str:
    a100 = PAPER_A100_IMG_S.get(r["model"], "-")
    return (
        f"{r['model']}: {r['params'] / 1e6:.1f} M params, {r['macs'] / 1e9:.2f} GMACs; "
        f"paper top-1 {PAPER_TOP1.get(r['model'], '-')}, A100 img/s {a100}"
    )
