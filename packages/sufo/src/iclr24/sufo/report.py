"""``sufo report``: the four analyses of one task in one Markdown file with every plot beside it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from iclr24.paperkit import atomic_write_bytes
from iclr24.paperkit import atomic_write_json
from iclr24.paperkit import atomic_write_text
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.plots import save_figure

__all__ = ["plot_analyses", "without_arrays", "write_report"]


def _f(v) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def plot_analyses(res: dict, title: str):
    """The analyses figure of one task: U (RSA per layer) and O (the fine-tuned last layer on PC1/PC2)."""
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.4))
    rsa = [np.nan if v is None else v for v in res["rsa_per_layer"]]
    ax[0].plot(range(len(rsa)), rsa, "o-")
    ax[0].set(
        xlabel="layer (0 = embeddings)",
        ylabel="RSA(fine-tuned, pre-trained)",
        ylim=(-0.1, 1.05),
        title="U: RSA",
    )
    p = np.asarray(res["projection"])
    lab, pl = np.asarray(res["labels"]), np.asarray(res["planted"], dtype=bool)
    ax[1].scatter(p[~pl, 0], p[~pl, 1], c=lab[~pl], s=8, cmap="viridis")
    ax[1].scatter(p[pl, 0], p[pl, 1], marker="x", c="red", s=20, label="planted outliers")
    ax[1].set(xlabel="PC1", ylabel="PC2", title="O: fine-tuned last layer")
    if pl.any():
        ax[1].legend(fontsize=7)
    fig.suptitle(title)
    return fig


def without_arrays(res: dict) -> dict:
    """``res`` without its per-example arrays (projection, labels, planted) and dynamics: what JSON records."""
    return {k: v for k, v in res.items() if k not in ("projection", "labels", "planted", "_dynamics")}


def write_report(
    res: dict, out: Path, title: str, model: str, task: str, figures: Mapping[str, Path] | None = None
) -> Path:
    """Write ``report.md``, ``report.json``, ``analyses.png`` and ``dynamics.png`` into ``out`` from the dict
    :func:`iclr24.sufo.reproduce.analyse` returns. Returns the Markdown path. ``figures`` maps ``analyses.png``
    and/or ``dynamics.png`` to a file already drawn from the same ``res`` (``sufo reproduce`` has drawn both for
    its claims): that file is copied instead of drawing the figure a second time."""
    from .dynamics import plot_dynamics

    out = Path(out)
    figures = dict(figures or {})
    bad = sorted(set(figures) - {"analyses.png", "dynamics.png"})
    if bad:
        raise InputError(f"figures may only name 'analyses.png' and 'dynamics.png', got {bad}")
    for name, src in figures.items():
        if not Path(src).is_file():
            raise InputFileError(f"figure {name}: {src} is not a file")
    dyn = res["_dynamics"]
    draw = {
        "analyses.png": lambda: plot_analyses(res, title),
        "dynamics.png": lambda: plot_dynamics(dyn, f"F: feature dynamics, {title}"),
    }
    for name, make in draw.items():
        if name in figures:
            atomic_write_bytes(out / name, Path(figures[name]).read_bytes())
        else:
            save_figure(make(), out / name)
    atomic_write_json(out / "report.json", {"model": model, "task": task, **without_arrays(res)})
    rsa = res["rsa_per_layer"]
    ft = res["finetune"]
    lines = [
        f"# SUFO report: {title}",
        "",
        f"Model: `{model}`; task: {task}; layers analysed: {res['layers']} (0 = embeddings).",
        "",
        "## S: supervised probing (last layer, [CLS]; test macro-F1)",
        "",
        "| probe | pre-trained | random-init control |",
        "|---|---|---|",
        f"| official (pooler + classifier on the frozen encoder) | {_f(res['probe_pretrained'])} | "
        f"{_f(res['probe_random'])} |",
        f"| logistic regression (standardised features) | {_f(res.get('logistic_probe_pretrained'))} | "
        f"{_f(res.get('logistic_probe_random'))} |",
        "",
        f"Fine-tuned classifier (test): {_f(res['finetuned_macro_f1'])}.",
        "",
        f"Fine-tuning: best epoch {ft['best_epoch']} by validation {ft['best_metric'].replace('_', '-')} "
        f"{ft['best_val_score']:.3f} ({ft['seconds']:.0f} s).",
        "",
        "## U: RSA(fine-tuned, pre-trained) per layer",
        "",
        "| layer | " + " | ".join(str(i) for i in range(len(rsa))) + " |",
        "|---" * (len(rsa) + 1) + "|",
        "| RSA | " + " | ".join(_f(v) for v in rsa) + " |",
        "",
        "## F: feature dynamics and sparsification (last layer, PC1-2)",
        "",
        "| epoch | silhouette | 5-NN accuracy | top-2 explained variance |",
        "|---|---|---|---|",
        *(
            f"| {e} | {s:.3f} | {k:.3f} | {v:.3f} |"
            for e, s, k, v in zip(dyn.epochs, dyn.silhouette, dyn.knn_accuracy, dyn.evr_top2)
        ),
        "",
        f"Top-2 explained variance of the best checkpoint: {res['evr_top2_after']:.3f} "
        f"(pre-trained {res['evr_top2_before']:.3f}).",
        "",
        "![feature dynamics](dynamics.png)",
        "",
        "## O: outliers (PC1 x PC2 cell rule, fine-tuned last layer)",
        "",
        f"{res['outliers_flagged']} of {len(res['labels'])} test texts flagged.",
    ]
    if res["planted_accuracy"] is not None:
        lines += [
            f" Planted outliers: {res['n_planted']}; precision of the flagged set {_f(res['outlier_precision'])} "
            f"(base rate {res['outlier_base_rate']:.3f}), recall {_f(res.get('outlier_recall'))}; accuracy on them "
            f"{_f(res['planted_accuracy'])} (chance by construction: random labels) vs "
            f"{_f(res['inlier_accuracy'])} on the inliers.",
        ]
    lines += ["", "![RSA per layer and the PC1-2 projection](analyses.png)", ""]
    return atomic_write_text(out / "report.md", "\n".join(lines))
