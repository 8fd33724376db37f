"""Figures: the clustering table as bars, the cluster-selection curve h(K), samples per cluster (before and after
the diffusion refinement) and the coherence bars."""

from __future__ import annotations

import math

import numpy as np
import torch

from iclr24.paperkit.plots import pyplot

__all__ = ["plot_clustering", "plot_selection", "plot_samples_per_cluster", "plot_coherence"]


def plot_clustering(scores: dict[str, dict[str, float]], title: str = ""):
    """Grouped bars of ACC / NMI / ARI per method: ``scores[method] = {"acc", "nmi", "ari"}``."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.2))
    methods = list(scores)
    width = 0.8 / 3
    for j, metric in enumerate(("acc", "nmi", "ari")):
        ax.bar(
            np.arange(len(methods)) + (j - 1) * width,
            [scores[m][metric] for m in methods],
            width,
            label=metric.upper(),
        )
    ax.set_xticks(np.arange(len(methods)), methods, fontsize=8)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    ax.set_title(title or "clustering of the test tuples", fontsize=9)
    fig.tight_layout()
    return fig


def plot_selection(curves: list[list[float]], k_true: int = 10):
    """h(K) against K for each seed; the argmin marked; the true number of classes dashed."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for i, h in enumerate(curves):
        ks = [k for k, v in enumerate(h) if v is not None and math.isfinite(v)]
        vals = [h[k] for k in ks]
        ax.plot(ks, vals, marker=".", label=f"seed {i}")
        k_star = ks[int(np.argmin(vals))]
        ax.scatter([k_star], [min(vals)], s=60, facecolors="none", edgecolors="k")
    ax.axvline(k_true, ls="--", c="gray", lw=1, label=f"true K = {k_true}")
    ax.set_xlabel("active clusters K")
    ax.set_ylabel("h(K): beta * norm. entropy - log-lik / d")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_samples_per_cluster(
    model, side: int, *, n_per: int = 4, refiner=None, seed: int = 0, channels: int = 1
):
    """One row per active cluster: ``n_per`` samples of every modality from that cluster; with ``refiner`` a
    second panel shows the same samples after the diffusion refinement."""
    plt = pyplot()
    clusters = model.active.nonzero().flatten().tolist()
    M = model.n_modalities
    panels = [("CMVAE samples", None)] + (
        [("after diffusion refinement", refiner)] if refiner is not None else []
    )
    fig, axes = plt.subplots(
        1, len(panels), figsize=(1.2 * M * n_per * len(panels) / 2 + 1, 0.6 * len(clusters) + 1)
    )
    axes = np.atleast_1d(axes)
    grids = []
    for c in clusters:
        outs = model.sample(n_per, cluster=c, seed=seed + c)
        grids.append(outs)
    for ax, (title, ref) in zip(axes, panels, strict=True):
        rows = []
        for outs in grids:
            tiles = []
            for m in range(M):
                x = outs[m] if ref is None else ref.refine(outs[m], m, seed=seed + m)
                tiles.extend(_image(t, side, channels) for t in x)
            rows.append(np.concatenate(tiles, axis=1))
        img = np.concatenate(rows, axis=0)
        ax.imshow(img, cmap="gray" if channels == 1 else None, vmin=0, vmax=1)
        ax.set_title(title, fontsize=9)
        ax.set_yticks((np.arange(len(clusters)) + 0.5) * side, [f"c{c}" for c in clusters], fontsize=6)
        ax.set_xticks(
            [(m + 0.5) * n_per * side for m in range(M)], [f"modality {m}" for m in range(M)], fontsize=7
        )
    fig.tight_layout()
    return fig


def _image(x: torch.Tensor, side: int, channels: int) -> np.ndarray:
    a = x.detach().cpu().numpy().clip(0, 1)
    return a.reshape(side, side) if channels == 1 else a.reshape(channels, side, side).transpose(1, 2, 0)


def plot_coherence(values: dict[str, float], title: str = "unconditional coherence"):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar(list(values), list(values.values()), color=["C0", "C1", "C2"][: len(values)])
    ax.set_ylim(0, 1)
    ax.set_ylabel("fraction of samples whose M labels agree")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
