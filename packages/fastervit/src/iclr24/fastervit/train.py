"""Training and evaluation of a registered FasterViT on an image folder, built-in data or your own Dataset /
DataLoader, single process or data-parallel under ``torchrun`` (``torchrun --nproc_per_node N -m
iclr24.fastervit.cli train DATA ...``); per-step logging through paperkit's StepLog, exact resume per epoch."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data import Dataset

from iclr24.paperkit import atomic_torch_save
from iclr24.paperkit import atomic_write_json
from iclr24.paperkit import progress
from iclr24.paperkit import seed_everything
from iclr24.paperkit.distributed import cleanup_distributed
from iclr24.paperkit.distributed import distributed_sampler
from iclr24.paperkit.distributed import init_distributed
from iclr24.paperkit.distributed import is_distributed
from iclr24.paperkit.distributed import wrap_ddp
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int

from .data import loader_errors

__all__ = ["TrainConfig", "PAPER_TRAINING", "train", "evaluate", "build_datasets"]


@dataclass(frozen=True)
class TrainConfig:
    """Defaults follow the paper's ImageNet recipe where it scales down (AdamW, cosine with warm-up, label smoothing
    0.1, gradient clipping 5.0, weight decay 0.005 for FasterViT-0..3); lr 5e-3 is for batch 4096 and is scaled
    linearly with the batch. The paper's regularisers are timm's implementations and off by default (a short
    fine-tune does not want them); ``PAPER_TRAINING`` turns them on with the paper's values: mixup 0.8, cutmix 1.0
    (``timm.data.Mixup``), RandAugment "rand-m9-mstd0.5-inc1" (``timm.data.auto_augment``), random erasing 0.25
    (``timm.data.random_erasing``), model EMA 0.9998 (``timm.utils.ModelEmaV3``). Not implemented: MESA."""

    model: str = "faster_vit_0_224"
    epochs: int = 300
    batch_size: int = 128
    lr: float | None = None  # None: 5e-3 * batch_size * world_size / 4096
    min_lr: float = 5e-6
    warmup_epochs: float = 20
    weight_decay: float = 0.005
    label_smoothing: float = 0.1
    clip_grad: float = 5.0
    drop_path_rate: float | None = None  # None: the variant's own
    img_size: int = 224
    num_workers: int = 0
    seed: int = 0
    device: str = "cpu"
    model_kwargs: dict = field(default_factory=dict)
    max_steps_per_epoch: int | None = None
    init_checkpoint: str | None = None  # fine-tune from a local checkpoint of the same variant
    mixup: float = 0.0  # mixup alpha (paper 0.8); 0 = off
    cutmix: float = 0.0  # cutmix alpha (paper 1.0); 0 = off
    rand_augment: str | None = (
        None  # timm RandAugment string (paper "rand-m9-mstd0.5-inc1"); image folders only
    )
    reprob: float = 0.0  # random-erasing probability (paper 0.25)
    model_ema_decay: float | None = (
        None  # EMA of the weights (paper 0.9998); evaluated and saved as state_dict_ema
    )

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "img_size"):
            check_int(getattr(self, name), name, minimum=1, maximum=10**7)
        check_int(self.num_workers, "num_workers", minimum=0, maximum=1024)
        check_int(self.seed, "seed", minimum=0, maximum=2**32 - 1)
        if self.img_size % 32:
            raise InputError(f"img_size must be a multiple of 32 (the FasterViT stride), got {self.img_size}")
        if self.max_steps_per_epoch is not None:
            check_int(self.max_steps_per_epoch, "max_steps_per_epoch", minimum=1)
        if self.lr is not None:
            check_float(self.lr, "lr", minimum=0, open_min=True)
        for name in ("min_lr", "warmup_epochs", "weight_decay", "clip_grad", "mixup", "cutmix", "reprob"):
            check_float(getattr(self, name), name, minimum=0)
        check_float(self.label_smoothing, "label_smoothing", minimum=0, maximum=1, open_max=True)
        if self.drop_path_rate is not None:
            check_float(self.drop_path_rate, "drop_path_rate", minimum=0, maximum=1, open_max=True)
        if self.mixup < 0 or self.cutmix < 0:
            raise InputError(f"mixup and cutmix alphas must be >= 0, got {self.mixup}, {self.cutmix}")
        if not 0 <= self.reprob <= 1:
            raise InputError(f"reprob must be in [0, 1], got {self.reprob}")
        if self.model_ema_decay is not None and not 0 < self.model_ema_decay < 1:
            raise InputError(f"model_ema_decay must be in (0, 1), got {self.model_ema_decay}")
        if (self.mixup or self.cutmix) and self.batch_size % 2:
            raise InputError(
                f"mixup/cutmix mix pairs within a batch: batch_size must be even, got {self.batch_size}"
            )

    def base_lr(self, world_size: int) -> float:
        return self.lr if self.lr is not None else 5e-3 * self.batch_size * world_size / 4096


PAPER_TRAINING = TrainConfig(
    mixup=0.8, cutmix=1.0, rand_augment="rand-m9-mstd0.5-inc1", reprob=0.25, model_ema_decay=0.9998
)


def build_datasets(
    data: str, img_size: int, seed: int = 0, rand_augment: str | None = None
) -> tuple[Dataset, Dataset, list[str]]:
    """``data`` = "digits" (built in) or a path to an ImageFolder tree."""
    from .data import BUILTIN_DATASETS
    from .data import digits_dataset
    from .data import image_folder_datasets

    if data == "digits":
        if rand_augment:
            raise InputError(
                "RandAugment works on PIL images of an image folder; the built-in digits are tensors (drop "
                "--rand-augment, or train on an image folder)"
            )
        return digits_dataset(size=img_size)
    if data in BUILTIN_DATASETS:  # pragma: no cover - only digits today
        raise InputError(f"built-in dataset {data!r} has no loader")
    return image_folder_datasets(data, img_size=img_size, seed=seed, rand_augment=rand_augment)


def _decay_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """AdamW's two parameter groups, as the official optimiser factory splits them: biases, norms and the
    layer-scale gammas (1-D, or named ``gamma``) get no weight decay, every other tensor ``weight_decay``."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim <= 1 or "gamma" in name else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _lr_at(step: int, total: int, warmup: int, base: float, min_lr: float) -> float:
    """Linear warm-up then cosine decay to ``min_lr``."""
    if step < warmup:
        return base * (step + 1) / warmup
    t = (step - warmup) / max(1, total - warmup)
    return min_lr + 0.5 * (base - min_lr) * (1 + math.cos(math.pi * min(1.0, t)))


