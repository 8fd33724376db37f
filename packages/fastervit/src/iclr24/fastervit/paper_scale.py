"""Paper scale: FasterViT-0's official ImageNet-1K training run, a few steps of it.

The official recipe (``fastervit/configs/faster_vit_0_224_1k.yaml``, the paper's Sec. 4): FasterViT-0 at 224 x 224,
128 images per GPU and lr 5e-3 for a global batch of 4,096, AdamW (betas 0.9/0.999), cosine schedule with 20 warm-up
epochs down to 5e-6, 310 epochs (300 + 10 cool-down), gradient clipping 5.0, label smoothing 0.1, mixup 0.8 /
cutmix 1.0, RandAugment ``rand-m9-mstd0.5-inc1``, random erasing 0.25, model EMA 0.9998, AMP, 8 workers. ImageNet-1K
has 1,281,167 training images: floor(1,281,167 / 4,096) = 312 steps per epoch (timm drops the last partial batch),
so 310 x 312 = 96,720 paper steps.

:func:`paper_scale` writes an ImageNet-format JPEG folder (``train/<wnid>/*.JPEG``, ``val/<wnid>/*.JPEG``, 1,000
classes) of synthetic images to a temporary folder, reads it with the package's
:func:`~iclr24.fastervit.data.image_folder_datasets` (its RandAugment train transform) and streams it through a
``DataLoader`` into the body of the package's :func:`~iclr24.fastervit.train.train` loop with the paper's
regularisers (:data:`~iclr24.fastervit.train.PAPER_TRAINING`): random erasing, mixup/cutmix, the loss, clipping,
AdamW at the cosine schedule's rate, the EMA update.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from iclr24.paperkit import PaperScale
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.scale import endless, tie

from .data import image_folder_datasets
from .train import PAPER_TRAINING, _lr_at, _regularisers

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "write_imagenet_folder", "paper_scale"]


@dataclass(frozen=True)
class PaperScaleConfig:
    """FasterViT-0's ImageNet-1K recipe (``faster_vit_0_224_1k.yaml``)."""

    model: str = "faster_vit_0_224"
    img_size: int = 224
    classes: int = 1000
    batch: int = 4096  # global: 128 per GPU (yaml batch_size) x 32
    per_gpu_batch: int = 128
    lr: float = 5e-3
    min_lr: float = 5e-6
    warmup_epochs: int = 20
    epochs: int = 310  # 300 + 10 cool-down (yaml epochs: 310, cooldown_epochs: 10)
    weight_decay: float = 0.005  # the paper's value for FasterViT-0..3, as TrainConfig (the yaml says 0.05)
    clip_grad: float = 5.0
    train_images: int = 1_281_167
    workers: int = 8
    cpu_micro_batch: int = 4  # one CPU core: 4 images per micro-step

    @property
    def steps_per_epoch(self) -> int:
        return self.train_images // self.batch

    @property
    def paper_steps(self) -> int:
        return self.epochs * self.steps_per_epoch


PAPER_SCALE = PaperScaleConfig()


