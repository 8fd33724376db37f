"""A short, visible training loop for any method (SRigL, RigL, static, dense) on in-memory tensors."""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.paperkit import progress
from iclr24.paperkit import seed_everything
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe

from .data import Split
from .model import SparseModel
from .model import build_model
from .sparsifier import METHODS
from .sparsifier import Sparsifier
from .sparsifier import make_sparsifier

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
    # the official training config group (configs/training/*.yaml): schedule, warm-up, smoothing, augmentation
    scheduler: str = "cosine"  # "cosine" (cosine_annealing_with_warm_up) or "step" (step_lr_with_warm_up)
    warmup_epochs: int = 0  # linear warm-up from lr / (steps) to lr
    milestones: tuple[int, ...] = (77, 154, 231)  # step: epochs at which lr *= gamma
    gamma: float = 0.2
    label_smoothing: float = 0.0
    augment: bool = False  # images: random 32x32 crop after 4-pixel zero padding + horizontal flip

    def __post_init__(self) -> None:
        if self.scheduler not in ("cosine", "step"):
            raise InputError(f"scheduler must be 'cosine' or 'step', got {self.scheduler!r}")
        if (
            isinstance(self.warmup_epochs, bool)
            or not isinstance(self.warmup_epochs, int)
            or self.warmup_epochs < 0
        ):
            raise InputError(f"warmup_epochs must be an int >= 0, got {self.warmup_epochs!r}")
        if self.warmup_epochs >= self.epochs:
            raise InputError(f"warmup_epochs ({self.warmup_epochs}) must be below epochs ({self.epochs})")
        if not 0 <= self.label_smoothing < 1:
            raise InputError(f"label_smoothing must be in [0, 1), got {self.label_smoothing!r}")
        if not 0 < self.gamma <= 1:
            raise InputError(f"gamma must be in (0, 1], got {self.gamma!r}")
        if self.method not in METHODS:
            raise InputError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        for n in ("epochs", "batch_size", "delta_t"):
            check_int(getattr(self, n), n, minimum=1, maximum=10**7)
        check_int(self.seed, "seed", minimum=0, maximum=2**32 - 1)
        check_float(self.lr, "lr", minimum=0, maximum=100, open_min=True)
        check_float(self.sparsity, "sparsity", minimum=0, maximum=1, open_max=True)
        for n in ("gamma_sal", "momentum", "weight_decay"):
            check_float(getattr(self, n), n, minimum=0)
        for n in ("alpha", "t_end_fraction"):
            check_float(getattr(self, n), n, minimum=0, maximum=1)
        if isinstance(self.hidden, str | bytes) or not all(
            isinstance(h, int) and not isinstance(h, bool) and 1 <= h <= 2**17 for h in self.hidden
        ):
            raise InputError(f"hidden must be layer widths in [1, 2**17], got {self.hidden!r}")

    def with_(self, **kw) -> TrainConfig:
        return replace(self, **kw)


#: The official CIFAR-10 run (configs/training/resnet18.yaml, rigl/resnet18.yaml): SGD lr 0.1, momentum 0.9, wd 5e-4,
#: batch 128, 250 epochs, cosine with no warm-up, no label smoothing, ERK, Delta T = 100, crop + flip.
CIFAR10_RECIPE = TrainConfig(
    model="timm:resnet18", distribution="erk", epochs=250, batch_size=128, delta_t=100, augment=True
)
#: The official ImageNet schedule shape (configs/training/resnet50*.yaml): lr 0.2 at batch 512, wd 1e-4, label
#: smoothing 0.1, 5 warm-up epochs, steps at epochs 30/70/90 by 0.1 (the paper's 100-epoch-equivalent run).
IMAGENET_RECIPE = TrainConfig(
    model="timm:resnet50",
    distribution="erk",
    epochs=100,
    batch_size=512,
    lr=0.2,
    weight_decay=1e-4,
    delta_t=100,
    scheduler="step",
    warmup_epochs=5,
    milestones=(30, 70, 90),
    gamma=0.1,
    label_smoothing=0.1,
    augment=True,
)


def lr_lambda(config: TrainConfig, steps_per_epoch: int):
    """The multiplier of ``config.lr`` at optimiser step ``t`` (0-based): linear warm-up over ``warmup_epochs``,
    then cosine annealing to 0 over the rest, or ``gamma`` at each milestone epoch (the official
    ``cosine_annealing_with_warm_up`` / ``step_lr_with_warm_up`` schedulers)."""
    total = steps_per_epoch * config.epochs
    warm = steps_per_epoch * config.warmup_epochs
    marks = [steps_per_epoch * m for m in config.milestones]

    def f(t: int) -> float:
        if t < warm:
            return (t + 1) / warm
        if config.scheduler == "cosine":
            return 0.5 * (1.0 + math.cos(math.pi * (t - warm) / max(total - warm, 1)))
        return config.gamma ** sum(t >= m for m in marks)

    return f


