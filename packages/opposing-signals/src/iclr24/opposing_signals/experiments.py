"""One tracked training run end to end: train, track every example's loss, measure sharpness, find the opposing
groups, and summarise (what ``opposing-signals run`` and the claim checks call).

Measurements (the paper's identification procedure and edge-of-stability account, at CPU scale):
- precision: the fraction of the top-k ``|Delta|`` movers that carry the planted signal, averaged over steps;
- corr: Pearson correlation of the per-step changes of the two planted groups' mean losses over the last half;
- amplitude: the root mean square of the anti-phase part of those changes, ``(Delta_A - Delta_B) / 2``, over the
  run after its first eighth (the initial descent), with ``corr_settled``, their correlation over the same steps;
- loss-increase steps: steps where the training loss rose by more than 1 %;
- sharpness: its median from a third of the way in, against ``2 / lr``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict
from dataclasses import dataclass

import torch
from torch import Tensor

from iclr24.paperkit.errors import InputError

from .eos import edge_of_stability_report
from .eos import loss_increase_steps
from .groups import _pearson_or_nan
from .groups import antiphase_amplitude
from .groups import find_opposing_groups
from .groups import group_mean_changes
from .groups import top_k_precision
from .tracking import LossTracker
from .tracking import check_labels
from .train import TrainConfig
from .train import _check_xy
from .train import make_mlp
from .train import train

__all__ = ["ExperimentConfig", "run_experiment"]


@dataclass(frozen=True)
class ExperimentConfig:
    """Defaults: the digits calibration (MLP 64-128-128-128-10, full-batch GD, lr 0.3, MSE, 1500 steps)."""

    optimizer: str = "gd"
    lr: float = 0.3
    steps: int = 1500
    loss: str = "mse"
    momentum: float = 0.0
    batch_size: int | None = None
    width: int = 128
    depth: int = 3
    k: int = 24
    sharpness_every: int = 50
    sharpness_iters: int = 20
    sharpness_method: str = "lanczos"
    physical_batch_size: int | None = None
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self) -> None:
        self.train_config()  # the training options are checked where they are defined
        for name in ("width", "depth", "k"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name} must be an int >= 1, got {v!r}")

    def train_config(self) -> TrainConfig:
        return TrainConfig(
            optimizer=self.optimizer,
            lr=self.lr,
            steps=self.steps,
            loss=self.loss,
            momentum=self.momentum,
            batch_size=self.batch_size,
            sharpness_every=self.sharpness_every,
            sharpness_iters=self.sharpness_iters,
            sharpness_method=self.sharpness_method,
            physical_batch_size=self.physical_batch_size,
            seed=self.seed,
        )


def run_experiment(
    x: Tensor,
    y: Tensor,
    config: ExperimentConfig | None = None,
    group_a: Tensor | None = None,
    group_b: Tensor | None = None,
    progress: Callable[[int], None] | None = None,
    callbacks=None,
    log_dir: str | os.PathLike | None = None,
) -> tuple[dict, LossTracker]:
    """Train a fresh MLP on ``(x, y)`` (flattened) with every example tracked; returns ``(summary, tracker)``.

    ``group_a``/``group_b``: training indices of two known groups (the planted ones), for precision and, when both
    are non-empty, corr and amplitude (a control with the signal on one group only passes an empty ``group_b``).
    The summary is JSON-serialisable: config, loss curve, sharpness, group curves, found groups, measurements.
    ``callbacks`` / ``log_dir``: :func:`~.train.train`'s step hook and metrics folder. The trained MLP is
    ``tracker.model`` (``tracker.model.save_pretrained(dir)`` saves it as a model folder).
    """
    cfg = config or ExperimentConfig()
    if not isinstance(cfg, ExperimentConfig):
        raise InputError(f"config must be an ExperimentConfig, got {type(cfg).__name__}")
    tc = cfg.train_config()
    x, y = _check_xy(x, y)
    n = x.shape[0]
    groups_given = [g for g in (group_a, group_b) if g is not None]
    if len(groups_given) == 1:
        raise InputError("give both group_a and group_b (indices of the two planted groups), or neither")
    checked = []
    for name, grp in (("group_a", group_a), ("group_b", group_b)):
        if grp is None:
            continue
        gi = torch.as_tensor(grp)
        if gi.ndim != 1 or gi.dtype.is_floating_point or gi.dtype == torch.bool:
            raise InputError(
                f"{name} must be a 1-D sequence of integer training indices, got {tuple(gi.shape)}"
            )
        if gi.numel() and (int(gi.min()) < 0 or int(gi.max()) >= n):
            raise InputError(
                f"{name} indices must lie in [0, {n - 1}], got [{int(gi.min())}, {int(gi.max())}]"
            )
        checked.append(gi.long())
    if checked and checked[0].numel() + checked[1].numel() == 0:
        raise InputError("group_a and group_b are both empty: nothing is planted to measure")
    x = x.reshape(n, -1).to(cfg.device)
    y = y.to(cfg.device)
    n_classes = int(y.max()) + 1
    check_labels(y, max(n_classes, 2))
    model = make_mlp(x.shape[1], cfg.width, cfg.depth, max(n_classes, 2), seed=cfg.seed).to(cfg.device)
    tracker = LossTracker(model, (x, y), loss=cfg.loss)
    hist = train(model, x, y, tc, tracker=tracker, progress=progress, callbacks=callbacks, log_dir=log_dir)
    losses = tracker.losses
    d = tracker.deltas()
    half = d[d.shape[0] // 2 :]
    k = min(cfg.k, tracker.n)
    out: dict = {
        "config": asdict(cfg),
        "n": int(x.shape[0]),
        "loss": hist.loss,
        "accuracy": hist.accuracy,
        "sharpness_steps": hist.sharpness_steps,
        "sharpness": hist.sharpness,
        "seconds": hist.seconds,
        "loss_increase_steps": len(loss_increase_steps(hist.loss)),
        "final_loss": hist.loss[-1],
        "curves": {"all": losses.mean(1).tolist()},
    }
    if hist.sharpness:
        out["eos"] = edge_of_stability_report(hist).to_dict()
    if checked:
        ga, gb = checked
        planted = torch.zeros(x.shape[0], dtype=torch.bool)
        planted[ga] = True
        planted[gb] = True
        prec = top_k_precision(d, planted, k)
        out["precision"] = float(prec.mean())
        out["precision_late"] = float(prec[prec.numel() // 2 :].mean())
        out["base_rate"] = float(planted.float().mean())
        for name, grp in (("group A", ga), ("group B", gb)):
            if grp.numel():
                out["curves"][name] = losses[:, grp].mean(1).tolist()
        if ga.numel() and gb.numel():
            da, db = group_mean_changes(half, ga), group_mean_changes(half, gb)
            out["corr"] = _pearson_or_nan(da, db)
            settled = d[d.shape[0] // 8 :]
            sa, sb = group_mean_changes(settled, ga), group_mean_changes(settled, gb)
            out["amplitude"] = antiphase_amplitude(sa, sb)
            out["corr_settled"] = _pearson_or_nan(sa, sb)
    window = max(2, d.shape[0] // 2)
    found = find_opposing_groups(tracker, k=k, window=window)
    out["groups"] = found.summary()
    if found.best is not None:
        for side in ("a", "b"):
            name = getattr(found.best, side)
            out["curves"][f"found {name}"] = losses[:, found.group(name).positions].mean(1).tolist()
    return out, tracker
