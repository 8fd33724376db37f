"""Source training and the source-free adaptation loop (the official ``src_pretrain.py`` / ``tar_adaptation.py``).

One loop serves SF(DA)^2 (``method="sfda2"``: SNC + IFA + FD), its ablation AaD (``"aad"``: SNC only, which is
exactly AaD's objective) and SHOT-IM (``"shot-im"``: information maximisation with the classifier frozen), so the
baselines get the same data, budget, optimiser and seeds.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data import Dataset

from iclr24.paperkit import progress
from iclr24.paperkit import seed_everything
from iclr24.paperkit.distributed import rank_and_world
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe
from iclr24.paperkit.tracking import StepLog

from .banks import SFDA2Loss
from .losses import information_maximization_loss
from .losses import lr_decay
from .model import SFDAModel

__all__ = [
    "METHODS",
    "SFDA2Config",
    "VISDA",
    "SourceConfig",
    "SOURCE_VISDA",
    "SOURCE_CPU",
    "AdaptResult",
    "Adapter",
    "adapt",
    "train_source",
    "predict",
    "accuracy",
    "per_class_accuracy",
]

METHODS = ("sfda2", "aad", "shot-im")


@dataclass(frozen=True)
class SFDA2Config:
    """Adaptation settings; the defaults are the official VisDA-2017 ones (``visda.sh`` + ``tar_adaptation.py``)."""

    method: str = "sfda2"
    lr: float = 1e-3
    batch_size: int = 64
    max_epoch: int = 15
    K: int = 5
    alpha_1: float = 1e-4  # weight of L_IFA
    alpha_2: float = 10.0  # weight of L_FD
    lambda_0: float = 5.0  # IFA strength lambda_t = lambda_0 t / T
    alpha: float = 1.0  # negative-term weight alpha_t = alpha (1 + 10 t/T)^(-beta)
    beta: float = 5.0
    lr_F: float = 0.1  # learning-rate multipliers of the feature extractor, bottleneck and classifier
    lr_B: float = 1.0
    lr_C: float = 1.0
    momentum: float = 0.9
    weight_decay: float = 1e-3
    nesterov: bool = True
    interval: int = 15  # evaluations over the run (when labels are given)

    def validate(self) -> SFDA2Config:
        if self.method not in METHODS:
            raise InputError(f"method must be one of {METHODS}, got {self.method!r}")
        for name in ("batch_size", "max_epoch", "K", "interval"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name} must be an int >= 1, got {v!r}")
        if self.batch_size < 2:
            raise InputError(
                f"batch_size must be >= 2 (the negative term needs pairs), got {self.batch_size}"
            )
        for name in (
            "lr",
            "alpha_1",
            "alpha_2",
            "lambda_0",
            "alpha",
            "beta",
            "lr_F",
            "lr_B",
            "lr_C",
            "momentum",
            "weight_decay",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
                raise InputError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.lr <= 0:
            raise InputError(f"lr must be > 0, got {self.lr}")
        return self


VISDA = SFDA2Config()
"""The official VisDA-2017 settings (ResNet-101, bottleneck 256, 12 classes)."""


@dataclass(frozen=True)
class SourceConfig:
    """Source training; defaults are the official ``src_pretrain.py`` (VisDA): label smoothing 0.1, lr 1e-3 with the
    backbone at 0.1x, 10 epochs, SGD momentum 0.9 nesterov, weight decay 1e-3, lr (1 + 10 t/T)^-0.75."""

    lr: float = 1e-3
    backbone_lr_mult: float = 0.1
    epochs: int = 10
    batch_size: int = 64
    label_smoothing: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-3
    nesterov: bool = True


SOURCE_VISDA = SourceConfig()
SOURCE_CPU = SourceConfig(lr=1e-2, backbone_lr_mult=1.0, epochs=30, weight_decay=5e-4)
"""``sfda2 train-source``'s defaults: the digits CNN trains from scratch at lr 1e-2 with the backbone at 1x (see
the README's Schedule note); the official VisDA recipe is :data:`SOURCE_VISDA`."""


