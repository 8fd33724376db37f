"""Training and evaluation (official ``main.py``): CE on the time-averaged logits, SGD + cosine annealing.

Runs in one process or under ``torchrun`` (each rank takes a shard of every epoch through paperkit's
``distributed_sampler``; gradients are averaged by DDP).
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from dataclasses import fields
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe
from iclr24.paperkit.resume import check_checkpoint_arg

from .data import TemporalData
from .model import SpikingMLP
from .neurons import firing_rates

__all__ = ["cosine_sgd", "TrainConfig", "TrainResult", "crop_flip", "evaluate", "train_model", "train_on"]


def crop_flip(
    x: torch.Tensor, generator: torch.Generator, pad: int = 4, fill: Sequence[float] | None = None
) -> torch.Tensor:
    """The official CIFAR/DVS augmentation on a batch ``[B, ..., C, H, W]``: random crop after padding by ``pad``,
    and a horizontal flip with probability 1/2 (one crop and flip per sample, shared over time steps).

    ``fill`` (one value per channel) is what the padding holds: the official loaders pad the raw image with zeros
    *before* normalising, so on normalised inputs a padded pixel is ``-mean / std`` (:attr:`TemporalData.pad_fill`);
    ``None`` pads with 0 (unnormalised inputs such as DVS frames)."""
    B, H, W = x.shape[0], x.shape[-2], x.shape[-1]
    if fill is None:
        padded = F.pad(x, (pad, pad, pad, pad))
    else:
        f = torch.as_tensor(fill, dtype=x.dtype, device=x.device)
        if f.dim() != 1 or x.dim() < 3 or f.numel() != x.shape[-3]:
            raise InputError(f"fill needs one value per channel ({x.shape[-3]}), got {tuple(f.shape)}")
        f = f.reshape(-1, 1, 1)
        padded = F.pad(x - f, (pad, pad, pad, pad)) + f
    dy = torch.randint(0, 2 * pad + 1, (B,), generator=generator).tolist()
    dx = torch.randint(0, 2 * pad + 1, (B,), generator=generator).tolist()
    flip = torch.rand(B, generator=generator) < 0.5
    out = torch.stack([padded[i, ..., dy[i] : dy[i] + H, dx[i] : dx[i] + W] for i in range(B)])
    return torch.where(flip.reshape(B, *([1] * (x.dim() - 1))).to(x.device), out.flip(-1), out)


@dataclass(frozen=True)
class TrainConfig:
    """Defaults are the official ``main.py``'s (VGG-9 on CIFAR-10: 200 epochs, batch 64, seed 42)."""

    epochs: int = 200
    batch_size: int = 64
    lr: float = 0.02
    momentum: float = 0.9
    weight_decay: float = 5e-4
    seed: int = 42

    def __post_init__(self) -> None:
        check_int(self.epochs, "epochs", minimum=1, maximum=10**6)
        check_int(self.batch_size, "batch_size", minimum=1, maximum=2**31)
        check_int(self.seed, "seed", minimum=0, maximum=2**63 - 1)
        check_float(self.lr, "lr", minimum=0, maximum=1e6, open_min=True)
        check_float(self.momentum, "momentum", minimum=0, maximum=1, open_max=True)
        check_float(self.weight_decay, "weight_decay", minimum=0, maximum=1e6)


def cosine_sgd(
    params, lr: float, momentum: float, weight_decay: float, total_steps: int
) -> tuple[torch.optim.SGD, torch.optim.lr_scheduler.CosineAnnealingLR]:
    """``torch.optim.SGD(lr, momentum, weight_decay)`` (no dampening, no Nesterov) and
    ``CosineAnnealingLR(T_max=total_steps, eta_min=0)``, to be stepped once per batch."""
    opt = torch.optim.SGD(
        [p for p in params if p.requires_grad], lr=lr, momentum=momentum, weight_decay=weight_decay
    )
    return opt, torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(int(total_steps), 1), eta_min=0.0)


@dataclass
class TrainResult:
    test_acc: float  # % on the test split after the last epoch (never the best epoch: no selection on test)
    train_loss: list[float] = field(default_factory=list)
    firing_rate: dict[str, float] = field(default_factory=dict)
    firing_rate_per_step: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0
    steps: int = 0  # SGD steps taken (this process's, under torchrun)
    model: nn.Module | None = field(default=None, repr=False, compare=False)  # the trained network (train_on)

    def to_dict(self) -> dict:
        """The numbers (not the model) as plain data."""
        return {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self) if f.name != "model"}


