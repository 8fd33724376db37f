"""A short, visible training loop for any method (SRigL, RigL, static, dense) on in-memory tensors."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.paperkit import progress, seed_everything

from .data import Split
from .models import build_model
from .sparsifier import METHODS, Sparsifier, make_sparsifier

__all__ = ["TrainConfig", "TrainResult", "train", "evaluate"]


@dataclass(frozen=True)
class TrainConfig:
    """One training run. Optimiser defaults are the paper's CIFAR recipe (SGD, lr 0.1, momentum 0.9, wd 5e-4,
    cosine decay, alpha 0.3, T_end = 0.75 of training, gamma_sal 0.3); the step counts are the CPU-scale digits
    plan (batch 64, 60 epochs, Delta T = 20 instead of 100, because a run has ~1400 steps, not ~100k)."""

    method: str = "srigl"
    sparsity: float = 0.9
    gamma_sal: float = 0.3
    distribution: str = "uniform"
    model: str = "mlp"
    hidden: tuple[int, ...] = (256, 256)
    epochs: int = 60
    batch_size: int = 64
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 5e-4
    delta_t: int = 20
    alpha: float = 0.3
    t_end_fraction: float = 0.75
    sparse_init: bool = True
    seed: int = 0
    exclude: tuple[str, ...] = field(default_factory=tuple)
    keep_first_layer_dense: bool = False
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        for n in ("epochs", "batch_size", "delta_t"):
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{n} must be a positive int, got {v!r}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a finite number > 0, got {self.lr!r}")

    def with_(self, **kw) -> TrainConfig:
        return replace(self, **kw)


@dataclass
class TrainResult:
    """Test accuracy, the trained model and its sparsifier, ablated hidden neurons, whether the invariants held."""

    accuracy: float
    model: nn.Module
    sparsifier: Sparsifier
    n_ablated: int
    invariants_ok: bool
    seconds: float
    steps: int
    config: dict
    log: list[dict] = field(default_factory=list)  # one row per mask update: step, density, ITOP, neurons


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 1024) -> float:
    """Top-1 accuracy of ``model`` on ``(x, y)`` (batches moved to the model's device)."""
    was = model.training
    model.eval()
    p = next(model.parameters(), None)
    dev = p.device if p is not None else x.device
    correct = sum(
        int((model(xb.to(dev)).argmax(-1).cpu() == yb.cpu()).sum())
        for xb, yb in zip(x.split(batch_size), y.split(batch_size))
    )
    model.train(was)
    return correct / len(y)


def train(config: TrainConfig, data: Split, show_progress: bool = False) -> TrainResult:
    """Train ``config.model`` with ``config.method`` on ``data``; returns test accuracy and the sparse model."""
    t0 = time.perf_counter()
    seed_everything(config.seed)
    dev = torch.device(config.device)
    model = build_model(config.model, data.input_shape, data.n_classes, config.hidden).to(dev)
    x_train, y_train = data.x_train.to(dev), data.y_train.to(dev)
    steps_per_epoch = math.ceil(len(data.y_train) / config.batch_size)
    total = steps_per_epoch * config.epochs
    opt = torch.optim.SGD(
        model.parameters(), lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay
    )
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    kw = dict(
        delta_t=config.delta_t,
        alpha=config.alpha,
        t_end_fraction=config.t_end_fraction,
        distribution=config.distribution,
        sparse_init=config.sparse_init,
        seed=config.seed,
        exclude=list(config.exclude),
        keep_first_layer_dense=config.keep_first_layer_dense,
    )
    if config.method == "srigl":
        kw["gamma_sal"] = config.gamma_sal
    sp = make_sparsifier(config.method, model, opt, config.sparsity, total, **kw)
    gen = torch.Generator().manual_seed(config.seed)
    ok = True
    log: list[dict] = []
    bar = progress(total=total, desc=f"{config.method} S={config.sparsity}", disable=not show_progress)
    for _ in range(config.epochs):
        perm = torch.randperm(len(data.y_train), generator=gen).to(dev)
        for idx in perm.split(config.batch_size):
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
            loss.backward()
            opt.step()
            sched.step()
            if sp.step():
                try:
                    sp.check_invariants()
                except RuntimeError:
                    ok = False
                log.append(
                    {
                        "step": sp.step_count,
                        "loss": float(loss.detach()),
                        "density": sp.density(),
                        "itop_rate": sp.itop_rate(),
                        "active_neurons": sp.active_neurons(),
                    }
                )
            bar.update(1)
    bar.close()
    try:
        sp.check_invariants()
    except RuntimeError:
        ok = False
    acc = evaluate(model, data.x_test, data.y_test)
    hidden_ablated = sum(layer.n_ablated for layer in sp.layers[:-1])
    return TrainResult(
        acc, model, sp, hidden_ablated, ok, time.perf_counter() - t0, total, asdict(config), log
    )