@dataclass
class AdaptResult:
    """``model`` (adapted in place), ``history`` (one dict of floats per iteration: the loss terms, alpha_t,
    lambda_t, lr), ``evals`` (``{"iter", "acc", "mean_class_acc"}`` at iteration 0 and ``interval`` times after,
    when labels were given), ``seconds`` and ``nonfinite`` (iterations with a NaN/inf term; they are skipped)."""

    model: SFDAModel
    history: list[dict[str, float]] = field(default_factory=list)
    evals: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0
    nonfinite: int = 0
    config: dict = field(default_factory=dict)

    @property
    def final_acc(self) -> float | None:
        return self.evals[-1]["acc"] if self.evals else None


class _Indexed(Dataset):
    def __init__(self, base):
        self.base = base

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        item = self.base[i]
        x = item[0] if isinstance(item, tuple | list) else item
        return x, i


def _as_source(target, name: str = "target"):
    """A tensor [N, ...] or a map-style Dataset (items ``x`` or ``(x, ...)``; a DataLoader's dataset is used)."""
    if isinstance(target, DataLoader):
        target = target.dataset
    if isinstance(target, np.ndarray):
        target = torch.as_tensor(target)
    if isinstance(target, torch.Tensor):
        if target.ndim < 2:
            raise InputError(
                f"the {name} inputs must be a tensor [N, ...] of samples, got shape {tuple(target.shape)}"
            )
        if not target.dtype.is_floating_point:
            raise InputError(f"the {name} inputs must be floating point, got {target.dtype}")
        if not torch.isfinite(target).all():
            raise InputError(f"the {name} inputs contain NaN or inf")
    elif not (hasattr(target, "__getitem__") and hasattr(target, "__len__")):
        raise InputError(
            f"the {name} data must be a tensor, a Dataset or a DataLoader, got {type(target).__name__}"
        )
    if len(target) == 0:
        raise InputError(f"the {name} data is empty (0 samples)")
    return target


def _labels_of(src, name: str = "source") -> torch.Tensor:
    """The labels of a Dataset of ``(x, y, ...)`` items: its ``labels`` / ``targets`` (ImageFolderDataset,
    torchvision's ImageFolder: no image is decoded), a TensorDataset's second tensor, else read item by item."""
    for attr in ("labels", "targets"):
        v = getattr(src, attr, None)
        if v is not None and not callable(v):
            return torch.as_tensor(v)
    tensors = getattr(src, "tensors", None)
    if isinstance(tensors, tuple) and len(tensors) >= 2 and all(isinstance(t, torch.Tensor) for t in tensors):
        return tensors[1]
    ys = []
    for i in range(len(src)):
        item = src[i]
        if not isinstance(item, tuple | list) or len(item) < 2:
            raise InputError(
                f"the {name} Dataset's items must be (x, y) pairs when no labels y are given; item {i} is a "
                f"{type(item).__name__}"
            )
        y = item[1]
        if isinstance(y, torch.Tensor) and y.numel() == 1:
            y = y.item()
        if isinstance(y, bool) or not isinstance(y, int | np.integer):
            raise InputError(f"the {name} Dataset's item {i} has label {describe(y)}; expected a class index")
        ys.append(int(y))
    return torch.tensor(ys, dtype=torch.long)


def _listening(log: StepLog) -> bool:
    """Whether anyone reads the step log (callbacks, files or DEBUG records): if not, no metric is computed."""
    import logging

    return bool(log.callbacks or log.writers or log.logger.isEnabledFor(logging.DEBUG))


def _check_resume(checkpoint, resume) -> Path | None:
    if not isinstance(resume, bool):
        raise InputError(f"resume must be True or False, got {describe(resume)}")
    if checkpoint is None:
        if resume:
            raise InputError("resume=True needs checkpoint=PATH (the training-state file to continue from)")
        return None
    path = Path(checkpoint)
    if path.is_dir():
        raise InputError(f"checkpoint {path} is a folder; give a file path (e.g. OUT/train_state.pt)")
    return path


_CONV_NDIM = {torch.nn.Conv1d: 3, torch.nn.Conv2d: 4, torch.nn.Conv3d: 5}


