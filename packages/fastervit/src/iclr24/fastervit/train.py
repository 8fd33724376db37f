"""Training and evaluation of a registered FasterViT on an image folder or built-in data, single process or
data-parallel under ``torchrun`` (``torchrun --nproc_per_node N -m iclr24.fastervit.cli train DATA ...``)."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from iclr24.paperkit import atomic_torch_save, atomic_write_json, progress, seed_everything
from iclr24.paperkit.distributed import (
    cleanup_distributed,
    distributed_sampler,
    init_distributed,
    is_distributed,
    wrap_ddp,
)
from iclr24.paperkit.errors import InputError, check_float, check_int

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
    from .data import BUILTIN_DATASETS, digits_dataset, image_folder_datasets

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
    model: torch.nn.Module, loader: DataLoader, device: str | torch.device = "cpu"
) -> dict[str, float]:
    """Top-1, top-5 accuracy and mean cross-entropy over a loader (summed over ranks under torchrun)."""
    model.eval()
    sums = torch.zeros(4, dtype=torch.float64)  # correct1, correct5, loss sum, count
    for x, y in loader:
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


@loader_errors()
def train(
    cfg: TrainConfig, data: str, out: str | Path | None = None, show_progress: bool = True
) -> dict[str, Any]:
    """Train ``cfg.model`` on ``data`` ("digits" or an ImageFolder path); evaluate top-1/top-5 after each epoch;
    rank 0 writes ``out/checkpoint.pth`` (official key layout, loads with ``checkpoint_path=``) and
    ``out/metrics.json``. Returns the metrics."""
    import timm

    from . import registry

    registry._check_name(cfg.model)
    registry.check_model_kwargs(cfg.model_kwargs, cfg.model)
    if cfg.epochs < 1 or cfg.batch_size < 1:
        raise InputError(f"epochs and batch_size must be >= 1, got {cfg.epochs}, {cfg.batch_size}")
    info = init_distributed(device=cfg.device)
    try:
        seed_everything(cfg.seed + info.rank)
        train_ds, val_ds, classes = build_datasets(data, cfg.img_size, cfg.seed, cfg.rand_augment)
        kwargs = dict(cfg.model_kwargs)
        kwargs.setdefault("resolution", cfg.img_size)
        if cfg.drop_path_rate is not None:
            kwargs["drop_path_rate"] = cfg.drop_path_rate
        torch.manual_seed(cfg.seed)  # identical initial weights on every rank
        model = timm.create_model(cfg.model, num_classes=len(classes), **kwargs)
        if cfg.init_checkpoint:
            registry.load_for_finetuning(model, cfg.init_checkpoint)
        n_params = sum(p.numel() for p in model.parameters())
        ddp = wrap_ddp(model, info)
        mixup, erase, ema = _regularisers(cfg, len(classes), model, info.device)
        sampler = distributed_sampler(train_ds, shuffle=True, seed=cfg.seed, drop_last=True)
        train_dl = DataLoader(
            train_ds,
            batch_size=cfg.batch_size,
            sampler=sampler,
            num_workers=cfg.num_workers,
            drop_last=len(train_ds) // max(info.world_size, 1) > cfg.batch_size,
        )
        val_sampler = distributed_sampler(val_ds, shuffle=False) if is_distributed() else None
        val_dl = DataLoader(
            val_ds, batch_size=cfg.batch_size, sampler=val_sampler, num_workers=cfg.num_workers
        )
        decay, no_decay = [], []
        for name, p in model.named_parameters():
            (no_decay if p.ndim <= 1 or "gamma" in name else decay).append(p)
        opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=cfg.base_lr(info.world_size),
        )
        steps_per_epoch = (
            len(train_dl) if cfg.max_steps_per_epoch is None else min(len(train_dl), cfg.max_steps_per_epoch)
        )
        total = cfg.epochs * steps_per_epoch
        warmup = int(cfg.warmup_epochs * steps_per_epoch)
        history, step, t0 = [], 0, time.perf_counter()
        for epoch in range(cfg.epochs):
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
            for i, (x, y) in enumerate(bar):
                if i >= steps_per_epoch:
                    break
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
                loss_sum += loss.item() * len(y)
                seen += len(y)
                step += 1
            ev = evaluate(model, val_dl, info.device)
            if ema is not None:
                ev.update({f"ema_{k}": v for k, v in evaluate(ema.module, val_dl, info.device).items()})
            history.append({"epoch": epoch + 1, "train_loss": loss_sum / max(seen, 1), **ev})
        metrics = {
            "model": cfg.model,
            "data": str(data),
            "classes": len(classes),
            "params": n_params,
            "world_size": info.world_size,
            "seconds": time.perf_counter() - t0,
            "final": history[-1],
            "history": history,
            "config": {k: v for k, v in asdict(cfg).items()},
        }
        if out is not None and info.is_main:
            out = Path(out)
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
            atomic_write_json(out / "metrics.json", metrics)
        return metrics
    finally:
        cleanup_distributed()