def _check_data(x: torch.Tensor, y: torch.Tensor, what: str) -> None:
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise InputError(f"{what}: expected tensors, got {type(x).__name__} and {type(y).__name__}")
    if not x.is_floating_point():
        raise InputError(f"{what}: the inputs must be floating point, got {x.dtype}")
    if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool or y.dim() != 1:
        raise InputError(f"{what}: the labels must be a 1-D integer tensor, got {describe(y)}")
    if len(x) == 0:
        raise InputError(f"{what}: the split is empty")
    if len(x) != len(y):
        raise InputError(f"{what}: {len(x)} inputs but {len(y)} labels")
    if not bool(torch.isfinite(x).all()):
        raise InputError(f"{what}: the inputs contain NaN or inf values")


def _check_cfg(cfg: TrainConfig | None) -> TrainConfig:
    if cfg is None:
        return TrainConfig()
    if not isinstance(cfg, TrainConfig):
        raise InputError(f"cfg must be a TrainConfig, got {describe(cfg)}")
    return cfg


def _user_split(x: object, y: object, what: str) -> tuple[object, object]:
    """``(inputs, labels)`` from a ``Dataset`` of ``(x, label)`` items or a ``DataLoader`` of such batches (read
    once, in its order; ``y`` must then be None); tensors pass through."""
    from iclr24.paperkit.data.user import as_tensors
    from iclr24.paperkit.data.user import is_user_data

    if is_user_data(x):
        if y is not None:
            raise InputError(f"{what}: give its labels as None with a Dataset/DataLoader of (x, label) pairs")
        return as_tensors(x, fields=2, what=what)
    return x, y


def _check_task(data: TemporalData) -> None:
    if not isinstance(data, TemporalData):
        raise InputError(f"data must be a TemporalData, got {describe(data)}")


@torch.no_grad()
def evaluate(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, batch_size: int = 512, device="cpu"
) -> float:
    """Accuracy (%) of ``argmax_c mean_t logits[:, t, c]`` in eval mode (running statistics)."""
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be an nn.Module, got {describe(model)}")
    check_int(batch_size, "batch_size", minimum=1, maximum=2**31)
    _check_data(x, y, "evaluate")
    model.eval()
    correct = 0
    for i in range(0, len(x), batch_size):
        out = model(x[i : i + batch_size].to(device)).mean(1)
        correct += int((out.argmax(1).cpu() == y[i : i + batch_size]).sum())
    return 100.0 * correct / len(x)


