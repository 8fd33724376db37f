"""Layouts drawn as pictures (one colour per category)."""

from __future__ import annotations

import torch

__all__ = ["draw_layout", "layout_grid"]

COLOURS = ("#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def draw_layout(ax, bbox: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, title: str = "") -> None:
    """Draw one layout (L, 4) centre-format boxes on a matplotlib axis (y grows downwards, as on a page)."""
    from matplotlib.patches import Rectangle

    ax.set_xlim(0, 1)
    ax.set_ylim(1, 0)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    for (xc, yc, w, h), lab, m in zip(bbox.tolist(), labels.tolist(), mask.tolist(), strict=True):
        if m:
            c = COLOURS[int(lab) % len(COLOURS)]
            ax.add_patch(
                Rectangle((xc - w / 2, yc - h / 2), w, h, facecolor=c, edgecolor=c, alpha=0.45, lw=1)
            )
    if title:
        ax.set_title(title, fontsize=7)


def layout_grid(rows: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]], n: int = 6, categories=()):
    """A figure with one row per entry of ``rows`` (name -> (bbox, labels, mask)) and ``n`` layouts per row."""
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(len(rows), n, figsize=(1.3 * n, 1.5 * len(rows)), squeeze=False)
    for r, (name, (b, lab, m)) in enumerate(rows.items()):
        for k in range(n):
            ax = axes[r][k]
            if k < b.shape[0]:
                draw_layout(ax, b[k], lab[k], m[k])
            else:
                ax.axis("off")
        axes[r][0].set_ylabel(name, fontsize=8)
    if categories:
        from matplotlib.patches import Patch

        handles = [Patch(color=COLOURS[i], alpha=0.45, label=c) for i, c in enumerate(categories)]
        fig.legend(handles=handles, loc="lower center", ncol=len(categories), fontsize=7)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig
