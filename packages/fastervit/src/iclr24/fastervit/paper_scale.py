"""Paper scale: FasterViT-0's official ImageNet-1K training run, a few steps of it.

The official recipe (``fastervit/configs/faster_vit_0_224_1k.yaml``, the paper's Sec. 4): FasterViT-0 at 224 x 224,
128 images per GPU and lr 5e-3 for a global batch of 4,096, AdamW (betas 0.9/0.999), cosine schedule with 20 warm-up
epochs down to 5e-6, 310 epochs (300 + 10 cool-down), gradient clipping 5.0, label smoothing 0.1, mixup 0.8 /
cutmix 1.0, RandAugment ``rand-m9-mstd0.5-inc1``, random erasing 0.25, model EMA 0.9998, AMP, 8 workers. ImageNet-1K
has 1,281,167 training images: floor(1,281,167 / 4,096) = 312 steps per epoch (timm drops the last partial batch),
so 310 x 312 = 96,720 paper steps.

:func:`paper_scale` writes an ImageNet-format JPEG folder (``train/<wnid>/*.JPEG``, ``val/<wnid>/*.JPEG``, 1,000
classes) of synthetic images to a temporary folder (paperkit's stand-in writer), reads it with the package's
:func:`~iclr24.fastervit.data.image_folder_datasets` (its RandAugment train transform) and streams it through a
``DataLoader`` into the body of the package's :func:`~iclr24.fastervit.train.train` loop with the paper's
regularisers (:data:`~iclr24.fastervit.train.PAPER_TRAINING`): random erasing, mixup/cutmix, the loss, clipping,
AdamW at the cosine schedule's rate, the EMA update.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace

import torch
import torch.nn.functional as F

from iclr24.paperkit import PaperScale
from iclr24.paperkit.data.standins import IMAGENET_PX
from iclr24.paperkit.data.standins import write_imagenet_folder
from iclr24.paperkit.scale import ScaleRun
from iclr24.paperkit.scale import steps_per_epoch

from .data import image_folder_datasets
from .train import PAPER_TRAINING
from .train import _decay_groups
from .train import _lr_at
from .train import _regularisers

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "paper_scale"]


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
        return steps_per_epoch(self.train_images, self.batch, drop_last=True)  # timm drops the partial batch

    @property
    def paper_steps(self) -> int:
        return self.epochs * self.steps_per_epoch


PAPER_SCALE = PaperScaleConfig()


def paper_scale(
    device: str = "cpu",
    *,
    classes: int | None = None,
    per_class: int = 2,
    micro_batch: int | None = None,
    img_size: int | None = None,
    image_px=IMAGENET_PX,
) -> PaperScale:
    """One micro-batch of FasterViT-0's ImageNet training step. On CUDA 128 images (one GPU's share of the official
    batch) with fp16 autocast and a gradient scaler (the official ``amp: true``), 32 x accumulation; on the CPU 4
    images, fp32. The keyword overrides shrink it for tests only."""
    import timm

    from . import registry  # noqa: F401 - registers the FasterViT variants with timm

    cfg = PAPER_SCALE
    run = ScaleRun(
        device, batch=cfg.batch, cuda=cfg.per_gpu_batch, cpu=cfg.cpu_micro_batch, micro_batch=micro_batch
    )
    cuda, mb = run.cuda, run.micro_batch
    n_classes, size = classes or cfg.classes, img_size or cfg.img_size
    tcfg = replace(
        PAPER_TRAINING, model=cfg.model, batch_size=mb, lr=cfg.lr, min_lr=cfg.min_lr, img_size=size
    )
    tcfg = replace(tcfg, weight_decay=cfg.weight_decay, clip_grad=cfg.clip_grad, device=device)
    root = write_imagenet_folder(run.folder, n_classes, per_class, val_per_class=1, size=image_px)
    train_ds, _val, names = image_folder_datasets(root, img_size=size, rand_augment=tcfg.rand_augment)
    dev = torch.device(device)
    torch.manual_seed(0)
    model = timm.create_model(cfg.model, num_classes=len(names), resolution=size).to(dev)
    if cuda:
        model = model.to(memory_format=torch.channels_last)  # the official channels_last: true
    model.train()
    mixup, erase, ema = _regularisers(tcfg, len(names), model, dev)
    opt = torch.optim.AdamW(_decay_groups(model, tcfg.weight_decay), lr=cfg.lr)
    total, warmup = cfg.paper_steps, cfg.warmup_epochs * cfg.steps_per_epoch
    state = {"step": warmup}  # a step just after the warm-up (the cost is the same at any step)

    def set_lr() -> None:
        for g in opt.param_groups:
            g["lr"] = _lr_at(state["step"], total, warmup, cfg.lr, cfg.min_lr)

    def loss(x, y):
        x, soft = mixup(erase(x.contiguous(memory_format=torch.channels_last) if cuda else x), y)
        with torch.autocast("cuda", dtype=torch.float16, enabled=cuda):
            return torch.sum(-soft * F.log_softmax(model(x).float(), dim=-1), dim=-1).mean()

    def update_ema() -> None:
        ema.update(model, step=state["step"])
        state["step"] += 1

    batches = run.stream(train_ds, workers=cfg.workers)
    scaler = torch.amp.GradScaler("cuda") if cuda else None
    clip = (model.parameters(), tcfg.clip_grad)
    step = run.train_step(batches, loss, opt, before=set_lr, after=update_ema, clip=clip, scaler=scaler)
    step.root = root  # the ImageNet-format folder (tests read it)
    n_img = n_classes * per_class
    return run.paper_scale(
        step,
        config=(
            f"{cfg.model} at {size}px, batch {cfg.batch} ({cfg.per_gpu_batch}/GPU), AdamW lr {cfg.lr:g} cosine "
            f"(warm-up {cfg.warmup_epochs} ep, min {cfg.min_lr:g}), wd {cfg.weight_decay:g}, clip {cfg.clip_grad:g}, "
            f"mixup/cutmix, RandAugment, erasing 0.25, EMA 0.9998, {cfg.epochs} epochs x {cfg.steps_per_epoch} steps"
        ),
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