def _check_fits(model: SFDAModel, src, name: str) -> None:
    """Refuse inputs the model cannot take, before any work, in one line: the channel count and rank against the
    feature extractor's first layer, then one sample through the model in eval mode (restored after) so any other
    shape mismatch is named here rather than deep inside torch."""
    x1 = next(_batches(src, torch.arange(1), 1))[0]
    shape = tuple(x1.shape[1:])
    first = next((m for m in model.features.modules() if isinstance(m, (*_CONV_NDIM, torch.nn.Linear))), None)
    if isinstance(first, tuple(_CONV_NDIM)):
        want = _CONV_NDIM[type(first)] - 1
        if len(shape) != want or shape[0] != first.in_channels:
            layout = ("C", "L") if want == 2 else ("C", "H", "W") if want == 3 else ("C", "D", "H", "W")
            raise InputError(
                f"the {name} samples have shape {list(shape)} but the model's first layer "
                f"({type(first).__name__}) takes [{', '.join(layout)}] with C = {first.in_channels}"
            )
    elif isinstance(first, torch.nn.Linear) and len(shape) == 1:  # flat feature vectors into an MLP
        if shape[0] != first.in_features:
            raise InputError(
                f"the {name} samples have shape {list(shape)} but the model's first layer takes "
                f"{first.in_features} features"
            )
    param = next(model.parameters(), None)
    dev = param.device if param is not None else torch.device("cpu")
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            model.forward_with_features(x1.to(dev))
    except RuntimeError as e:
        msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise InputError(f"the {name} samples of shape {list(shape)} do not fit the model: {msg}") from None
    finally:
        model.train(was)


def _workers(src, num_workers: int | None, device) -> int:
    """DataLoader workers for ``src``: none for a tensor; ``num_workers`` if given; else the official 8 (capped at
    the CPU count) on CUDA, where decoding must keep up with the GPU, and none on the CPU (in-process, so a
    CPU-bound run's memory and time are all in one process)."""
    if isinstance(src, torch.Tensor):
        return 0
    if num_workers is not None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise InputError(f"num_workers must be an int >= 0, got {num_workers!r}")
        return num_workers
    return min(8, os.cpu_count() or 1) if str(device).startswith("cuda") else 0


def _load(src, batches: list[torch.Tensor], workers: int = 0, device="cpu"):
    """Yield ``(x, idx_batch)`` for each index tensor in ``batches``: a tensor is indexed directly; a Dataset is
    read lazily through one DataLoader (``workers`` processes, pinned memory on CUDA), item by item."""
    if isinstance(src, torch.Tensor):
        for b in batches:
            yield src[b], b
        return
    loader = DataLoader(
        _Indexed(src),
        batch_sampler=[b.tolist() for b in batches],
        num_workers=workers,
        pin_memory=str(device).startswith("cuda"),
    )
    for x, b in loader:
        yield x, b


def _batches(src, idx: torch.Tensor, batch_size: int, workers: int = 0, device="cpu"):
    """Yield ``(x, idx_batch)`` over ``idx`` in chunks of ``batch_size``."""
    yield from _load(src, list(torch.split(idx, batch_size)), workers, device)


@torch.no_grad()
def predict(
    model: SFDAModel,
    data,
    batch_size: int = 256,
    device: str | torch.device = "cpu",
    num_workers: int | None = None,
):
    """Eval-mode ``(z [N, A], logits [N, C])`` over ``data`` (tensor or Dataset, read lazily), in order."""
    check_int(batch_size, "batch_size", minimum=1, maximum=2**31)
    src = _as_source(data, "input")
    _check_fits(_check_model(model), src, "input")
    workers = _workers(src, num_workers, device)
    was = model.training
    model.eval()
    zs, ls = [], []
    for x, _ in _batches(src, torch.arange(len(src)), batch_size, workers, device):
        z, logit = model.forward_with_features(x.to(device, non_blocking=True))
        zs.append(z)
        ls.append(logit)
    model.train(was)
    return torch.cat(zs), torch.cat(ls)


