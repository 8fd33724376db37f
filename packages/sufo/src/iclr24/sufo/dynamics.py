"""F, feature dynamics: how the last layer's feature space changes over fine-tuning epochs.

The official ``Feature_dynamics.ipynb`` (missing from the released snapshot) projects the last-layer [CLS]
features of a fixed sample onto their top-2 PCs at every epoch checkpoint and shows label-wise clusters emerging
("disambiguation"). This module records the same projections from the ``on_epoch`` checkpoint series of
:func:`~iclr24.sufo.finetune.fine_tune` and makes them quantitative per epoch: silhouette by label and 5-NN
accuracy in PC1-2 (:func:`~iclr24.sufo.sparsity.label_separation`), and the top-2 cumulative explained-variance
ratio (the sparsification of the paper's Fig. 3).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from iclr24.paperkit.errors import InputError

from .data import TextDataset
from .features import extract_features
from .finetune import FineTuneConfig
from .finetune import FineTuneResult
from .finetune import fine_tune
from .sparsity import explained_variance
from .sparsity import label_separation
from .sparsity import principal_components

__all__ = ["Dynamics", "feature_dynamics", "plot_dynamics"]


@dataclass
class Dynamics:
    """One row per checkpoint (epoch 0 = the pre-trained model before any update)."""

    epochs: list[int] = field(default_factory=list)
    silhouette: list[float] = field(default_factory=list)
    knn_accuracy: list[float] = field(default_factory=list)
    evr_top2: list[float] = field(default_factory=list)
    projections: list[np.ndarray] = field(default_factory=list)  # (N, 2) per epoch
    labels: np.ndarray | None = None
    finetune: FineTuneResult | None = None
    # with keep_layers=True: the (L+1, N, d) features of every layer per epoch; features[finetune.best_epoch]
    # are then those of the model fine_tune returns (its best-validation weights), features[0] the pre-trained ones
    features: list[np.ndarray] = field(default_factory=list)
    feature_seconds: float = (
        0.0  # wall seconds spent extracting the checkpoints' features (inside fine-tuning)
    )

    def to_dict(self) -> dict:
        return {
            "epochs": self.epochs,
            "silhouette": self.silhouette,
            "knn_accuracy": self.knn_accuracy,
            "evr_top2": self.evr_top2,
            "feature_seconds": self.feature_seconds,
            "finetune": self.finetune.to_dict() if self.finetune is not None else None,
        }


def _record(dyn: Dynamics, epoch: int, last: np.ndarray, labels: np.ndarray) -> None:
    sep = label_separation(last, labels)
    u, s, _ = principal_components(last)
    dyn.epochs.append(epoch)
    dyn.silhouette.append(sep["silhouette"])
    dyn.knn_accuracy.append(sep["knn_accuracy"])
    dyn.evr_top2.append(float(explained_variance(last, 2)[-1]))
    dyn.projections.append((u[:, :2] * s[:2]).astype(np.float32))


def feature_dynamics(
    model,
    tokenizer,
    train: TextDataset,
    val: TextDataset,
    probe: TextDataset,
    config: FineTuneConfig | None = None,
    pooling: str = "cls",
    show_progress: bool = False,
    keep_layers: bool = False,
    *,
    callbacks=None,
    log_dir=None,
) -> Dynamics:
    """Fine-tune ``model`` in place (best-validation epoch kept, as :func:`fine_tune`) and record the last-layer
    features of ``probe`` (a fixed sample, never trained on) at every epoch checkpoint. ``keep_layers=True`` also
    keeps every layer's features per epoch (``Dynamics.features``), so the pre-trained and the returned model's
    features of ``probe`` need no second pass. ``callbacks`` / ``log_dir``: the fine-tuning's per-step log (see
    :func:`fine_tune`)."""
    if len(probe) < 3 or len(np.unique(probe.labels)) < 2:
        raise InputError(
            f"the probe sample needs at least 3 texts and 2 classes, got {len(probe)} texts, "
            f"{len(np.unique(probe.labels))} classes"
        )
    config = config if config is not None else FineTuneConfig()
    dyn = Dynamics(labels=np.asarray(probe.labels))

    def on_epoch(epoch: int, m) -> None:
        t0 = time.perf_counter()
        f = extract_features(
            m,
            tokenizer,
            probe.texts,
            layers="all" if keep_layers else [-1],
            pooling=pooling,
            max_length=config.max_length,
        )
        if keep_layers:
            dyn.features.append(f)
        _record(dyn, epoch, f[-1], dyn.labels)
        dyn.feature_seconds += time.perf_counter() - t0

    dyn.finetune = fine_tune(
        model, tokenizer, train, val, config, on_epoch=on_epoch, show_progress=show_progress,
        callbacks=callbacks, log_dir=log_dir,
    )  # fmt: skip
    return dyn


def plot_dynamics(dyn: Dynamics, title: str = "feature dynamics", max_panels: int = 4):
    """PC1-2 scatter at up to ``max_panels`` checkpoints (first, last and evenly between) and the per-epoch
    silhouette / kNN accuracy / top-2 EVR curves."""
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    n = len(dyn.epochs)
    pick = sorted(set(np.linspace(0, n - 1, min(max_panels, n)).round().astype(int).tolist()))
    fig, axes = plt.subplots(1, len(pick) + 1, figsize=(3.0 * (len(pick) + 1), 3.0))
    for ax, i in zip(axes[:-1], pick):
        p = dyn.projections[i]
        ax.scatter(p[:, 0], p[:, 1], c=dyn.labels, s=6, cmap="viridis")
        ax.set(title=f"epoch {dyn.epochs[i]}", xlabel="PC1", ylabel="PC2")
    ax = axes[-1]
    ax.plot(dyn.epochs, dyn.silhouette, "o-", label="silhouette")
    ax.plot(dyn.epochs, dyn.knn_accuracy, "s-", label="5-NN acc. (PC1-2)")
    ax.plot(dyn.epochs, dyn.evr_top2, "^-", label="top-2 EVR")
    ax.set(xlabel="epoch", ylim=(-0.2, 1.05), title="per epoch")
    ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