def train_model(
    model: nn.Module,
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
    cfg: TrainConfig | None = None,
    *,
    device: str | torch.device = "cpu",
    progress: bool = True,
    desc: str = "train",
    augment: bool = False,
    pad_fill: Sequence[float] | None = None,
    callbacks: object = None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
) -> TrainResult:
    """Train ``model`` (which returns ``[N, T, classes]``) with CE(mean_t logits) and report test accuracy.

    SGD(lr, momentum, weight decay on all parameters) with cosine annealing to 0, stepped every batch
    (``torch.optim.SGD`` + ``CosineAnnealingLR``, :func:`cosine_sgd`).
    Under ``torchrun`` the model is wrapped in DDP and each rank trains on its shard. ``augment``: random crop
    (pad 4) and flip of image inputs (:func:`crop_flip`), as the official CIFAR/DVS loaders; ``pad_fill``: what
    the padding holds on normalised inputs (the data's :attr:`TemporalData.pad_fill`).

    ``x_train`` / ``x_test`` may be your ``Dataset`` of ``(x, label)`` items or ``DataLoader`` of such batches,
    with ``y_train`` / ``y_test`` None (read once, in order: the same training as the tensors). ``callbacks`` /
    ``log_dir``: one :class:`~iclr24.paperkit.tracking.StepLog` gets ``loss`` and ``lr`` after every SGD step and
    ``train_loss`` after every epoch (``log_dir`` on the main process only: ``metrics.jsonl``, TensorBoard files
    when installed). ``checkpoint``: a file written after every epoch (model with its running statistics, SGD,
    the cosine schedule, the shuffling and augmentation generators, torch's RNG); with ``resume=True`` an
    existing one is continued, so an interrupted run resumed ends bit for bit as the uninterrupted one (on the
    CPU; under torchrun every rank resumes from the main process's file).
    """
    from iclr24.paperkit import progress as pbar
    from iclr24.paperkit.resume import load_train_state
    from iclr24.paperkit.resume import save_train_state
    from iclr24.paperkit.tracking import StepLog

    cfg = _check_cfg(cfg)
    from iclr24.paperkit.distributed import distributed_sampler
    from iclr24.paperkit.distributed import init_distributed
    from iclr24.paperkit.distributed import wrap_ddp

    if not isinstance(model, nn.Module):
        raise InputError(f"model must be an nn.Module, got {describe(model)}")
    x_train, y_train = _user_split(x_train, y_train, "train split")
    x_test, y_test = _user_split(x_test, y_test, "test split")
    _check_data(x_train, y_train, "train split")
    _check_data(x_test, y_test, "test split")
    check_checkpoint_arg(checkpoint, resume)
    t0 = time.perf_counter()
    info = init_distributed(device=str(device))
    dev = info.device if info.world_size > 1 else torch.device(device)
    net = wrap_ddp(model, info) if info.world_size > 1 else model.to(dev)
    if info.world_size > 1:
        sampler = distributed_sampler(range(len(x_train)), shuffle=True, seed=cfg.seed)
        n_local = len(sampler)
    else:  # one seeded permutation per epoch (what :func:`.packed.train_packed` reproduces)
        sampler, n_local, gen = None, len(x_train), torch.Generator().manual_seed(cfg.seed)
    steps_per_epoch = -(-n_local // cfg.batch_size)
    opt, sched = cosine_sgd(
        net.parameters(), cfg.lr, cfg.momentum, cfg.weight_decay, cfg.epochs * steps_per_epoch
    )
    result = TrainResult(test_acc=float("nan"))
    aug_gen = torch.Generator().manual_seed(cfg.seed + 1)
    gens = {"augment": aug_gen, **({"shuffle": gen} if sampler is None else {})}
    meta = {
        "config": asdict(cfg),
        "n_train": len(x_train),
        "augment": bool(augment),
        "world": info.world_size,
    }
    first, step = 0, 0
    if resume and Path(checkpoint).exists():
        saved: dict = {}
        first = load_train_state(
            checkpoint, model=model, optimizer=opt, scheduler=sched, generators=gens, expect=meta, into=saved,
            what="tab-snn training state",
        )  # fmt: skip
        result.train_loss, step = [float(v) for v in saved["train_loss"]], int(saved["step"])
    main = info.rank == 0
    log = StepLog(log_dir if main else None, callbacks, name="tab_snn")
    try:
        bar = pbar(range(first, cfg.epochs), desc=desc, disable=None if progress else True)
        for epoch in bar:
            if sampler is not None:
                sampler.set_epoch(epoch)
                idx = torch.as_tensor(list(iter(sampler)), dtype=torch.long)
            else:
                idx = torch.randperm(len(x_train), generator=gen)
            net.train()
            total, n = 0.0, 0
            for b in range(0, len(idx), cfg.batch_size):
                sel = idx[b : b + cfg.batch_size]
                xb, yb = x_train[sel], y_train[sel].to(dev)
                if augment:
                    xb = crop_flip(xb, aug_gen, fill=pad_fill)
                xb = xb.to(dev)
                loss = F.cross_entropy(net(xb).mean(1), yb)
                opt.zero_grad()
                loss.backward()
                lr = opt.param_groups[0]["lr"]  # the step size of this step
                opt.step()
                sched.step()
                value = loss.item()
                total += value * len(sel)
                n += len(sel)
                step += 1
                log(step, {"loss": value, "lr": lr})
            result.train_loss.append(total / max(n, 1))
            log(step, {"train_loss": result.train_loss[-1], "epoch": epoch})
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{result.train_loss[-1]:.3f}")
            if checkpoint is not None and main:
                save_train_state(
                    checkpoint, step=epoch + 1, model=model, optimizer=opt, scheduler=sched, generators=gens,
                    meta=meta, extra={"train_loss": result.train_loss, "step": step},
                )  # fmt: skip
        result.test_acc = evaluate(model, x_test, y_test, device=dev)
        log.close({"test_acc": result.test_acc, "steps": step})
    finally:
        log.close()
    result.steps = step
    result.firing_rate = firing_rates(model)
    result.firing_rate_per_step = firing_rates(model, per_step=True)
    result.seconds = time.perf_counter() - t0
    return result


def train_on(
    data: TemporalData,
    norm: str,
    cfg: TrainConfig | None = None,
    *,
    hidden: tuple[int, ...] = (128, 128),
    tau: float = 0.9,
    v_th: float = 1.0,
    gamma: float = 1.0,
    device: str = "cpu",
    progress: bool = True,
    callbacks: object = None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
) -> TrainResult:
    """Seed, build this package's :class:`SpikingMLP` with ``norm`` for ``data`` and train it; the trained network
    is ``result.model`` (``result.model.save_pretrained(dir)``). ``callbacks``, ``log_dir``, ``checkpoint`` and
    ``resume`` as in :func:`train_model`."""
    from iclr24.paperkit import seed_everything

    _check_task(data)
    cfg = _check_cfg(cfg)
    seed_everything(cfg.seed)
    model = SpikingMLP(
        data.in_features, data.num_classes, data.T, hidden=hidden, norm=norm, tau=tau, v_th=v_th, gamma=gamma
    )
    result = train_model(
        model,
        data.x_train,
        data.y_train,
        data.x_test,
        data.y_test,
        cfg,
        device=device,
        progress=progress,
        desc=f"{data.name} {norm} seed {cfg.seed}",
        callbacks=callbacks,
        log_dir=log_dir,
        checkpoint=checkpoint,
        resume=resume,
    )
    result.model = model
    return result