def _regularisers(
    cfg: TrainConfig, num_classes: int, model: torch.nn.Module, device: str | torch.device = "cpu"
):
    """timm's mixup/cutmix, random erasing and model EMA, as configured (None where off)."""
    mixup = erase = ema = None
    if cfg.mixup > 0 or cfg.cutmix > 0:
        from timm.data import Mixup

        mixup = Mixup(
            mixup_alpha=cfg.mixup,
            cutmix_alpha=cfg.cutmix,
            label_smoothing=cfg.label_smoothing,
            num_classes=num_classes,
        )
    if cfg.reprob > 0:
        from timm.data.random_erasing import RandomErasing

        erase = RandomErasing(probability=cfg.reprob, mode="pixel", device=str(device))
    if cfg.model_ema_decay is not None:
        from timm.utils import ModelEmaV3

        ema = ModelEmaV3(model, decay=cfg.model_ema_decay)
    return mixup, erase, ema


@torch.no_grad()
@loader_errors()
def evaluate(
    model: torch.nn.Module, loader: DataLoader | Dataset, device: str | torch.device = "cpu"
) -> dict[str, float]:
    """Top-1, top-5 accuracy and mean cross-entropy over a loader of (images, labels) or a Dataset of such pairs
    (batches of 64), summed over ranks under torchrun."""
    if isinstance(loader, Dataset):
        loader = DataLoader(loader, batch_size=64)
    if not isinstance(loader, DataLoader):
        raise InputError(
            f"evaluate needs a DataLoader or a Dataset of (image, label), got {type(loader).__name__}"
        )
    if not isinstance(model, torch.nn.Module):
        raise InputError(f"evaluate needs a model (torch.nn.Module), got {type(model).__name__}")
    model.eval()
    sums = torch.zeros(4, dtype=torch.float64)  # correct1, correct5, loss sum, count
    for batch in loader:
        x, y = _pair(batch, "validation data")
        x, y = x.to(device), y.to(device)
        logits = model(x)
        k = min(5, logits.shape[1])
        top = logits.topk(k, dim=1).indices
        sums[0] += (top[:, 0] == y).sum().item()
        sums[1] += (top == y[:, None]).any(dim=1).sum().item()
        sums[2] += F.cross_entropy(logits, y, reduction="sum").item()
        sums[3] += len(y)
    if is_distributed():
        import torch.distributed as dist

        dist.all_reduce(sums, op=dist.ReduceOp.SUM)
    n = max(sums[3].item(), 1.0)
    return {
        "top1": sums[0].item() / n,
        "top5": sums[1].item() / n,
        "loss": sums[2].item() / n,
        "n": int(sums[3]),
    }


