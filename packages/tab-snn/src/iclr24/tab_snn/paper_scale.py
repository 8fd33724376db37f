"""Paper scale (issue 48): the official CIFAR-10 run (``main.py``) for a few steps.

``PAPER_SCALE``: the official VGG-9 with TAB (:class:`~.models.SpikingVGG9`, T = 4, direct encoding, LIF tau 0.9),
CE on the time-averaged logits, SGD lr 0.02, momentum 0.9, weight decay 5e-4, cosine annealing, batch 64, 200 epochs
of CIFAR-10's 50,000 training images (782 steps an epoch), fp32 (the official code has no mixed precision), random
crop (pad 4) and flip. CIFAR is not offline, so the data is a synthetic stand-in in the real format: the
``cifar-10-batches-py`` folder (``data_batch_1..5``, ``test_batch``, ``batches.meta``: pickled dicts of uint8
``(n, 3072)`` pixels and labels) written to a temporary folder by paperkit's stand-in writer and read by
:func:`~.data.load_cifar` (which, like the official torchvision loader, holds the images in memory). One step is one
micro-batch of :func:`~.train.train_model`'s update (crop/flip, forward, CE(mean_t logits), backward, SGD, cosine
step)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from iclr24.paperkit import PaperScale
from iclr24.paperkit.data.standins import write_cifar10_batches
from iclr24.paperkit.scale import ScaleRun
from iclr24.paperkit.scale import steps_per_epoch

from .data import load_cifar
from .model import SpikingVGG9
from .train import cosine_sgd
from .train import crop_flip

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "paper_scale"]


@dataclass(frozen=True)
class PaperScaleConfig:
    """The official ``main.py`` defaults (``-b 64 -T 4 --tau 0.9 --epochs 200``, SGD 0.02 / 0.9 / 5e-4)."""

    arch: str = "vgg9"
    T: int = 4
    tau: float = 0.9
    norm: str = "tab"
    width: float = 1.0
    batch_size: int = 64
    lr: float = 0.02
    momentum: float = 0.9
    weight_decay: float = 5e-4
    epochs: int = 200
    n_train: int = 50_000  # CIFAR-10
    cpu_micro_batch: int = 32  # on the CPU: 2 x 32 (one micro-step of 64 is over ~20 s on one loaded core)

    @property
    def steps_per_epoch(self) -> int:
        return steps_per_epoch(self.n_train, self.batch_size, drop_last=False)  # the DataLoader default

    @property
    def paper_steps(self) -> int:
        return self.epochs * self.steps_per_epoch


PAPER_SCALE = PaperScaleConfig()


def paper_scale(
    device: str = "cpu",
    *,
    images_per_batch: int = 1000,
    micro_batch: int | None = None,
    cfg: PaperScaleConfig | None = None,
) -> PaperScale:
    """One micro-step of the official CIFAR-10 VGG-9 run on a synthetic CIFAR-format folder (6 batch files of
    ``images_per_batch`` images). ``micro_batch``: default 64 on CUDA, ``cfg.cpu_micro_batch`` on the CPU;
    ``cfg``: a smaller :class:`PaperScaleConfig` (tests)."""
    cfg = cfg or PAPER_SCALE
    run = ScaleRun(device, batch=cfg.batch_size, cpu=cfg.cpu_micro_batch, micro_batch=micro_batch)
    folder = write_cifar10_batches(run.folder, 5 * images_per_batch, images_per_batch)
    data = load_cifar(folder, num_classes=10)  # the package's loader (in memory, as torchvision's CIFAR10)
    batches = run.stream(torch.utils.data.TensorDataset(data.x_train, data.y_train), workers=4, seed=42)
    torch.manual_seed(42)
    model = SpikingVGG9(10, cfg.T, norm=cfg.norm, tau=cfg.tau, width=cfg.width).to(device)
    total = cfg.paper_steps * run.accumulation
    opt, sched = cosine_sgd(model.parameters(), cfg.lr, cfg.momentum, cfg.weight_decay, total)
    aug_gen = torch.Generator().manual_seed(43)
    model.train()

    def crop(batch):
        return crop_flip(batch[0], aug_gen, fill=data.pad_fill), batch[1]

    def loss(xb, yb):
        return F.cross_entropy(model(xb).mean(1), yb)  # CE(mean_t logits)

    step = run.train_step(batches, loss, opt, prepare=crop, after=sched.step)
    notes = [
        f"stand-in: synthetic cifar-10-batches-py ({6 * images_per_batch:,} images in 6 pickled batch files) read "
        "by load_cifar; CIFAR-10 itself is not offline",
        "official main.py: VGG-9 + TAB, T 4, LIF tau 0.9, SGD 0.02 / 0.9 / 5e-4, cosine, batch 64, 200 epochs, "
        "4 workers, fp32",
    ]
    if not run.cuda and run.micro_batch != cfg.batch_size:
        notes.append(
            f"CPU: micro-batch {run.micro_batch} x {run.accumulation} (TAB's batch statistics then cover "
            f"{run.micro_batch} images, not 64); CUDA runs the paper's 64 x 1"
        )
    return run.paper_scale(
        step,
        config=f"SpikingVGG9 + TAB, T {cfg.T}, 32x32, batch {cfg.batch_size}, SGD 0.02 cosine, {cfg.epochs} epochs",
        paper_steps=cfg.paper_steps,
        dataset=f"synthetic CIFAR-10 python batches, {len(data.x_train):,} training images",
        notes=notes,
    )
