"""One tracked training run end to end: train, track every example's loss, measure sharpness, find the opposing
groups, and summarise (what ``opposing-signals run`` and the claim checks call).

Measurements (paper Sec. 2-3, at CPU scale):
- precision: the fraction of the top-k ``|Delta|`` movers that carry the planted signal, averaged over steps;
- corr: Pearson correlation of the per-step changes of the two planted groups' mean losses over the last half;
- loss-increase steps: steps where the training loss rose by more than 1 %;
- sharpness: its median from a third of the way in, against ``2 / lr``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch import Tensor

from .eos import edge_of_stability_report, loss_increase_steps
from .groups import find_opposing_groups, group_mean_changes, pearson, top_k_precision
from .tracking import LossTracker
from .training import TrainConfig, make_mlp, train

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
    seed: int = 0
    device: str = "cpu"

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
            seed=self.seed,
        )


def run_experiment(
    x: Tensor,
    y: Tensor,
    config: ExperimentConfig | None = None,
    group_a: Tensor | None = None,
    group_b: Tensor | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[dict, LossTracker]:
    """Train a fresh MLP on ``(x, y)`` (flattened) with every example tracked; returns ``(summary, tracker)``.

    ``group_a``/``group_b``: training indices of two known groups (the planted ones), for precision and corr.
    The summary is JSON-serialisable: config, loss curve, sharpness, group curves, found groups, measurements.
    """
    cfg = config or ExperimentConfig()
    tc = cfg.train_config()
    x = x.reshape(x.shape[0], -1).to(cfg.device)
    y = y.to(cfg.device)
    n_classes = int(y.max()) + 1
    model = make_mlp(x.shape[1], cfg.width, cfg.depth, max(n_classes, 2), seed=cfg.seed).to(cfg.device)
    tracker = LossTracker(model, (x, y), loss=cfg.loss)
    hist = train(model, x, y, tc, tracker=tracker, progress=progress)
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
    if group_a is not None and group_b is not None:
        ga, gb = torch.as_tensor(group_a), torch.as_tensor(group_b)
        planted = torch.zeros(x.shape[0], dtype=torch.bool)
        planted[ga] = True
        planted[gb] = True
        prec = top_k_precision(d, planted, k)
        out["precision"] = float(prec.mean())
        out["precision_late"] = float(prec[prec.numel() // 2 :].mean())
        out["base_rate"] = float(planted.float().mean())
        out["corr"] = pearson(group_mean_changes(half, ga), group_mean_changes(half, gb))
        out["curves"]["group A"] = losses[:, ga].mean(1).tolist()
        out["curves"]["group B"] = losses[:, gb].mean(1).tolist()
    window = max(2, d.shape[0] // 2)
    found = find_opposing_groups(tracker, k=k, window=window)
    out["groups"] = found.summary()
    if found.best is not None:
        for side in ("a", "b"):
            name = getattr(found.best, side)
            out["curves"][f"found {name}"] = losses[:, found.group(name).positions].mean(1).tolist()
    return out, tracker