def _user_data(data: Any, val_data: Any, classes: Any) -> tuple[Any, Any, list[str]]:
    """(train, val, class_names) from a user's Dataset/DataLoader pair; one InputError for what does not fit."""
    if not isinstance(data, (Dataset, DataLoader)):
        raise InputError(
            f"data: expected 'digits', an image-folder path, a torch Dataset or a DataLoader, got "
            f"{type(data).__name__}"
        )
    if not isinstance(val_data, (Dataset, DataLoader)):
        raise InputError(
            "val_data: a Dataset or DataLoader of (image, label) pairs is needed beside your own train data (each "
            f"epoch is evaluated on it), got {type(val_data).__name__}"
        )
    if classes is None:
        ds = data.dataset if isinstance(data, DataLoader) else data
        classes = getattr(ds, "classes", None)
    if isinstance(classes, int) and not isinstance(classes, bool):
        check_int(classes, "classes", minimum=1, maximum=2**20)
        classes = [str(i) for i in range(classes)]
    if not isinstance(classes, (list, tuple)) or not classes:
        raise InputError(
            "classes: pass the class names (or their count) for your own data; the dataset has no .classes"
        )
    return data, val_data, [str(c) for c in classes]


def _pair(batch: Any, what: str) -> tuple[Any, Any]:
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        n = len(batch) if isinstance(batch, (tuple, list)) else type(batch).__name__
        raise InputError(f"{what}: a batch must be (images, labels), got {n}")
    return batch[0], batch[1]