def _check_pred_labels(pred: object, labels: object) -> tuple[torch.Tensor, torch.Tensor]:
    check_tensor(pred, "pred", ndim=1, kind="int")
    check_tensor(labels, "labels", ndim=1, kind="int")
    if pred.shape != labels.shape:
        raise InputError(f"pred and labels must have one length, got {len(pred)} and {len(labels)}")
    if int(labels.min()) < 0 or int(pred.min()) < 0:
        raise InputError("pred and labels must be class indices >= 0")
    return pred, labels


def accuracy(pred: torch.Tensor, labels: torch.Tensor) -> float:
    """Top-1 accuracy in percent."""
    pred, labels = _check_pred_labels(pred, labels)
    return float((pred.cpu() == labels.cpu()).float().mean() * 100)


def per_class_accuracy(
    pred: torch.Tensor, labels: torch.Tensor, num_classes: int | None = None
) -> torch.Tensor:
    """Recall of every class present in ``labels`` (percent; NaN for an absent class). Its nan-mean is VisDA's
    mean-class accuracy."""
    pred, labels = _check_pred_labels(pred, labels)
    if num_classes is not None:
        check_int(num_classes, "num_classes", minimum=1, maximum=2**20)
    pred, labels = pred.cpu().long(), labels.cpu().long()
    C = int(num_classes if num_classes is not None else max(int(labels.max()), int(pred.max())) + 1)
    out = torch.full((C,), float("nan"))
    for c in range(C):
        m = labels == c
        if m.any():
            out[c] = (pred[m] == c).float().mean() * 100
    return out


def _evaluate(model, data, labels, it, device, batch_size, workers=0) -> dict[str, float]:
    _, logits = predict(model, data, batch_size=batch_size, device=device, num_workers=workers)
    pred = logits.argmax(1)
    pc = per_class_accuracy(pred, labels, model.num_classes)
    return {"iter": float(it), "acc": accuracy(pred, labels), "mean_class_acc": float(torch.nanmean(pc))}


def _check_labels(labels, n, num_classes, what="labels") -> torch.Tensor:
    labels = torch.as_tensor(labels)
    if labels.ndim != 1 or len(labels) != n:
        raise InputError(f"{what} must be a 1-D tensor of {n} class indices, got shape {tuple(labels.shape)}")
    if labels.dtype.is_floating_point or labels.dtype == torch.bool:
        raise InputError(f"{what} must be integer class indices, got {labels.dtype}")
    labels = labels.long()
    if n and (int(labels.min()) < 0 or int(labels.max()) >= num_classes):
        raise InputError(
            f"{what} must lie in [0, {num_classes}) (the classifier has {num_classes} classes), got range "
            f"[{int(labels.min())}, {int(labels.max())}]"
        )
    return labels


def _check_model(model) -> SFDAModel:
    if not isinstance(model, SFDAModel):
        raise InputError(
            f"expected an SFDAModel(features, bottleneck, classifier) (see split_timm / digits_model), got "
            f"{type(model).__name__}"
        )
    return model


def _sgd(groups, momentum, weight_decay, nesterov) -> torch.optim.SGD:
    """``torch.optim.SGD`` (dampening 0) over the non-empty ``groups``; Nesterov only with momentum > 0 (torch
    rejects it at momentum 0, where it is plain SGD anyway)."""
    return torch.optim.SGD(
        [g for g in groups if g["params"]],
        momentum=momentum,
        weight_decay=weight_decay,
        nesterov=bool(nesterov and momentum > 0),
    )


def _poly_schedule(opt, max_iter: int) -> torch.optim.lr_scheduler.LambdaLR:
    """The official ``lr_scheduler``: iteration ``t`` (1-based) runs at ``lr0 (1 + 10 t/T)^-0.75``; the scheduler is
    stepped once per iteration, after the update."""
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda e: lr_decay(min(e + 1, max_iter), max_iter))