def augment_batch(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Random crop of the original size after 4-pixel zero padding, and a horizontal flip with p = 1/2, per image
    (the official CIFAR-10 train transform); ``x`` is ``[B, C, H, W]``."""
    b, _, h, w = x.shape
    padded = F.pad(x, (4, 4, 4, 4))
    dy = torch.randint(0, 9, (b,), generator=generator)
    dx = torch.randint(0, 9, (b,), generator=generator)
    flip = torch.rand(b, generator=generator) < 0.5
    out = torch.stack([padded[i, :, dy[i] : dy[i] + h, dx[i] : dx[i] + w] for i in range(b)])
    out[flip] = out[flip].flip(-1)
    return out


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
    input_shape: tuple[int, ...] = ()  # of one sample
    n_classes: int = 0
    resumed_from_epoch: int | None = None  # the epoch a resumed run continued after (None: from the start)

    def sparse_model(self) -> SparseModel:
        """The trained network and its masks as a :class:`SparseModel` (a copy; ``save_pretrained`` ready)."""
        if not self.input_shape or not self.n_classes:
            raise InputError("this TrainResult does not record its data's input_shape/n_classes")
        return SparseModel.from_trained(
            self.model,
            self.sparsifier,
            model=self.config["model"],
            input_shape=self.input_shape,
            n_classes=self.n_classes,
            hidden=tuple(self.config["hidden"]),
        )

    def save_pretrained(self, folder: str | os.PathLike, *, provenance: dict | None = None) -> Path:
        """Write the model folder (:class:`SparseModel`: weights and masks in ``model.safetensors``,
        ``config.json``, ``provenance.json`` with the training config, steps, accuracy and density)."""
        prov = {
            "steps": self.steps,
            "seed": self.config["seed"],
            "train_config": self.config,
            "test_accuracy": self.accuracy,
            "density": self.sparsifier.density(),
            "ablated_hidden_neurons": self.n_ablated,
            "invariants_ok": self.invariants_ok,
            "mask_updates": self.log,
            **(provenance or {}),
        }
        return self.sparse_model().save_pretrained(folder, provenance=prov)


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 1024) -> float:
    """Top-1 accuracy of ``model`` on ``(x, y)`` (batches moved to the model's device)."""
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be an nn.Module, got {describe(model)}")
    check_tensor(x, "x", kind="float")
    check_tensor(y, "y", ndim=1, kind="int")
    if len(x) != len(y) or x.dim() < 2:
        raise InputError(
            f"x must be [N, ...] samples with one label each in y [N], got {describe(x)} and {describe(y)}"
        )
    check_int(batch_size, "batch_size", minimum=1, maximum=2**31)
    p0 = next(model.parameters(), None)
    if p0 is not None and p0.dtype != x.dtype:
        raise InputError(f"x is {x.dtype} but the model's weights are {p0.dtype}: convert one")
    was = model.training
    model.eval()
    p = next(model.parameters(), None)
    dev = p.device if p is not None else x.device
    try:
        correct = sum(
            int((model(xb.to(dev)).argmax(-1).cpu() == yb.cpu()).sum())
            for xb, yb in zip(x.split(batch_size), y.split(batch_size))
        )
    except RuntimeError as e:
        if isinstance(e, torch.OutOfMemoryError):
            raise
        model.train(was)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"the model cannot take inputs of shape {tuple(x.shape[1:])} ({first})") from None
    model.train(was)
    return correct / len(y)


def train(
    config: TrainConfig,
    data: Split | tuple,
    show_progress: bool = False,
    *,
    callbacks: Any = None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
) -> TrainResult:
    """Train ``config.model`` with ``config.method`` on ``data``; returns test accuracy and the sparse model.

    ``data``: a :class:`Split`, or ``(train, test)`` with each an ``(x, y)`` pair of tensors, a ``Dataset`` or a
    ``DataLoader`` (:meth:`Split.from_data`: the same tensors, so the same run). ``callbacks`` (``f(step,
    metrics)`` or objects with ``on_step``/``on_end``) and ``log_dir`` (``metrics.jsonl``, TensorBoard when
    installed) get every step's loss and lr, and density, ITOP rate and active neurons at each mask update.
    ``checkpoint``: a training-state file written after every epoch (model, SGD, schedule, sparsifier, data and
    augmentation generators, RNG states); with ``resume=True`` and that file present the run continues from it and
    ends bit for bit as the uninterrupted run (a state of other settings is refused)."""
    from iclr24.paperkit.resume import load_train_state
    from iclr24.paperkit.resume import save_train_state
    from iclr24.paperkit.tracking import StepLog

    if not isinstance(config, TrainConfig):
        raise InputError(f"config must be a TrainConfig, got {describe(config)}")
    if isinstance(data, tuple) and len(data) == 2:
        data = Split.from_data(*data)
    if not isinstance(data, Split):
        raise InputError(
            f"data must be a Split (load_data, digits_split) or a (train, test) pair of tensors/Datasets/"
            f"DataLoaders, got {describe(data)}"
        )
    ck_path = Path(checkpoint) if checkpoint is not None else None
    if ck_path is not None and ck_path.is_dir():
        raise InputFileError(f"checkpoint {ck_path} is a folder; give a file path such as {ck_path}/state.pt")
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
    if config.scheduler == "cosine" and config.warmup_epochs == 0:
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(config, steps_per_epoch))
    if config.augment and x_train.dim() != 4:
        raise InputError(f"augment needs image batches [N, C, H, W], got shape {tuple(x_train.shape)}")
    aug_gen = torch.Generator().manual_seed(config.seed + 1)
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
    gens = {"data": gen, "augment": aug_gen}
    meta = {
        **{k: v for k, v in asdict(config).items() if k != "device"},
        "n_train": len(data.y_train),
        "input_shape": list(data.input_shape),
        "n_classes": data.n_classes,
    }
    ok = True
    log: list[dict] = []
    start_epoch = 0
    if resume and ck_path is not None and ck_path.is_file():
        saved: dict = {}
        load_train_state(
            ck_path,
            model=model,
            optimizer=opt,
            scheduler=sched,
            generators=gens,
            expect=meta,
            into=saved,
            what="srigl training state",
        )
        sp.load_state_dict(saved["sparsifier"])
        log, ok, start_epoch = list(saved["log"]), bool(saved["invariants_ok"]), int(saved["epoch"])
    steplog = StepLog(log_dir, callbacks, name="srigl")
    bar = progress(total=total, desc=f"{config.method} S={config.sparsity}", disable=not show_progress)
    bar.update(start_epoch * steps_per_epoch)
    try:
        for epoch in range(start_epoch, config.epochs):
            perm = torch.randperm(len(data.y_train), generator=gen).to(dev)
            for idx in perm.split(config.batch_size):
                opt.zero_grad(set_to_none=True)
                xb = x_train[idx]
                if config.augment:
                    xb = augment_batch(xb.cpu(), aug_gen).to(dev)
                loss = F.cross_entropy(model(xb), y_train[idx], label_smoothing=config.label_smoothing)
                loss.backward()
                lr = opt.param_groups[0]["lr"]
                opt.step()
                sched.step()
                row = {"loss": float(loss.detach()), "lr": lr, "epoch": epoch + 1}
                if sp.step():
                    try:
                        sp.check_invariants()
                    except RuntimeError:
                        ok = False
                    update = {
                        "step": sp.step_count,
                        "loss": row["loss"],
                        "density": sp.density(),
                        "itop_rate": sp.itop_rate(),
                        "active_neurons": sp.active_neurons(),
                    }
                    log.append(update)
                    row.update({k: v for k, v in update.items() if k != "step"})
                steplog(sp.step_count, row)
                bar.update(1)
            if ck_path is not None:
                save_train_state(
                    ck_path, step=sp.step_count, model=model, optimizer=opt, scheduler=sched, generators=gens,
                    meta=meta, extra={"sparsifier": sp.state_dict(), "log": log, "invariants_ok": ok,
                                      "epoch": epoch + 1},
                )  # fmt: skip
        bar.close()
        try:
            sp.check_invariants()
        except RuntimeError:
            ok = False
        acc = evaluate(model, data.x_test, data.y_test)
        steplog.close({"test_accuracy": acc, "density": sp.density(), "invariants_ok": ok})
    finally:
        bar.close()
        steplog.close()
    hidden_ablated = sum(layer.n_ablated for layer in sp.layers[:-1])
    return TrainResult(
        acc, model, sp, hidden_ablated, ok, time.perf_counter() - t0, total, asdict(config), log,
        input_shape=tuple(data.input_shape), n_classes=data.n_classes, resumed_from_epoch=start_epoch or None,
    )  # fmt: skip
