"""Training an NCDE (and the GRU sanity reference) with full-batch Adam, as in the paper's experiments."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_choice
from iclr24.paperkit.errors import describe
from iclr24.paperkit.pretrained import PretrainedMixin
from iclr24.paperkit.resume import check_checkpoint_arg

from .model import NCDE
from .model import SOLVERS
from .paths import INTERPOLATIONS
from .paths import add_time_channel
from .paths import validate_series

__all__ = ["LOSSES", "FitResult", "GRUBaseline", "TrainConfig", "evaluate", "fit", "make_ncde"]

LOSSES = ("mse", "cross_entropy")


@dataclass(frozen=True)
class TrainConfig:
    """Defaults: the paper's synthetic regression (reconstructed): ``p = 8``, one hidden layer of width 32,
    RK4 with 2 substeps per interval, Adam from 1e-2 decayed geometrically to 1e-3 over 300 full-batch epochs."""

    hidden: int = 8
    width: int = 32
    depth: int = 1
    solver: str = "rk4"
    substeps: int = 2
    interpolation: str = "linear"
    epochs: int = 300
    lr: float = 1e-2
    lr_final: float = 1e-3
    batch_size: int | None = None  # None = full batch
    loss: str = "mse"
    standardize_targets: bool = (
        True  # mse only: fit (y - mean) / std, folded back into the readout afterwards
    )

    def __post_init__(self) -> None:
        for name in ("hidden", "width", "epochs", "substeps"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name} must be an int >= 1, got {v!r}")
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 0:
            raise InputError(f"depth must be an int >= 0, got {self.depth!r}")
        check_choice(self.solver, "solver", SOLVERS)
        check_choice(self.interpolation, "interpolation", INTERPOLATIONS)
        check_choice(self.loss, "loss", LOSSES)
        for name in ("lr", "lr_final"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
                raise InputError(f"{name} must be a positive number, got {v!r}")
        if self.batch_size is not None and (not isinstance(self.batch_size, int) or self.batch_size < 1):
            raise InputError(f"batch_size must be None (full batch) or an int >= 1, got {self.batch_size!r}")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class FitResult:
    model: nn.Module
    losses: list[float] = field(default_factory=list)
    steps: int = 0  # Adam steps taken


def make_ncde(input_channels: int, config: TrainConfig, output_dim: int = 1) -> NCDE:
    return NCDE(
        input_channels,
        config.hidden,
        config.width,
        config.depth,
        solver=config.solver,
        substeps=config.substeps,
        interpolation=config.interpolation,
        output_dim=output_dim,
    )


class GRUBaseline(PretrainedMixin, nn.Module):
    """A GRU on the raw samples ``(t_j, x_{t_j})`` (the usual discrete-time reference), last valid state -> linear."""

    def __init__(self, input_channels: int, hidden: int = 32, output_dim: int = 1) -> None:
        super().__init__()
        if isinstance(input_channels, bool) or not isinstance(input_channels, int) or input_channels < 1:
            raise InputError(f"input_channels must be an int >= 1, got {input_channels!r}")
        self.input_channels = input_channels
        self.gru = nn.GRU(input_channels + 1, hidden, batch_first=True)
        self.readout = nn.Linear(hidden, output_dim)

    def forward(self, times, values, lengths=None, mask=None) -> torch.Tensor:
        t, v, n = validate_series(
            times, values, lengths=lengths, mask=mask, input_channels=self.input_channels
        )
        w = self.readout.weight
        x = add_time_channel(t, v).to(w.device, w.dtype)
        h, _ = self.gru(x)
        last = h[torch.arange(h.shape[0], device=h.device), (n - 1).to(h.device)]
        return self.readout(last)


def _loss_fn(kind: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    if kind == "mse":
        return lambda out, y: ((out.squeeze(-1) - y) ** 2).mean()
    return lambda out, y: nn.functional.cross_entropy(out, y)


def _check_targets(targets: torch.Tensor, b: int, loss: str, training: bool = False) -> torch.Tensor:
    y = torch.as_tensor(targets)
    if y.shape != (b,):
        raise InputError(f"targets must have shape ({b},) to match the {b} series, got {tuple(y.shape)}")
    if loss == "cross_entropy":
        if y.is_floating_point():
            raise InputError("cross_entropy needs integer class labels, got floats")
        if y.numel() and int(y.min()) < 0:
            raise InputError(f"class labels must be indices >= 0, got {int(y.min())}")
        if training and torch.unique(y).numel() < 2:
            raise InputError(
                f"the training labels hold one class only ({int(y[0])}): a classifier needs at least two classes "
                "to learn anything (accuracy would be 1.0 by construction)"
            )
        return y.long()
    if not torch.isfinite(y.double()).all():
        raise InputError("targets must be finite")
    return y


def _user_series(times, values, targets, lengths, what: str):
    """``(times, values, targets, lengths)`` from a ``Dataset`` of ``(times, values, target)`` or ``(times, values,
    target, length)`` items, or a ``DataLoader`` of such batches (read once, in order; ``values``, ``targets`` and
    ``lengths`` must then be None). Tensors pass through; the tensor path needs ``values`` and ``targets``."""
    from iclr24.paperkit.data.user import as_tensors
    from iclr24.paperkit.data.user import is_user_data

    if is_user_data(times):
        if values is not None or targets is not None or lengths is not None:
            raise InputError(
                f"{what}: with a Dataset/DataLoader give values, targets and lengths as None: its items are "
                "(times, values, target[, length])"
            )
        parts = as_tensors(times, what=what)
        if len(parts) not in (3, 4):
            raise InputError(
                f"{what}: items must be (times, values, target) or (times, values, target, length), got "
                f"{len(parts)} fields"
            )
        return (*parts, None) if len(parts) == 3 else tuple(parts)
    if values is None or targets is None:
        raise InputError(f"{what}: give times, values and targets (or a Dataset/DataLoader as times)")
    return times, values, targets, lengths


def fit(
    model: nn.Module,
    times: torch.Tensor,
    values: torch.Tensor | None = None,
    targets: torch.Tensor | None = None,
    config: TrainConfig | None = None,
    *,
    lengths: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    seed: int = 0,
    on_epoch: Callable[[int, float], None] | None = None,
    callbacks: object = None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
) -> FitResult:
    """Adam, lr decayed geometrically from ``config.lr`` to ``config.lr_final``; full batch unless ``batch_size``.

    Under ``torchrun`` (process group initialised) the batch is split over the processes (data parallel).

    ``times`` may be your ``Dataset`` of ``(times, values, target[, length])`` items or ``DataLoader`` of such
    batches, with ``values``/``targets`` None (read once, in order: the same fit as the tensors). ``config`` None
    is ``TrainConfig()``. ``callbacks`` / ``log_dir``: one :class:`~iclr24.paperkit.tracking.StepLog` gets ``loss``
    after every Adam step and ``epoch_loss`` and ``lr`` after every epoch, in the targets' units (``log_dir`` on
    the main process only). ``checkpoint``: a file written after every epoch (model, Adam, the schedule, the
    batch-order generator, the losses); with ``resume=True`` an existing one is continued, so an interrupted fit
    resumed ends bit for bit as the uninterrupted one."""
    from iclr24.paperkit.resume import load_train_state
    from iclr24.paperkit.resume import save_train_state
    from iclr24.paperkit.tracking import StepLog

    if not isinstance(model, torch.nn.Module) or next(iter(model.parameters()), None) is None:
        raise InputError(f"model must be an nn.Module with parameters (an NCDE), got {describe(model)}")
    config = TrainConfig() if config is None else config
    if not isinstance(config, TrainConfig):
        raise InputError(f"config must be a TrainConfig, got {describe(config)}")
    times, values, targets, lengths = _user_series(times, values, targets, lengths, "training series")
    check_checkpoint_arg(checkpoint, resume)
    validate_series(
        times, values, lengths=lengths, mask=mask, input_channels=getattr(model, "input_channels", None)
    )
    v = values if values.dim() == 3 else values.unsqueeze(0)
    b = v.shape[0]
    w = next(model.parameters())
    y = _check_targets(targets, b, config.loss, training=True).to(w.device)
    mu, sd = 0.0, 1.0
    if config.loss == "mse":
        y = y.to(w.dtype)
        if config.standardize_targets and b > 1:
            mu, sd = float(y.mean()), float(y.std()) or 1.0
            y = (y - mu) / sd
    t = times if times.dim() == 2 else times.unsqueeze(0).expand(b, -1)
    n = torch.full((b,), v.shape[1]) if lengths is None else torch.as_tensor(lengths)
    m = mask
    # data parallel under torchrun: every rank holds all series, takes every world-th one of each batch, and the
    # gradients are averaged; parameters start equal (broadcast from rank 0). A no-op in a single process.
    from iclr24.paperkit.distributed import all_reduce_mean
    from iclr24.paperkit.distributed import broadcast_
    from iclr24.paperkit.distributed import is_distributed

    world, rank = 1, 0
    if is_distributed():
        import torch.distributed as dist

        world, rank = dist.get_world_size(), dist.get_rank()
        for p in model.parameters():
            broadcast_(p.data)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=config.lr)
    gamma = (config.lr_final / config.lr) ** (1.0 / max(config.epochs - 1, 1))
    # geometric decay: lr at epoch e = lr * gamma**e, so the last epoch's lr = lr_final
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: gamma**e)
    loss_fn = _loss_fn(config.loss)
    g = torch.Generator().manual_seed(seed)
    bs = config.batch_size or b
    res = FitResult(model)
    meta = {"config": config.to_dict(), "series": b, "seed": int(seed), "world": world}
    first, step = 0, 0
    if resume and Path(checkpoint).exists():
        saved: dict = {}
        first = load_train_state(
            checkpoint, model=model, optimizer=opt, scheduler=sched, generators={"order": g}, expect=meta,
            into=saved, what="ncde-bounds training state",
        )  # fmt: skip
        res.losses, step = [float(x) for x in saved["losses"]], int(saved["step"])
    log = StepLog(log_dir if rank == 0 else None, callbacks, name="ncde_bounds")
    model.train()
    try:
        for epoch in range(first, config.epochs):
            order = torch.randperm(b, generator=g) if bs < b else torch.arange(b)
            total = 0.0
            for start in range(0, b, bs):
                i = order[start : start + bs]
                if world > 1:
                    if len(i) < world:
                        raise InputError(f"a batch of {len(i)} series cannot be split over {world} processes")
                    i = i[rank::world]
                out = model(t[i], v[i], n[i], None if m is None else m[i])
                loss = loss_fn(out, y[i.to(y.device)])
                opt.zero_grad()
                loss.backward()
                if world > 1:
                    for p in model.parameters():
                        if p.grad is not None:
                            all_reduce_mean(p.grad)
                    loss = all_reduce_mean(loss.detach().clone())
                opt.step()
                value = float(loss.detach())
                total += value * len(order[start : start + bs])
                step += 1
                log(step, {"loss": value * sd * sd})
            lr = opt.param_groups[0]["lr"]  # this epoch's step size
            sched.step()
            res.losses.append(total / b)
            log(step, {"epoch_loss": res.losses[-1] * sd * sd, "lr": lr, "epoch": epoch})
            if checkpoint is not None and rank == 0:
                save_train_state(
                    checkpoint, step=epoch + 1, model=model, optimizer=opt, scheduler=sched, generators={"order": g},
                    meta=meta, extra={"losses": res.losses, "step": step},
                )  # fmt: skip
            if on_epoch is not None:
                on_epoch(epoch, res.losses[-1] * sd * sd)
        log.close({"final_loss": res.losses[-1] * sd * sd, "steps": step} if res.losses else None)
    finally:
        log.close()
    res.steps = step
    res.losses = [x * sd * sd for x in res.losses]
    if (mu, sd) != (0.0, 1.0):
        # fold the target scaling into the linear readout: y^ = sd * (theta^T z_1 + c) + mu
        with torch.no_grad():
            readout = model.readout
            readout.weight.mul_(sd)
            readout.bias.mul_(sd).add_(mu)
    model.eval()
    return res


@torch.no_grad()
def evaluate(
    model: nn.Module,
    times: torch.Tensor,
    values: torch.Tensor | None = None,
    targets: torch.Tensor | None = None,
    *,
    loss: str = "mse",
    lengths: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
) -> dict[str, float]:
    """``{"loss": ...}`` (and ``"accuracy"`` for classification) on the given series (tensors, or a Dataset /
    DataLoader of ``(times, values, target[, length])`` as ``times``)."""
    check_choice(loss, "loss", LOSSES)
    times, values, targets, lengths = _user_series(times, values, targets, lengths, "evaluation series")
    model.eval()
    out = model(times, values, lengths, mask)
    y = _check_targets(targets, out.shape[0], loss).to(out.device)
    if loss == "mse":
        y = y.to(out.dtype)
    res = {"loss": float(_loss_fn(loss)(out, y))}
    if loss == "cross_entropy":
        res["accuracy"] = float((out.argmax(-1) == y).float().mean())
    return res