def write_imagenet_folder(
    root: Path, classes: int, per_class: int, val_per_class: int = 1, size=(500, 375), seed: int = 0
) -> Path:
    """ImageNet's folder layout: ``root/{train,val}/nNNNNNNNN/nNNNNNNNN_K.JPEG`` (RGB JPEGs, ``size`` = w x h)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    w, h = size
    for split, n in (("train", per_class), ("val", val_per_class)):
        for c in range(classes):
            wnid = f"n{c:08d}"
            d = root / split / wnid
            d.mkdir(parents=True, exist_ok=True)
            for k in range(n):
                small = rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)  # a smooth random picture
                img = Image.fromarray(small).resize((w, h), Image.BILINEAR)
                img.save(d / f"{wnid}_{k}.JPEG", quality=90)
    return root


def paper_scale(
    device: str = "cpu",
    *,
    classes: int | None = None,
    per_class: int = 2,
    micro_batch: int | None = None,
    img_size: int | None = None,
    image_px=(500, 375),
) -> PaperScale:
    """One micro-batch of FasterViT-0's ImageNet training step. On CUDA 128 images (one GPU's share of the official
    batch) with fp16 autocast and a gradient scaler (the official ``amp: true``), 32 x accumulation; on the CPU 4
    images, fp32. The keyword overrides shrink it for tests only."""
    import timm

    from . import registry  # noqa: F401 - registers the FasterViT variants with timm

    cfg = PAPER_SCALE
    cuda = device.startswith("cuda")
    mb = micro_batch or (cfg.per_gpu_batch if cuda else cfg.cpu_micro_batch)
    if cfg.batch % mb:
        raise InputError(f"micro_batch must divide the paper's batch {cfg.batch}, got {mb}")
    n_classes = classes or cfg.classes
    size = img_size or cfg.img_size
    tcfg = replace(
        PAPER_TRAINING,
        model=cfg.model,
        batch_size=mb,
        lr=cfg.lr,
        min_lr=cfg.min_lr,
        weight_decay=cfg.weight_decay,
        clip_grad=cfg.clip_grad,
        img_size=size,
        device=device,
    )
    tmp = tempfile.TemporaryDirectory(prefix="fastervit-imagenet-")
    root = write_imagenet_folder(Path(tmp.name), n_classes, per_class, size=image_px)
    train_ds, _val, names = image_folder_datasets(root, img_size=size, rand_augment=tcfg.rand_augment)
    loader = torch.utils.data.DataLoader(
        train_ds,
        batch_size=mb,
        shuffle=True,
        drop_last=True,
        num_workers=cfg.workers if cuda else 0,
        pin_memory=cuda,
        persistent_workers=cuda,
        generator=torch.Generator().manual_seed(0),
    )
    batches = endless(loader)
    dev = torch.device(device)
    torch.manual_seed(0)
    model = timm.create_model(cfg.model, num_classes=len(names), resolution=size).to(dev)
    if cuda:
        model = model.to(memory_format=torch.channels_last)  # the official channels_last: true
    model.train()
    mixup, erase, ema = _regularisers(tcfg, len(names), model, dev)
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim <= 1 or "gamma" in name else decay).append(p)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": tcfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
    )
    scaler = torch.amp.GradScaler("cuda") if cuda else None
    total, warmup = cfg.paper_steps, cfg.warmup_epochs * cfg.steps_per_epoch
    state = {"step": warmup}  # a step just after the warm-up (the cost is the same at any step)

    def step() -> float:
        lr = _lr_at(state["step"], total, warmup, cfg.lr, cfg.min_lr)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = next(batches)
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        if cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        x = erase(x)
        x, soft = mixup(x, y)
        with torch.autocast("cuda", dtype=torch.float16, enabled=cuda):
            loss = torch.sum(-soft * F.log_softmax(model(x).float(), dim=-1), dim=-1).mean()
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg.clip_grad)
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg.clip_grad)
            opt.step()
        ema.update(model, step=state["step"])
        state["step"] += 1
        return float(loss.detach())

    step.root = root  # the ImageNet-format folder (tests read it)
    tie(step, tmp)  # the stand-in data's folder lives as long as the step
    accumulation = cfg.batch // mb
    n_img = n_classes * per_class
    return PaperScale(
        config=(
            f"{cfg.model} at {size}px, batch {cfg.batch} ({cfg.per_gpu_batch}/GPU), AdamW lr {cfg.lr:g} cosine "
            f"(warm-up {cfg.warmup_epochs} ep, min {cfg.min_lr:g}), wd {cfg.weight_decay:g}, clip {cfg.clip_grad:g}, "
            f"mixup/cutmix, RandAugment, erasing 0.25, EMA 0.9998, {cfg.epochs} epochs x {cfg.steps_per_epoch} steps"
        ),
        step=step,
        micro_batch=mb,
        accumulation=accumulation,
        paper_steps=cfg.paper_steps,
        dataset=f"synthetic ImageNet-format JPEG folder: {n_img:,} train images, {n_classes} classes",
        notes=[
            f"stand-in data: {n_img:,} synthetic {image_px[0]}x{image_px[1]} JPEGs in ImageNet's train/<wnid>/ "
            f"layout ({n_classes} classes), read by image_folder_datasets with the paper's RandAugment and streamed "
            "by a DataLoader",
            "the official global batch of 4,096 is 32 GPUs x 128; a paper step here is micro-batches x accumulation "
            "on one device (each micro-step also clips, steps AdamW and updates the EMA: a slight over-estimate)",
            (
                f"CUDA: {mb} images per micro-step (one GPU's share), fp16 autocast with a gradient scaler (the "
                f"official amp), channels_last, {cfg.workers} workers, pinned memory"
                if cuda
                else f"CPU: {mb} images per micro-step, fp32 (AMP is CUDA-only here)"
            ),
            "MESA (the official mesa: 0.0 in this yaml; the paper's 0.1 for FasterViT-0) is not implemented",
        ],
    )
