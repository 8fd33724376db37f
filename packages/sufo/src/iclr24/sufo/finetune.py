"""Fine-tuning for sequence classification as the official ``run_ft.py`` / ``train_path`` does it: AdamW (weight
decay 0.01, none on biases and LayerNorm, eps 1e-8), linear warm-up over the first 20% of steps then linear decay,
gradient clipping at 1.0, class imbalance handled by a ``WeightedRandomSampler`` with inverse class-frequency
weights (not by loss weights), and the epoch with the best validation accuracy kept (the official ``evaluate``
returns GLUE's accuracy, whose first key picks the best checkpoint; ``best_metric="macro_f1"`` is offered)."""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

from .data import TextDataset

__all__ = [
    "BEST_METRICS",
    "FineTuneConfig",
    "FineTuneResult",
    "balanced_sampler",
    "fine_tune",
    "macro_f1",
    "predict",
    "score",
]

BEST_METRICS = ("accuracy", "macro_f1")


@dataclass(frozen=True)
class FineTuneConfig:
    """Official defaults: lr 7.6e-6, batch 8, 25 epochs, warm-up 20%, weight decay 0.01, clip 1.0. At CPU scale
    (``reproduce.py``) MiniLM learns in a few epochs with lr 2e-4 and batch 8."""

    lr: float = 7.6e-6
    batch_size: int = 8
    epochs: int = 25
    warmup_fraction: float = 0.2
    weight_decay: float = 0.01
    eps: float = 1e-8
    max_grad_norm: float = 1.0
    max_length: int = 512
    seed: int = 0
    best_metric: str = "accuracy"  # the validation score that picks the epoch (official: accuracy)

    def __post_init__(self) -> None:
        check_recipe(self)
        check_int(self.max_length, "max_length", minimum=2, maximum=2**16)
        if self.best_metric not in BEST_METRICS:
            raise InputError(f"best_metric must be one of {BEST_METRICS}, got {self.best_metric!r}")


def check_recipe(cfg) -> None:
    """The fields a fine-tuning and a probe config share, each checked with its name."""
    check_float(cfg.lr, "lr", minimum=0, maximum=10, open_min=True)
    check_int(cfg.batch_size, "batch_size", minimum=1, maximum=2**20)
    check_int(cfg.epochs, "epochs", minimum=1, maximum=10**6)
    check_int(cfg.seed, "seed", minimum=0, maximum=2**32 - 1)
    check_float(cfg.warmup_fraction, "warmup_fraction", minimum=0, maximum=1, open_max=True)
    check_float(cfg.weight_decay, "weight_decay", minimum=0)
    check_float(cfg.eps, "eps", minimum=0, open_min=True)
    check_float(cfg.max_grad_norm, "max_grad_norm", minimum=0, open_min=True)


def macro_f1(labels: np.ndarray, pred: np.ndarray) -> float:
    """Macro-F1 of predicted class ids over the classes present in ``labels`` or ``pred``, a class with no true
    and no predicted member scoring 0: what ``sklearn.metrics.f1_score(labels, pred, average="macro")`` returns
    (pinned by a test), without its per-call input validation (~50 ms a call, paid ~100 times per run by the
    per-epoch validation of the fine-tuning and the probes)."""
    labels, pred = np.asarray(labels).ravel(), np.asarray(pred).ravel()
    if labels.shape != pred.shape or len(labels) == 0:
        raise InputError(
            f"labels and pred must be non-empty and of one length, got {len(labels)} and {len(pred)}"
        )
    classes = np.union1d(labels, pred)
    t = labels[:, None] == classes
    p = pred[:, None] == classes
    tp = (t & p).sum(0)
    denom = t.sum(0) + p.sum(0)  # 2 tp + fp + fn
    # F1 = 2 tp / (2 tp + fp + fn) per class (0 where the class is neither true nor predicted), then the mean
    f1 = np.divide(2.0 * tp, denom, out=np.zeros(len(classes)), where=denom > 0)
    return float(f1.mean())