def train_source(
    model: SFDAModel,
    x,
    y=None,
    config: SourceConfig = SOURCE_VISDA,
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
    quiet: bool = True,
    num_workers: int | None = None,
    callbacks=None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
) -> SFDAModel:
    """Train ``model`` on labelled source data (``x`` tensor or Dataset, read lazily; ``y`` [N] labels) with
    label-smoothed cross-entropy, SHOT's recipe (:class:`SourceConfig`). Returns the model (trained in place, left
    in eval mode). An :class:`~iclr24.sfda2.images.ImageFolderDataset` under
    :func:`~iclr24.sfda2.images.train_transform` gives the official ``src_pretrain.py`` views.

    Under ``torchrun`` (an initialised ``torch.distributed`` group) the model is wrapped in DDP and each rank takes
    every world-size-th sample of each global batch of ``batch_size`` (the same seeded order on every rank);
    DDP averages the gradients, so every rank holds the same weights.

    Your own data: ``x`` a ``Dataset`` or ``DataLoader`` of ``(x, y)`` items and ``y`` omitted (the labels come from
    its ``labels``/``targets``, a TensorDataset's second tensor, or one pass over the items); it is read in the
    recipe's seeded order and batch size (a DataLoader's own are not used), so the same samples give the same model
    as tensors. ``callbacks`` (``f(step, metrics)`` or objects with ``on_step``) and ``log_dir`` (``metrics.jsonl``,
    TensorBoard event files when installed; rank 0 only) get each iteration's ``loss``, ``lr`` and ``epoch``.
    ``checkpoint``: a training-state file written at the end of every epoch (rank 0); with ``resume=True`` a run
    continues from it when it exists (model, optimiser, schedule, data order and RNG states: the same weights as a
    run never interrupted)."""
    model = _check_model(model)
    src = _as_source(x, "source")
    if y is None:
        if isinstance(src, torch.Tensor):
            raise InputError("the source labels y are missing (give y, or a Dataset of (x, y) items as x)")
        y = _labels_of(src, "source")
    y = _check_labels(y, len(src), model.num_classes, "source labels")
    state_path = _check_resume(checkpoint, resume)
    _check_fits(model, src, "source")
    if not 0 <= config.label_smoothing < 1:
        raise InputError(f"label_smoothing must be in [0, 1), got {config.label_smoothing}")
    if config.epochs < 1 or config.batch_size < 2 or config.lr <= 0:
        raise InputError(f"need epochs >= 1, batch_size >= 2 and lr > 0, got {config}")
    workers = _workers(src, num_workers, device)
    seed_everything(seed)
    model.to(device).train()
    opt = _sgd(
        [
            {"params": list(model.features.parameters()), "lr": config.lr * config.backbone_lr_mult},
            {
                "params": list(model.bottleneck.parameters()) + list(model.classifier.parameters()),
                "lr": config.lr,
            },
        ],
        config.momentum,
        config.weight_decay,
        config.nesterov,
    )
    n = len(src)
    per_epoch = math.ceil(n / config.batch_size)
    max_iter = config.epochs * per_epoch
    sched = _poly_schedule(opt, max_iter)
    g = torch.Generator().manual_seed(seed)
    rank, world = rank_and_world()
    meta = {"kind": "sfda2 source training", "config": asdict(config), "n": n, "seed": seed, "world": world}
    start = 0
    if resume and state_path.is_file():
        from iclr24.paperkit.resume import load_train_state

        start = load_train_state(state_path, model=model, optimizer=opt, scheduler=sched, generators={"order": g},
                                 expect=meta, what="sfda2 source-training state")  # fmt: skip
    log = StepLog(log_dir if rank == 0 else None, callbacks, name="sfda2")
    on = _listening(log)
    net = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model, device_ids=None if str(device) == "cpu" else [device])
    step = start * per_epoch
    with log:
        for epoch in progress(
            range(start, config.epochs), desc="source training", disable=True if quiet else None
        ):
            order = torch.randperm(n, generator=g)
            # every rank needs >= 2 samples for batch norm; each takes every world-th sample of a global batch
            shares = [b[rank::world] for b in torch.split(order, config.batch_size) if len(b) >= 2 * world]
            for xb, b in _load(src, shares, workers, device):
                logits = net(xb.to(device, non_blocking=True))
                loss = F.cross_entropy(logits, y[b].to(device), label_smoothing=config.label_smoothing)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                if on:
                    log(
                        step, {"loss": float(loss.detach()), "lr": opt.param_groups[-1]["lr"], "epoch": epoch}
                    )
                step += 1
            if state_path is not None and rank == 0:
                from iclr24.paperkit.resume import save_train_state

                save_train_state(state_path, step=epoch + 1, model=model, optimizer=opt, scheduler=sched,
                                 generators={"order": g}, meta=meta)  # fmt: skip
        log.close({"epochs": config.epochs, "resumed_from_epoch": start})
    model.resumed_from_epoch_ = start
    return model.eval()


