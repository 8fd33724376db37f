"""Figures: group losses over time (the oscillation), sharpness against 2/lr, the top examples as images."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence

import torch
from torch import Tensor

from iclr24.paperkit.errors import InputError

__all__ = ["plot_group_losses", "plot_sharpness", "plot_top_examples"]


def _plt():
    from iclr24.paperkit.plots import pyplot

    return pyplot()


def plot_group_losses(curves: Mapping[str, Sequence[float]], title: str = "", log: bool = True):
    """One line per named loss curve (e.g. group A, group B, all): the anti-phase oscillation."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for name, ys in curves.items():
        ax.plot(list(ys), label=name, lw=1.0)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("mean loss")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig


def plot_sharpness(
    runs: Mapping[str, tuple[Sequence[int], Sequence[float]]], threshold: float, title: str = ""
):
    """Sharpness over training for each run, with the stability threshold ``2 / lr`` dashed."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for name, (steps, values) in runs.items():
        ax.plot(list(steps), list(values), marker=".", label=name)
    ax.axhline(threshold, ls="--", c="k", lw=1, label=f"2/lr = {threshold:.2f}")
    ax.set_xlabel("step")
    ax.set_ylabel("sharpness")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig


def plot_top_examples(images: Tensor, labels: Sequence[str], side: int, title: str = "", ncols: int = 8):
    """A grid of flattened square grey images (``(m, side*side)``) with a caption each."""
    plt = _plt()
    m = int(images.shape[0])
    if m == 0:
        raise InputError("no images to show")
    nrows = (m + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(1.2 * ncols, 1.35 * nrows + 0.4), squeeze=False)
    imgs = torch.as_tensor(images).reshape(m, side, side).float()
    for i, ax in enumerate(axes.reshape(-1)):
        ax.axis("off")
        if i < m:
            ax.imshow(imgs[i].numpy(), cmap="gray_r")
            ax.set_title(str(labels[i]), fontsize=7)
    fig.suptitle(title, fontsize=9)
    return fig