def _check_batch(batch: Any, num_classes: int, in_chans: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of a user's loader: (B, C, H, W) float images and (B,) class indices in range."""
    x, y = _pair(batch, "train data")
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise InputError(
            f"train data: a batch must be (images, labels) tensors, got ({type(x).__name__}, {type(y).__name__})"
        )
    if x.dim() != 4 or x.shape[1] != in_chans or not x.is_floating_point():
        raise InputError(
            f"train data: images must be float (B, {in_chans}, H, W), got {x.dtype} {tuple(x.shape)}"
        )
    if y.dim() != 1 or len(y) != len(x) or y.is_floating_point() or y.dtype == torch.bool:
        raise InputError(f"train data: labels must be int (B,) = ({len(x)},), got {y.dtype} {tuple(y.shape)}")
    lo, hi = int(y.min()), int(y.max())
    if lo < 0 or hi >= num_classes:
        raise InputError(f"train data: labels must be class indices in [0, {num_classes}), got {lo}..{hi}")
    return x, y


def _state_path(resume: Any, out: str | Path | None) -> Path | None:
    if isinstance(resume, (str, os.PathLike)):
        return Path(resume)
    if resume not in (True, False, None):
        raise InputError(f"resume must be True/False or a path to a train_state.pt, got {resume!r}")
    return None if out is None else Path(out) / "train_state.pt"


@loader_errors()
def train(
    cfg: TrainConfig,
    data: str | os.PathLike | Dataset | DataLoader,
    out: str | Path | None = None,
    show_progress: bool = True,
    *,
    val_data: Dataset | DataLoader | None = None,
    classes: Sequence[str] | int | None = None,
    callbacks: Any = None,
    log_dir: str | os.PathLike | None = None,
    resume: bool | str | os.PathLike = False,
    command: str | None = None,
) -> dict[str, Any]:
    """Train ``cfg.model`` on ``data`` ("digits", an ImageFolder path, or your own ``Dataset``/``DataLoader`` of
    (image, label) with ``val_data`` beside it and ``classes`` unless the dataset has ``.classes``); evaluate
    top-1/top-5 after each epoch. A Dataset gets the sampler and batching of the built-in data; a DataLoader is
    iterated as given (under torchrun it must have a ``DistributedSampler``).

    Rank 0 writes into ``out``: the model folder ``out/model`` (``FasterViT.from_pretrained``; with EMA also
    ``out/model_ema``), ``out/checkpoint.pth`` (official key layout, loads with timm's ``checkpoint_path=``),
    ``out/metrics.json``, and after every epoch ``out/train_state.pt`` (model, optimiser, EMA, samplers and every
    rank's RNG states). ``resume=True`` continues from that file (or ``resume=PATH`` from that one): the run goes
    on at the first unfinished epoch and ends bit for bit as the uninterrupted run would. ``callbacks`` (``f(step,
    metrics)`` or objects with ``on_step``/``on_end``) and ``log_dir`` (JSONL, TensorBoard when installed) get the
    loss and lr of every step and the validation metrics of every epoch (rank 0). Returns the metrics."""
    import timm

    from iclr24.paperkit.resume import global_rng_state
    from iclr24.paperkit.resume import load_train_state
    from iclr24.paperkit.resume import save_train_state
    from iclr24.paperkit.resume import set_global_rng_state
    from iclr24.paperkit.tracking import StepLog

    from . import registry

    registry._check_name(cfg.model)
    registry.check_model_kwargs(cfg.model_kwargs, cfg.model)
    if cfg.epochs < 1 or cfg.batch_size < 1:
        raise InputError(f"epochs and batch_size must be >= 1, got {cfg.epochs}, {cfg.batch_size}")
    own_data = not isinstance(data, (str, os.PathLike))
    if own_data:
        data, val_data, classes = _user_data(data, val_data, classes)
    elif val_data is not None or classes is not None:
        raise InputError(
            "val_data and classes are for your own Dataset/DataLoader; 'digits' and folders have theirs"
        )
    state_path = _state_path(resume, out)
    if resume and (state_path is None or not state_path.is_file()):
        raise InputFileError(
            f"nothing to resume: {state_path or 'train_state.pt'} does not exist (train writes it into --out after "
            "every epoch; start without resume)",
            state_path,
        )
    cpu0 = time.process_time()
    info = init_distributed(device=cfg.device)
    log = StepLog(log_dir if info.is_main else None, callbacks if info.is_main else None, name="fastervit")
    try:
        if own_data:
            train_ds, val_ds = data, val_data
        else:
            train_ds, val_ds, classes = build_datasets(str(data), cfg.img_size, cfg.seed, cfg.rand_augment)
        # seeded after the data is read: the first import of scipy/sklearn (the digits) draws from Python's
        # `random`, which would make the first run in a process differ from the next ones
        seed_everything(cfg.seed + info.rank)
        kwargs = dict(cfg.model_kwargs)
        kwargs.setdefault("resolution", cfg.img_size)
        if cfg.drop_path_rate is not None:
            kwargs["drop_path_rate"] = cfg.drop_path_rate
        torch.manual_seed(cfg.seed)  # identical initial weights on every rank
        model = timm.create_model(cfg.model, num_classes=len(classes), **kwargs)
        if cfg.init_checkpoint and not resume:
            registry.load_for_finetuning(model, cfg.init_checkpoint)
        n_params = sum(p.numel() for p in model.parameters())
        ddp = wrap_ddp(model, info)
        mixup, erase, ema = _regularisers(cfg, len(classes), model, info.device)
        if isinstance(train_ds, DataLoader):
            train_dl, sampler = train_ds, train_ds.sampler
            if is_distributed() and not hasattr(sampler, "set_epoch"):
                raise InputError(
                    "under torchrun your train DataLoader needs a DistributedSampler (each rank its own shard); "
                    "or pass the Dataset, which gets one"
                )
        else:
            sampler = distributed_sampler(train_ds, shuffle=True, seed=cfg.seed, drop_last=True)
            train_dl = DataLoader(
                train_ds,
                batch_size=cfg.batch_size,
                sampler=sampler,
                num_workers=cfg.num_workers,
                drop_last=len(train_ds) // max(info.world_size, 1) > cfg.batch_size,
            )
        if isinstance(val_ds, DataLoader):
            val_dl = val_ds
        else:
            val_sampler = distributed_sampler(val_ds, shuffle=False) if is_distributed() else None
            val_dl = DataLoader(
                val_ds, batch_size=cfg.batch_size, sampler=val_sampler, num_workers=cfg.num_workers
            )
        opt = torch.optim.AdamW(_decay_groups(model, cfg.weight_decay), lr=cfg.base_lr(info.world_size))
        try:
            n_batches = len(train_dl)
        except TypeError:  # an iterable dataset
            if cfg.max_steps_per_epoch is None:
                raise InputError(
                    "train data: this DataLoader has no length (an IterableDataset); set max_steps_per_epoch"
                ) from None
            n_batches = cfg.max_steps_per_epoch
        steps_per_epoch = (
            n_batches if cfg.max_steps_per_epoch is None else min(n_batches, cfg.max_steps_per_epoch)
        )
        if steps_per_epoch < 1:
            raise InputError("train data: the DataLoader yields no batch (fewer samples than one batch?)")
        total = cfg.epochs * steps_per_epoch
        warmup = int(cfg.warmup_epochs * steps_per_epoch)
        gens = (
            {"sampler": sampler.generator}
            if isinstance(getattr(sampler, "generator", None), torch.Generator)
            else {}
        )
        run_meta = {
            "model": cfg.model,
            "epochs": cfg.epochs,
            "steps_per_epoch": steps_per_epoch,
            "world_size": info.world_size,
            "seed": cfg.seed,
            "classes": len(classes),
            "data": "user data" if own_data else str(data),
        }
        history, step, start_epoch, resumed_from = [], 0, 0, None
        if resume:
            saved: dict = {}
            step = load_train_state(
                state_path,
                model=model,
                optimizer=opt,
                generators=gens,
                expect=run_meta,
                into=saved,
                what="fastervit training state",
            )
            if ema is not None:
                if "ema" not in saved:
                    raise InputFileError(
                        f"{state_path}: holds no EMA weights, but this run keeps an EMA", state_path
                    )
                ema.load_state_dict(saved["ema"])
            history, start_epoch = list(saved.get("history", [])), int(saved.get("epoch", 0))
            rank_rng, rank_history = saved.get("rank_rng") or [], saved.get("rank_history") or []
            if info.rank < len(rank_rng):
                set_global_rng_state(rank_rng[info.rank])
            if info.rank < len(rank_history):
                history = list(rank_history[info.rank])
            resumed_from = start_epoch
        t0 = time.perf_counter()
        for epoch in range(start_epoch, cfg.epochs):
            if hasattr(sampler, "set_epoch"):
                sampler.set_epoch(epoch)
            ddp.train()
            loss_sum, seen = 0.0, 0
            bar = progress(
                train_dl,
                total=steps_per_epoch,
                desc=f"epoch {epoch + 1}/{cfg.epochs}",
                disable=not (show_progress and info.is_main),
            )
            for i, batch in enumerate(bar):
                if i >= steps_per_epoch:
                    break
                x, y = _check_batch(batch, len(classes), model.in_chans) if own_data else batch
                lr = _lr_at(step, total, warmup, cfg.base_lr(info.world_size), cfg.min_lr)
                for g in opt.param_groups:
                    g["lr"] = lr
                x, y = x.to(info.device), y.to(info.device)
                if erase is not None:
                    x = erase(x)
                if mixup is not None:  # soft targets; label smoothing is applied inside Mixup
                    if len(x) % 2:  # Mixup pairs samples within the batch: drop a last odd one
                        x, y = x[:-1], y[:-1]
                    x, soft = mixup(x, y)
                    loss = torch.sum(-soft * F.log_softmax(ddp(x), dim=-1), dim=-1).mean()
                else:
                    loss = F.cross_entropy(ddp(x), y, label_smoothing=cfg.label_smoothing)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.clip_grad:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_grad)
                opt.step()
                if ema is not None:
                    ema.update(model, step=step)
                loss_value = loss.item()
                loss_sum += loss_value * len(y)
                seen += len(y)
                step += 1
                log(step, {"loss": loss_value, "lr": lr, "epoch": epoch + 1})
            ev = evaluate(model, val_dl, info.device)
            if ema is not None:
                ev.update({f"ema_{k}": v for k, v in evaluate(ema.module, val_dl, info.device).items()})
            history.append({"epoch": epoch + 1, "train_loss": loss_sum / max(seen, 1), **ev})
            row = history[-1]
            log(step, {"epoch": epoch + 1, "train_loss": row["train_loss"],
                       **{f"val_{k}": v for k, v in ev.items() if k not in ("n", "ema_n")}})  # fmt: skip
            if state_path is not None:
                _save_state(
                    state_path, info, step=step, model=model, opt=opt, gens=gens, meta=run_meta, ema=ema,
                    history=history, epoch=epoch + 1, save=save_train_state, rng_state=global_rng_state,
                )  # fmt: skip
        metrics = {
            "model": cfg.model,
            "data": "user data" if own_data else str(data),
            "classes": len(classes),
            "params": n_params,
            "world_size": info.world_size,
            "seconds": time.perf_counter() - t0,
            "resumed_from_epoch": resumed_from,
            "final": history[-1],
            "history": history,
            "config": {k: v for k, v in asdict(cfg).items()},
        }
        if out is not None and info.is_main:
            _write_outputs(
                Path(out), cfg, model, ema, classes, kwargs, metrics, step,
                cpu_seconds=time.process_time() - cpu0, command=command,
            )  # fmt: skip
        log.close({k: v for k, v in history[-1].items() if k != "epoch"})
        return metrics
    finally:
        log.close()
        cleanup_distributed()