class Adapter:
    """The state of one adaptation run and its iteration: the loss of ``config.method`` with its banks and class
    covariances, the two SGD optimisers (F+B, C; the official ``optimizer`` and ``optimizer_c``) and their poly
    schedules over ``max_iter`` iterations. :func:`adapt` drives it over the target loader; ``step(x, idx)`` is one
    official iteration (forward in train mode, bank update, neighbours, loss, backward, both optimiser steps)."""

    def __init__(
        self,
        model: SFDAModel,
        config: SFDA2Config,
        max_iter: int,
        bank_features: torch.Tensor,
        bank_logits: torch.Tensor,
        device: str | torch.device = "cpu",
    ):
        self.model, self.config, self.max_iter, self.device = model, config, max_iter, device
        self.crit = SFDA2Loss(
            model.num_classes,
            model.bottleneck_dim,
            K=config.K,
            alpha_1=config.alpha_1,
            alpha_2=config.alpha_2,
            lambda_0=config.lambda_0,
            alpha=config.alpha,
            beta=config.beta,
            use_ifa=config.method == "sfda2",
            use_fd=config.method == "sfda2",
        )
        self.crit.init_banks(bank_features, bank_logits)
        # SHOT freezes the classifier (hypothesis); SF(DA)^2/AaD train it
        self.train_classifier = config.method != "shot-im"
        for p in model.classifier.parameters():
            p.requires_grad_(self.train_classifier)
        self.opt = _sgd(
            [
                {"params": list(model.features.parameters()), "lr": config.lr * config.lr_F},
                {"params": list(model.bottleneck.parameters()), "lr": config.lr * config.lr_B},
            ],
            config.momentum,
            config.weight_decay,
            config.nesterov,
        )
        self.opt_c = _sgd(
            [{"params": list(model.classifier.parameters()), "lr": config.lr * config.lr_C}],
            config.momentum,
            config.weight_decay,
            config.nesterov,
        )
        self.sched, self.sched_c = _poly_schedule(self.opt, max_iter), _poly_schedule(self.opt_c, max_iter)
        self.it = 0
        self.nonfinite = 0

    def step(self, xb: torch.Tensor, idx: torch.Tensor) -> dict[str, float]:
        """One iteration on the batch ``xb`` whose bank rows are ``idx``; returns every term as a float (an
        iteration with a non-finite term is counted in ``nonfinite`` and not applied)."""
        config, model = self.config, self.model
        idx = idx.to(self.device)
        factor = lr_decay(self.it + 1, self.max_iter)
        z, logits = model.forward_with_features(xb.to(self.device, non_blocking=True))
        if config.method == "shot-im":
            loss = information_maximization_loss(torch.softmax(logits, 1))
            terms = {"im": loss, "total": loss}
        else:
            terms = self.crit(z, logits, idx, self.it, self.max_iter, model.classifier_weight())
            loss = terms["total"]
        rec = {k: float(v.detach()) for k, v in terms.items()}
        rec["lr"] = config.lr * factor
        if all(math.isfinite(v) for v in rec.values()):
            self.opt.zero_grad()
            self.opt_c.zero_grad()
            loss.backward()
            self.opt.step()
            if self.train_classifier:
                self.opt_c.step()
        else:
            self.nonfinite += 1
        self.sched.step()
        if self.train_classifier:  # opt_c never steps under SHOT-IM (frozen classifier)
            self.sched_c.step()
        self.it += 1
        return rec

    def close(self) -> None:
        for p in self.model.classifier.parameters():
            p.requires_grad_(True)


