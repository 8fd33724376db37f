"""A short, visible training loop (full-batch GD, minibatch SGD, Adam) with loss tracking and sharpness.

    GD / SGD:   theta_{t+1} = theta_t - eta (grad L_B(theta_t) + beta m_t)      (heavy ball, ``momentum=beta``)
    Adam:       theta_{t+1} = theta_t - eta m_hat_t / (sqrt(v_hat_t) + eps)     (torch.optim.Adam)

``B`` is the full training set for ``"gd"`` and a random minibatch for ``"sgd"``. The recorded training loss at
step ``t`` is ``L(theta_t)`` over the full training set, taken from the step's own forward pass under GD.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from .hessian import sharpness as _sharpness
from .hessian import trainable_parameters
from .tracking import LossTracker, _check_loss, mean_loss, per_example_loss

__all__ = ["OPTIMIZERS", "TrainConfig", "History", "make_mlp", "train"]

OPTIMIZERS = ("gd", "sgd", "adam")


def make_mlp(
    d_in: int = 64, width: int = 128, depth: int = 3, n_classes: int = 10, seed: int = 0
) -> nn.Sequential:
    """ReLU MLP ``d_in -> width x depth -> n_classes`` with torch's default initialisation under ``seed``."""
    for name, v in (("d_in", d_in), ("width", width), ("depth", depth), ("n_classes", n_classes)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    g = torch.random.fork_rng()
    with g:
        torch.manual_seed(seed)
        layers: list[nn.Module] = []
        prev = d_in
        for _ in range(depth):
            layers += [nn.Linear(prev, width), nn.ReLU()]
            prev = width
        layers.append(nn.Linear(prev, n_classes))
        return nn.Sequential(*layers)


@dataclass(frozen=True)
class TrainConfig:
    """One training run. Defaults: the CPU calibration of the paper's full-batch GD / MSE setting (Sec. 2)."""

    optimizer: str = "gd"
    lr: float = 0.3
    steps: int = 1500
    loss: str = "mse"
    momentum: float = 0.0
    batch_size: int | None = None
    sharpness_every: int = 50
    sharpness_iters: int = 20
    sharpness_method: str = "power"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if (
            isinstance(self.lr, bool)
            or not isinstance(self.lr, int | float)
            or not (self.lr > 0 and math.isfinite(self.lr))
        ):
            raise ValueError(f"lr must be a positive finite number, got {self.lr!r}")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1:
            raise ValueError(f"steps must be an int >= 1, got {self.steps!r}")
        _check_loss(self.loss)
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")
        if self.optimizer == "sgd" and (self.batch_size is None or self.batch_size < 1):
            raise ValueError(f"optimizer 'sgd' needs batch_size >= 1, got {self.batch_size!r}")
        if self.sharpness_every < 0 or self.sharpness_iters < 1:
            raise ValueError("sharpness_every must be >= 0 (0 = never) and sharpness_iters >= 1")


@dataclass
class History:
    """What a run recorded: ``loss[t] = L(theta_t)``, ``sharpness`` at ``sharpness_steps``, the config."""

    config: TrainConfig
    loss: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    sharpness: list[float] = field(default_factory=list)
    sharpness_steps: list[int] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {
            "config": self.config.__dict__,
            "loss": self.loss,
            "accuracy": self.accuracy,
            "sharpness": self.sharpness,
            "sharpness_steps": self.sharpness_steps,
            "seconds": self.seconds,
        }


def _check_xy(x: object, y: object) -> tuple[Tensor, Tensor]:
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        raise ValueError(f"X and y must be tensors, got {type(x).__name__} and {type(y).__name__}")
    if x.ndim < 2 or y.ndim != 1 or x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(
            f"expected X (N, ...) and integer labels y (N,), got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    if not torch.isfinite(x).all():
        raise ValueError("X contains NaN or inf")
    return x, y


def train(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    config: TrainConfig | None = None,
    tracker: LossTracker | None = None,
    callbacks: Sequence[Callable[[int, nn.Module, History], None]] = (),
    progress: Callable[[int], None] | None = None,
    **overrides,
) -> History:
    """Train ``model`` on ``(x, y)``; ``config`` fields can be overridden by keyword (``lr=0.1``).

    Each step ``t``: the loss at ``theta_t`` is recorded (and handed to ``tracker`` without a second forward pass
    under GD when the tracker follows this data), sharpness every ``sharpness_every`` steps, ``callbacks(t, model,
    history)`` run, then the update. A non-finite loss stops training with the step where it happened.
    """
    cfg = config or TrainConfig()
    if overrides:
        cfg = TrainConfig(**{**cfg.__dict__, **overrides})
    x, y = _check_xy(x, y)
    params = list(trainable_parameters(model).values())
    loss_fn = mean_loss(cfg.loss)
    if cfg.optimizer == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(params, lr=cfg.lr)
    else:
        opt = torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum)
    hist = History(cfg)
    share = tracker is not None and tracker.x is x and cfg.optimizer in ("gd", "adam")
    g = torch.Generator().manual_seed(cfg.seed)
    import time

    t0 = time.perf_counter()
    model.train()
    for t in range(cfg.steps + 1):
        if cfg.sharpness_every and t % cfg.sharpness_every == 0:
            hist.sharpness.append(
                _sharpness(model, loss_fn, (x, y), iters=cfg.sharpness_iters, method=cfg.sharpness_method)
            )
            hist.sharpness_steps.append(t)
        full_batch = cfg.optimizer != "sgd"
        if full_batch:
            out = model(x)
            per = per_example_loss(out, y, cfg.loss)
            loss = per.mean()
        else:
            with torch.no_grad():
                out = model(x)
                per = per_example_loss(out, y, cfg.loss)
        lval = float(per.detach().mean())
        if not math.isfinite(lval):
            raise ValueError(
                f"training loss became non-finite at step {t} (lr={cfg.lr}); lower the learning rate"
            )
        hist.loss.append(lval)
        hist.accuracy.append(float((out.argmax(1) == y).float().mean()))
        if tracker is not None:
            tracker.record(t, per if share else None)
        for cb in callbacks:
            cb(t, model, hist)
        if progress is not None:
            progress(t)
        if t == cfg.steps:
            break
        opt.zero_grad(set_to_none=True)
        if not full_batch:
            idx = torch.randperm(x.shape[0], generator=g)[: cfg.batch_size]
            loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
    hist.seconds = time.perf_counter() - t0
    return hist
