"""Reports: a Markdown and a CSV table of the comparisons, a heatmap of the relative accuracy drop (persona x
dataset), and a bar chart of abstention rates."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.io import atomic_write_text
from iclr24.paperkit.plots import pyplot
from iclr24.paperkit.plots import save_figure

from .analysis import Comparison
from .analysis import persona_summary

__all__ = ["comparisons_markdown", "comparisons_csv", "plot_drop_heatmap", "plot_abstention", "write_report"]

_COLS = (
    "model",
    "template",
    "dataset",
    "persona",
    "baseline",
    "n",
    "acc_baseline",
    "acc",
    "relative_drop",
    "abstention_rate",
    "n10",
    "n01",
    "test",
    "exact",
    "pvalue",
    "pvalue_adjusted",
    "significant",
)


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1e-3 and v != 0 else f"{v:.3f}"
    return str(v)


def comparisons_markdown(comparisons: Sequence[Comparison]) -> str:
    """A Markdown table: one row per (persona, dataset) comparison, then the per-persona summary."""
    lines = ["| " + " | ".join(_COLS) + " |", "|" + "---|" * len(_COLS)]
    for c in comparisons:
        d = c.to_dict()
        lines.append("| " + " | ".join(_fmt(d[k]) for k in _COLS) + " |")
    summ = persona_summary(comparisons)
    if summ:
        keys = (
            "template",
            "persona",
            "datasets",
            "significant",
            "pct_datasets_significant",
            "mean_relative_drop",
            "mean_accuracy",
            "mean_abstention",
            "biased",
        )
        lines += ["", "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        lines += ["| " + " | ".join(_fmt(r[k]) for k in keys) + " |" for r in summ]
    return "\n".join(lines) + "\n"


def comparisons_csv(comparisons: Sequence[Comparison]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(Comparison.__dataclass_fields__))
    w.writeheader()
    for c in comparisons:
        w.writerow(c.to_dict())
    return buf.getvalue()


def plot_drop_heatmap(comparisons: Sequence[Comparison], path: str | Path) -> Path:
    """Relative accuracy drop (%) per persona (rows) and dataset (columns); significant cells are starred."""
    plt = pyplot()  # matplotlib on Agg

    if not comparisons:
        raise InputError("no comparisons to plot")
    personas = sorted({c.persona for c in comparisons})
    datasets = sorted({c.dataset for c in comparisons})
    grid = np.full((len(personas), len(datasets)), np.nan)
    sig = np.zeros_like(grid, dtype=bool)
    for c in comparisons:  # several templates: average them
        i, j = personas.index(c.persona), datasets.index(c.dataset)
        v = 100.0 * (c.relative_drop or 0.0)
        grid[i, j] = v if np.isnan(grid[i, j]) else (grid[i, j] + v) / 2
        sig[i, j] |= c.significant
    lim = max(5.0, float(np.nanmax(np.abs(grid))))
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(datasets), 0.9 + 0.38 * len(personas)))
    im = ax.imshow(grid, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(
        range(len(datasets)),
        [d.replace("builtin-", "").replace("mmlu-", "") for d in datasets],
        rotation=45,
        ha="right",
    )
    ax.set_yticks(range(len(personas)), personas)
    for i in range(len(personas)):
        for j in range(len(datasets)):
            if not np.isnan(grid[i, j]):
                ax.text(
                    j, i, f"{grid[i, j]:.0f}{'*' if sig[i, j] else ''}", ha="center", va="center", fontsize=7
                )
    fig.colorbar(im, ax=ax, label=f"relative accuracy drop vs {comparisons[0].baseline!r} (%)")
    ax.set_title("Accuracy drop per persona and dataset (* significant)")
    return save_figure(fig, Path(path))  # atomic, Agg, closes the figure


def plot_abstention(scored: Sequence[dict], path: str | Path) -> Path:
    """Abstention rate per persona (pooled over datasets)."""
    plt = pyplot()  # matplotlib on Agg

    by: dict[str, list[bool]] = {}
    for r in scored:
        by.setdefault(r["persona"], []).append(bool(r["abstained"]))
    if not by:
        raise InputError("no scored responses to plot")
    personas = sorted(by, key=lambda p: -np.mean(by[p]))
    rates = [100.0 * float(np.mean(by[p])) for p in personas]
    fig, ax = plt.subplots(figsize=(6.5, 0.9 + 0.3 * len(personas)))
    ax.barh(range(len(personas)), rates, color="tab:orange")
    ax.set_yticks(range(len(personas)), personas)
    ax.invert_yaxis()
    ax.set_xlabel("abstention rate (%)")
    ax.set_title("Abstentions per persona")
    return save_figure(fig, Path(path))  # atomic, Agg, closes the figure


def write_report(
    comparisons: Sequence[Comparison], scored: Sequence[dict], out: str | Path, prefix: str = "persona_bias"
) -> list[Path]:
    """Write ``<prefix>_comparisons.md``, ``<prefix>_comparisons.csv``, ``<prefix>_drop_heatmap.png`` and
    ``<prefix>_abstention.png`` into ``out``; returns the paths."""
    out = Path(out)
    paths = [
        atomic_write_text(out / f"{prefix}_comparisons.md", comparisons_markdown(comparisons)),
        atomic_write_text(out / f"{prefix}_comparisons.csv", comparisons_csv(comparisons)),
    ]
    if comparisons:
        paths.append(plot_drop_heatmap(comparisons, out / f"{prefix}_drop_heatmap.png"))
    if scored:
        paths.append(plot_abstention(scored, out / f"{prefix}_abstention.png"))
    return paths