def _save_state(path, info, *, step, model, opt, gens, meta, ema, history, epoch, save, rng_state) -> None:
    """Rank 0 writes the training state, with every rank's RNG states (each rank draws its own dropout and
    augmentation randomness) and history (its own train loss), so a resumed torchrun run continues each rank
    exactly."""
    ranks = [(rng_state(), history)]
    if is_distributed():
        import torch.distributed as dist

        ranks = [None] * info.world_size
        dist.all_gather_object(ranks, (rng_state(), history))
    if info.is_main:
        extra = {
            "history": history,
            "epoch": epoch,
            "rank_rng": [r[0] for r in ranks],
            "rank_history": [r[1] for r in ranks],  # train_loss is each rank's own
        }
        if ema is not None:
            extra["ema"] = ema.state_dict()
        save(path, step=step, model=model, optimizer=opt, generators=gens, meta=meta, extra=extra)
    if is_distributed():
        import torch.distributed as dist

        dist.barrier()


def _write_outputs(
    out: Path, cfg, model, ema, classes, kwargs, metrics, step, *, cpu_seconds: float, command: str | None
) -> None:
    """checkpoint.pth (official layout), the model folder(s) and metrics.json."""
    atomic_torch_save(
        {
            "state_dict": model.state_dict(),
            "model": cfg.model,
            "num_classes": len(classes),
            "classes": classes,
            "img_size": cfg.img_size,
            "model_kwargs": kwargs,
            **({"state_dict_ema": ema.module.state_dict()} if ema is not None else {}),
        },
        out / "checkpoint.pth",
    )
    final = metrics["final"]
    prov = {
        "command": command
        or f"iclr24.fastervit.train.train(TrainConfig(model={cfg.model!r}, ...), {metrics['data']!r})",
        "seed": cfg.seed,
        "steps": step,
        "epochs": cfg.epochs,
        "cpu_seconds": round(cpu_seconds, 2),
        "world_size": metrics["world_size"],
        "resumed_from_epoch": metrics["resumed_from_epoch"],
        "data": metrics["data"],
        "classes": list(classes),
        "img_size": cfg.img_size,
        "train_config": metrics["config"],
        "losses": [
            {"epoch": h["epoch"], "train_loss": h["train_loss"], "top1": h["top1"]}
            for h in metrics["history"]
        ],
        "final": {k: v for k, v in final.items() if not k.startswith("ema_")},
    }
    model.save_pretrained(out / "model", provenance=prov)
    if ema is not None:
        ema_model = ema.module
        ema_prov = dict(prov, weights=f"EMA of the weights (decay {cfg.model_ema_decay})")
        ema_prov["final"] = {k[4:]: v for k, v in final.items() if k.startswith("ema_")}
        ema_model.save_pretrained(out / "model_ema", provenance=ema_prov)
    atomic_write_json(out / "metrics.json", metrics)
