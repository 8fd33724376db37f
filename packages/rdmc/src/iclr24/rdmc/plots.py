"""Figures: samples over the target's contours, and error versus oracle budget (the paper's figure types)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit.plots import pyplot
from iclr24.paperkit.plots import save_figure

from .targets import GaussianMixture

__all__ = ["samples_figure", "budget_curve_figure", "funnel_figure", "plot_samples", "plot_budget_curve"]


def plot_samples(
    target: GaussianMixture,
    samples: dict[str, torch.Tensor],
    path: str | os.PathLike,
    titles: dict[str, str] | None = None,
    lim: float = 7.5,
) -> Path:
    """:func:`samples_figure` saved atomically to ``path`` (closed afterwards)."""
    return save_figure(samples_figure(target, samples, titles=titles, lim=lim), path, dpi=110)


def plot_budget_curve(
    budgets: list[int],
    curves: dict[str, dict[str, list[float]]],
    path: str | os.PathLike,
    metrics: tuple[str, ...] = ("mode_tv", "mmd2"),
) -> Path:
    """:func:`budget_curve_figure` saved atomically to ``path`` (closed afterwards)."""
    return save_figure(budget_curve_figure(budgets, curves, metrics=metrics), path, dpi=110)


def samples_figure(
    target: GaussianMixture,
    samples: dict[str, torch.Tensor],
    titles: dict[str, str] | None = None,
    lim: float = 7.5,
):
    """One panel per sampler: its samples (first two coordinates) over the contours of the target's density."""
    plt = pyplot()

    grid = torch.linspace(-lim, lim, 200, dtype=torch.float64)
    gx, gy = torch.meshgrid(grid, grid, indexing="xy")
    pts = torch.stack([gx, gy], -1)
    if target.dim > 2:
        pts = torch.cat([pts, target.means[0, 2:].expand(200, 200, target.dim - 2)], -1)
    dens = target.log_prob(pts).exp().numpy()
    fig, axes = plt.subplots(1, len(samples), figsize=(3.3 * len(samples), 3.3), squeeze=False)
    for ax, (name, x) in zip(axes[0], samples.items()):
        ax.contour(gx.numpy(), gy.numpy(), dens, levels=8, colors="0.6", linewidths=0.7)
        xs = np.asarray(x[:, :2])
        ax.scatter(
            xs[:, 0],
            xs[:, 1],
            s=2,
            alpha=0.5,
            color="C0" if name.startswith("rdmc") else "0.2" if name == "exact" else "C3",
        )
        ax.set_title((titles or {}).get(name, name), fontsize=9)
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
    return fig


def budget_curve_figure(
    budgets: list[int],
    curves: dict[str, dict[str, list[float]]],
    metrics: tuple[str, ...] = ("mode_tv", "mmd2"),
):
    """Error versus oracle calls per sample on log axes; ``curves[method][metric]`` = mean over seeds per budget."""
    plt = pyplot()

    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        for i, (method, vals) in enumerate(curves.items()):
            ax.plot(
                budgets,
                vals[metric],
                marker="o" if i % 2 == 0 else "s",
                ms=3,
                label=method,
                color=f"C{i}",
                linestyle="-" if i < 2 else "--" if i == 2 else ":",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("oracle calls per sample (gradient + log-density)")
        ax.set_ylabel({"mode_tv": "mode-TV", "mmd2": "MMD²", "sliced_w2": "sliced W2"}.get(metric, metric))
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    return fig


def funnel_figure(samples: dict[str, torch.Tensor], lim_v: float = 9.0):
    """Neal's funnel: one panel per sampler, (x_1, v) scatter, and the v-marginal histograms overlaid."""
    plt = pyplot()

    fig, axes = plt.subplots(1, len(samples) + 1, figsize=(3.0 * (len(samples) + 1), 3.0), squeeze=False)
    bins = np.linspace(-lim_v, lim_v, 40)
    for i, (ax, (name, x)) in enumerate(zip(axes[0], samples.items())):
        xs = np.asarray(x)
        ax.scatter(xs[:, 1], xs[:, 0], s=2, alpha=0.4, color=f"C{i}")
        ax.set_xlim(-20, 20)
        ax.set_ylim(-lim_v, lim_v)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("x_1")
        ax.set_ylabel("v")
        axes[0][-1].hist(xs[:, 0], bins=bins, histtype="step", density=True, label=name, color=f"C{i}")
    axes[0][-1].set_title("v-marginal", fontsize=9)
    axes[0][-1].legend(fontsize=7)
    return fig