def score(labels: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    """Accuracy and macro-F1 of predicted class ids."""
    labels, pred = np.asarray(labels), np.asarray(pred)
    return {"accuracy": float((labels == pred).mean()), "macro_f1": macro_f1(labels, pred)}


@dataclass
class FineTuneResult:
    """``best_epoch``: the epoch whose weights the model ends with, and its validation ``best_val_score`` under
    ``best_metric``; ``history`` holds each epoch's training loss and both validation scores."""

    best_epoch: int
    best_val_score: float
    best_metric: str = "accuracy"
    history: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def balanced_sampler(labels: np.ndarray, num_samples: int | None = None, seed: int = 0):
    """``WeightedRandomSampler`` with weight 1 / count(class) per example: balanced batches in expectation."""
    from torch.utils.data import WeightedRandomSampler

    labels = check_array(labels, "labels", ndim=1, kind="int")
    if labels.min() < 0:
        raise InputError(f"labels must be class ids >= 0, got a minimum of {labels.min()}")
    if num_samples is not None:
        check_int(num_samples, "num_samples", minimum=1, maximum=2**40)
    counts = np.bincount(labels)
    w = 1.0 / counts[labels]
    g = torch.Generator().manual_seed(seed)
    return WeightedRandomSampler(torch.as_tensor(w, dtype=torch.double), num_samples or len(labels), True, g)


@torch.inference_mode()
def predict(model, tokenizer, texts: list[str], batch_size: int = 32, max_length: int = 512) -> np.ndarray:
    """Class ids predicted by a sequence-classification model (batches of similar length, shortest padding)."""
    from .features import _check_texts
    from .features import length_sorted_batches

    _check_texts(texts)
    check_int(batch_size, "batch_size", minimum=1, maximum=2**20)
    check_int(max_length, "max_length", minimum=2, maximum=2**16)
    was_training = model.training
    model.eval()
    out = np.empty(len(texts), dtype=np.int64)
    for idx, b in length_sorted_batches(tokenizer, texts, batch_size, max_length):
        out[idx] = model(**b).logits.argmax(-1).numpy()
    model.train(was_training)
    return out


def _param_groups(model, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name else decay).append(
            p
        )
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _fused_ok(model) -> bool:
    """The fused AdamW kernel exists for floating-point weights on the CPU and CUDA."""
    return all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in model.parameters())


def _adamw_with_warmup(module, config, n_train: int):
    """The official recipe's optimiser for ``module``: AdamW (no decay on biases and LayerNorms) and a linear
    schedule warming up over ``config.warmup_fraction`` of the ``config.epochs`` epochs of ``n_train`` examples.
    Returns ``(optimizer, scheduler, steps_per_epoch)``.

    The fused AdamW kernel makes the same update as the default loop, in one pass over the weights (on one CPU
    thread the loop spent ~0.47 s per step of MiniLM, most of it on the 11.7M-parameter word embeddings; fused
    ~0.05 s)."""
    from transformers import get_linear_schedule_with_warmup

    steps_per_epoch = int(np.ceil(n_train / config.batch_size))
    total = steps_per_epoch * config.epochs
    opt = torch.optim.AdamW(
        _param_groups(module, config.weight_decay), lr=config.lr, eps=config.eps, fused=_fused_ok(module)
    )
    sched = get_linear_schedule_with_warmup(opt, int(config.warmup_fraction * total), total)
    return opt, sched, steps_per_epoch