def adapt(
    model: SFDAModel,
    target,
    config: SFDA2Config = VISDA,
    *,
    labels=None,
    eval_data=None,
    seed: int = 0,
    device: str | torch.device = "cpu",
    quiet: bool = True,
    num_workers: int | None = None,
    callback: Callable[[int, dict[str, float]], None] | None = None,
    callbacks=None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
) -> AdaptResult:
    """Source-free adaptation of ``model`` (an :class:`SFDAModel`, adapted in place) to unlabelled ``target``
    (a tensor [N, ...], a Dataset whose items are ``x`` or ``(x, ...)``, read lazily, or a DataLoader, whose dataset
    is used with ``config.batch_size``). ``labels`` (optional, [N]) are used only to log accuracy
    ``config.interval`` times, on ``eval_data`` (the same N samples in the same order under the evaluation view,
    e.g. :func:`~iclr24.sfda2.images.eval_transform`; default: ``target`` itself).

    As the official ``tar_adaptation.py``: the banks are filled in eval mode from the adaptation view of every
    target sample; per iteration: forward in train mode, update the banks, find the K neighbours, then the loss of
    ``config.method``; two SGD optimisers (F+B, C) with the lr ``lr (1 + 10 t/T)^-0.75``; size-1 batches skipped.
    A Dataset is read through a DataLoader (``num_workers``: default 8 on CUDA, capped at the CPU count, none on
    the CPU; pinned memory on CUDA), so memory holds the banks (N x A features, N x C scores), never the images.

    ``callbacks`` (``f(step, metrics)`` or objects with ``on_step``; ``callback`` is the older single one) and
    ``log_dir`` (``metrics.jsonl``, TensorBoard event files when installed) get every iteration's loss terms,
    ``alpha_t``, ``lambda_t`` and ``lr`` (step = iterations done), with ``acc`` and ``mean_class_acc`` at each
    evaluation (step 0: the source model). ``checkpoint``: a state file written after every pass over the target
    (model, both optimisers and schedules, banks, class covariances, data order, RNG states, history); with
    ``resume=True`` a run continues from it when it exists and ends as a run never interrupted would (a resumed
    run appends to the log the records after its last saved pass again).
    """
    model = _check_model(model)
    config = config.validate()
    state_path = _check_resume(checkpoint, resume)
    src = _as_source(target, "target")
    _check_fits(model, src, "target")
    n = len(src)
    if config.K > n - 1:
        raise InputError(f"K={config.K} neighbours is larger than the target set allows (N - 1 = {n - 1})")
    if labels is not None:
        labels = _check_labels(labels, n, model.num_classes, "target labels")
    ev = src
    if eval_data is not None:
        ev = _as_source(eval_data, "evaluation")
        if len(ev) != n:
            raise InputError(
                f"eval_data must hold the same {n} target samples as target (its evaluation view), got {len(ev)}"
            )
        _check_fits(model, ev, "evaluation")
    workers = _workers(src, num_workers, device)
    log = StepLog(log_dir, [c for c in (callback,) if c is not None] + list(StepLog(None, callbacks).callbacks),
                  name="sfda2")  # fmt: skip
    on = _listening(log)
    seed_everything(seed)
    t0 = time.perf_counter()
    model.to(device)
    eval_bs = 3 * config.batch_size
    res = AdaptResult(model=model, config={**asdict(config), "seed": seed})
    per_epoch = math.ceil(n / config.batch_size)
    max_iter = config.max_epoch * per_epoch
    interval_iter = max(1, max_iter // config.interval)
    g = torch.Generator().manual_seed(seed)
    meta = {"kind": "sfda2 adaptation", "config": asdict(config), "n": n, "seed": seed,
            "labels": labels is not None}  # fmt: skip
    resuming = resume and state_path.is_file()
    if resuming:  # the banks, covariances and history come from the state file (placeholders until then)
        z_all = torch.zeros(n, model.bottleneck_dim, device=device)
        logits_all = torch.zeros(n, model.num_classes, device=device)
    else:
        z_all, logits_all = predict(model, src, batch_size=eval_bs, device=device, num_workers=workers)
        if not torch.isfinite(z_all).all():
            raise InputError("the source model gives non-finite (NaN/inf) features on the target data")
        if labels is not None:
            res.evals.append(_evaluate(model, ev, labels, 0, device, eval_bs, workers))
    run = Adapter(model, config, max_iter, z_all, logits_all, device)
    del z_all, logits_all
    if resuming:
        _load_adapt_state(state_path, run, g, meta, res)
    elif on and res.evals:
        log(0, {k: v for k, v in res.evals[0].items() if k != "iter"})
    model.train()
    bar = progress(total=max_iter, initial=run.it, desc=f"adapt ({config.method})",
                   disable=True if quiet else None)  # fmt: skip
    with log:
        while run.it < max_iter:
            order = torch.randperm(n, generator=g)
            chunks = [
                b for b in torch.split(order, config.batch_size) if len(b) >= 2
            ]  # size-1 batches skipped
            for xb, idx in _load(src, chunks[: max_iter - run.it], workers, device):
                rec = run.step(xb, idx)
                res.history.append(rec)
                bar.update(1)
                if labels is not None and (run.it % interval_iter == 0 or run.it == max_iter):
                    res.evals.append(_evaluate(model, ev, labels, run.it, device, eval_bs, workers))
                    model.train()
                    if on:
                        log(run.it, {**rec, **{k: v for k, v in res.evals[-1].items() if k != "iter"}})
                elif on:
                    log(run.it, rec)
            if state_path is not None:
                _save_adapt_state(state_path, run, g, meta, res)
        log.close({"iterations": run.it, "final_acc": res.final_acc, "nonfinite": run.nonfinite})
    bar.close()
    run.close()
    res.nonfinite = run.nonfinite
    model.eval()
    res.seconds = time.perf_counter() - t0
    return res


def _save_adapt_state(path: Path, run: Adapter, g: torch.Generator, meta: dict, res: AdaptResult) -> None:
    from iclr24.paperkit.resume import save_train_state

    banks = run.crit.banks
    extra = {
        "it": run.it,
        "nonfinite": run.nonfinite,
        "opt_c": run.opt_c.state_dict(),
        "sched_c": run.sched_c.state_dict(),
        "banks": {"fea": banks.fea_bank, "score": banks.score_bank, "pseudo": banks.pseudo_bank},
        "covariance": {"amount": run.crit.amount, "mean": run.crit.mean, "cov": run.crit.cov},
        "history": res.history,
        "evals": res.evals,
    }
    save_train_state(path, step=run.it, model=run.model, optimizer=run.opt, scheduler=run.sched,
                     generators={"order": g}, meta=meta, extra=extra)  # fmt: skip


def _load_adapt_state(path: Path, run: Adapter, g: torch.Generator, meta: dict, res: AdaptResult) -> None:
    from iclr24.paperkit.errors import InputFileError
    from iclr24.paperkit.resume import load_train_state

    extra: dict = {}
    load_train_state(path, model=run.model, optimizer=run.opt, scheduler=run.sched, generators={"order": g},
                     expect=meta, into=extra, what="sfda2 adaptation state")  # fmt: skip
    try:
        run.opt_c.load_state_dict(extra["opt_c"])
        run.sched_c.load_state_dict(extra["sched_c"])
        banks, cov = extra["banks"], extra["covariance"]
        b = run.crit.banks
        if banks["fea"].shape != b.fea_bank.shape or banks["score"].shape != b.score_bank.shape:
            raise KeyError("banks")
        dev = b.fea_bank.device
        b.fea_bank, b.score_bank, b.pseudo_bank = (banks[k].to(dev) for k in ("fea", "score", "pseudo"))
        run.crit.amount, run.crit.mean, run.crit.cov = (cov[k].to(dev) for k in ("amount", "mean", "cov"))
        run.it, run.nonfinite = int(extra["it"]), int(extra["nonfinite"])
        res.history, res.evals = list(extra["history"]), list(extra["evals"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InputFileError(
            f"{path}: not a complete sfda2 adaptation state ({type(e).__name__}: {e})", path
        ) from None


def with_method(config: SFDA2Config, method: str, **changes) -> SFDA2Config:
    """``config`` with another ``method`` (and any other field changed): the baselines' configs."""
    return replace(config, method=method, **changes).validate()
