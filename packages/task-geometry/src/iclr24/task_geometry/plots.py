"""Figures: metric vs input-label alignment for each nonlinearity (the paper's main figure), and a PCA view of the
hidden condition means."""

from __future__ import annotations

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import describe
from iclr24.paperkit.plots import pyplot

from .metrics import as_matrix

__all__ = ["plot_alignment_sweep", "plot_condition_means"]

_LABELS = {
    "cka_y": "target alignment CKA(K_z, K_y)",
    "cka_x": "input alignment CKA(K_z, K_x)",
    "ps": "parallelism score (targets)",
    "ccgp": "CCGP (targets)",
}
_COLORS = {"tanh": "tab:blue", "relu": "tab:red"}


def plot_alignment_sweep(summary: dict, metrics: tuple[str, ...] = ("cka_y", "cka_x", "ps", "ccgp")):
    """One panel per metric: the seed-mean of each ``(k, act)`` against the input-label alignment ``c``.
    ``summary`` is :func:`~.experiment.summarise`'s output. Returns the figure."""
    if not isinstance(summary, dict) or not summary:
        raise InputError(f"summary must be summarise()'s non-empty dict, got {describe(summary)}")
    if isinstance(metrics, str) or not isinstance(metrics, tuple | list) or not metrics:
        raise InputError(f"metrics must be a non-empty tuple of metric names, got {describe(metrics)}")
    for key, v in summary.items():
        if not isinstance(key, tuple) or len(key) != 3 or not isinstance(v, dict):
            raise InputError(f"summary must map (k, a, act) to a dict of metrics, got {key!r}: {describe(v)}")
        missing = sorted({"alignment", *metrics} - set(v))
        if missing:
            raise InputError(f"summary entry {key!r} lacks {missing}")
    plt = pyplot()
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.6 * len(metrics), 3.2), squeeze=False)
    ks = sorted({k for k, _, _ in summary})
    acts = list(dict.fromkeys(act for _, _, act in summary))
    styles = ["-o", "--s", ":^", "-.v"]
    for ax, m in zip(axes[0], metrics, strict=True):
        for ki, k in enumerate(ks):
            for act in acts:
                pts = sorted(
                    (v["alignment"], v[m]) for (kk, _, aa), v in summary.items() if kk == k and aa == act
                )
                if not pts:
                    continue
                x, y = zip(*pts, strict=True)
                ax.plot(x, y, styles[ki % len(styles)], color=_COLORS.get(act), label=f"{act}, k={k}", ms=4)
        ax.set_xlabel("input-label alignment c")
        ax.set_title(_LABELS.get(m, m), fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_condition_means(means_by_name: dict[str, np.ndarray], labels: np.ndarray, title: str = ""):
    """Each representation's condition means ``(P, N)`` projected on its top two principal axes, coloured by the
    first target and numbered by condition. Returns the figure."""
    if not isinstance(means_by_name, dict) or not means_by_name:
        raise InputError(
            f"means_by_name must be a non-empty dict of name -> (P, N) means, got {describe(means_by_name)}"
        )
    means_by_name = {name: as_matrix(f"means {name!r}", Z) for name, Z in means_by_name.items()}
    P = {Z.shape[0] for Z in means_by_name.values()}
    lab = as_matrix("labels", labels, np.ndim(labels)) if np.ndim(labels) in (1, 2) else None
    if lab is None or len(P) != 1 or lab.shape[0] != P.pop():
        raise InputError(
            f"labels must be (P,) or (P, k), one row per condition of every means, got {describe(labels)}"
        )
    lab = lab.reshape(len(lab), -1)[:, 0]
    plt = pyplot()
    fig, axes = plt.subplots(1, len(means_by_name), figsize=(3.4 * len(means_by_name), 3.2), squeeze=False)
    for ax, (name, Z) in zip(axes[0], means_by_name.items(), strict=True):
        Zc = np.asarray(Z, dtype=np.float64) - np.mean(Z, axis=0)
        u, s, _ = np.linalg.svd(Zc, full_matrices=False)
        xy = u[:, :2] * s[:2]
        ax.scatter(xy[:, 0], xy[:, 1], c=np.where(lab > 0.5, "tab:orange", "tab:green"), s=40)
        for p, (x, y) in enumerate(xy):
            ax.annotate(str(p), (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ev = s**2 / max(np.sum(s**2), 1e-300)
        ax.set_title(f"{name}: PC1-2 = {ev[:2].sum():.0%} of variance", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