def fine_tune(
    model,
    tokenizer,
    train: TextDataset,
    val: TextDataset,
    config: FineTuneConfig = FineTuneConfig(),
    on_epoch: Callable[[int, object], None] | None = None,
    show_progress: bool = False,
    *,
    callbacks: Any = None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
) -> FineTuneResult:
    """Fine-tune in place and load the weights of the epoch with the best validation ``config.best_metric`` at the end
    (the first such epoch on ties, as the official strict comparison). ``on_epoch(epoch, model)`` is
    called after every epoch (epoch 0 = before training): the checkpoint series the feature-dynamics analysis
    consumes.

    ``train`` / ``val``: :class:`TextDataset`, or your own torch ``Dataset`` of ``(text, label)`` items or
    ``DataLoader`` of ``(texts, labels)`` batches (:meth:`TextDataset.from_data`: the same texts and labels, so the
    same run). ``callbacks`` (``f(step, metrics)`` or objects with ``on_step``/``on_end``) and ``log_dir``
    (``metrics.jsonl``, TensorBoard when installed) get every step's loss and lr and every epoch's validation
    scores. ``checkpoint``: a training-state file written after every epoch (weights, AdamW, schedule, sampler and
    RNG states, the best epoch's weights); with ``resume=True`` and that file present the run continues after its
    last finished epoch and ends bit for bit as the uninterrupted one (``on_epoch`` is not called again for the
    epochs done before)."""
    from iclr24.paperkit.resume import load_train_state
    from iclr24.paperkit.resume import save_train_state
    from iclr24.paperkit.tracking import StepLog

    from .data import TextDataset

    train = TextDataset.from_data(train, what="train")
    val = TextDataset.from_data(val, label_names=train.label_names, what="val")
    if not isinstance(config, FineTuneConfig):
        raise InputError(f"config must be a FineTuneConfig, got {describe(config)}")
    if not hasattr(model, "config") or not hasattr(model.config, "num_labels"):
        raise InputError(
            f"model must be a sequence-classification model (load_encoder), got {describe(model)}"
        )
    if train.n_classes != model.config.num_labels:
        raise InputError(
            f"the model has {model.config.num_labels} labels but the data has {train.n_classes} classes"
        )
    if len(np.unique(train.labels)) < 2:
        raise InputError("fine-tuning needs at least two classes in the training data")
    ck_path = Path(checkpoint) if checkpoint is not None else None
    if ck_path is not None and ck_path.is_dir():
        raise InputFileError(f"checkpoint {ck_path} is a folder; give a file path such as {ck_path}/state.pt")
    torch.manual_seed(config.seed)
    sampler = balanced_sampler(train.labels, seed=config.seed)
    opt, sched, steps_per_epoch = _adamw_with_warmup(model, config, len(train))
    t0 = time.perf_counter()
    res = FineTuneResult(best_epoch=0, best_val_score=-1.0, best_metric=config.best_metric)
    best_state = None
    gens = {"sampler": sampler.generator}
    meta = {**asdict(config), "n_train": len(train), "n_val": len(val), "num_labels": train.n_classes}
    start = 1
    if resume and ck_path is not None and ck_path.is_file():
        saved: dict = {}
        load_train_state(
            ck_path, model=model, optimizer=opt, scheduler=sched, generators=gens, expect=meta, into=saved,
            what="sufo fine-tuning state",
        )  # fmt: skip
        res.history = list(saved["history"])
        res.best_epoch, res.best_val_score = int(saved["best_epoch"]), float(saved["best_val_score"])
        best_state = saved.get("best_state")
        start = int(saved["epoch"]) + 1
    elif on_epoch is not None:
        on_epoch(0, model)
    log = StepLog(log_dir, callbacks, name="sufo")
    step = (start - 1) * steps_per_epoch
    try:
        epochs = progress(range(start, config.epochs + 1), desc="fine-tune", disable=not show_progress)
        for epoch in epochs:
            model.train()
            order = list(sampler)
            losses = []
            for s in range(0, len(order), config.batch_size):
                idx = order[s : s + config.batch_size]
                b = tokenizer(
                    [train.texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=config.max_length,
                    return_tensors="pt",
                )
                out = model(**b, labels=torch.as_tensor(train.labels[idx]))
                opt.zero_grad()
                out.loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
                lr = opt.param_groups[0]["lr"]
                opt.step()
                sched.step()
                losses.append(float(out.loss.detach()))
                step += 1
                log(step, {"loss": losses[-1], "lr": lr, "epoch": epoch})
            pred = predict(model, tokenizer, val.texts, max_length=config.max_length)
            sc = score(val.labels, pred)
            res.history.append(
                {"epoch": epoch, "loss": float(np.mean(losses)), **{f"val_{k}": v for k, v in sc.items()}}
            )
            log(step, res.history[-1])
            if sc[config.best_metric] > res.best_val_score:
                res.best_epoch, res.best_val_score = epoch, sc[config.best_metric]
                best_state = copy.deepcopy(model.state_dict())
            if ck_path is not None:
                extra = {"history": res.history, "best_epoch": res.best_epoch,
                         "best_val_score": res.best_val_score, "best_state": best_state, "epoch": epoch}  # fmt: skip
                save_train_state(
                    ck_path, step=step, model=model, optimizer=opt, scheduler=sched, generators=gens, meta=meta,
                    extra=extra,
                )  # fmt: skip
            if on_epoch is not None:
                on_epoch(epoch, model)
        if best_state is not None:
            model.load_state_dict(best_state)
        model.eval()
        res.seconds = time.perf_counter() - t0
        log.close({"best_epoch": res.best_epoch, f"best_val_{config.best_metric}": res.best_val_score})
    finally:
        log.close()
    return res
