"""The paper's headline run at its own scale (VisDA-2017, ``visda.sh`` + ``tar_adaptation.py``), a few steps of it.

:data:`PAPER_SCALE` is the official target adaptation on VisDA-2017: ResNet-101 features (2048-d) -> bottleneck
Linear(2048 -> 256) + BatchNorm1d -> weight-normalised Linear(256 -> 12), 224-pixel views (resize 256 x 256, random
224 crop, flip), batch 64, SGD (momentum 0.9, Nesterov, weight decay 1e-3) at lr 1e-3 (feature extractor x 0.1,
bottleneck and classifier x 1) with the poly decay, 15 epochs over the 55,388 validation images: 15 x 866 = 12,990
iterations. :func:`paper_scale` builds it on a synthetic VisDA-format folder (random weights: no download) and returns
one iteration of the same :class:`~iclr24.sfda2.adapt.Adapter` the claims run, fed by the lazy image loader.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field

import torch

from iclr24.paperkit import PaperScale
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.scale import ScaleRun

from .adapt import Adapter
from .adapt import SFDA2Config
from .adapt import _Indexed
from .adapt import _workers
from .images import VISDA_CLASSES
from .images import ImageFolderDataset
from .images import synthetic_visda_folder
from .images import train_transform
from .model import split_timm

__all__ = ["PAPER_SCALE", "PaperScaleConfig", "paper_scale"]


@dataclass(frozen=True)
class PaperScaleConfig:
    """The official VisDA-2017 adaptation run (``visda.sh``, ``tar_adaptation.py`` argparse defaults and
    ``network.py``). ``target_images``: VisDA-2017's validation split (the target domain); ``stand_in_images``:
    the synthetic VisDA-format JPEGs the measurement reads; ``cpu_micro_batch``: the micro-batch on the CPU (the
    paper's 64 on CUDA)."""

    arch: str = "resnet101"
    bottleneck_dim: int = 256
    num_classes: int = 12
    resize: int = 256
    crop: int = 224
    adapt: SFDA2Config = field(default_factory=SFDA2Config)  # lr 1e-3, batch 64, 15 epochs, K 5, alpha_2 10
    target_images: int = 55_388
    stand_in_images: int = 3000
    cpu_micro_batch: int = 16

    @property
    def paper_steps(self) -> int:
        return self.adapt.max_epoch * math.ceil(self.target_images / self.adapt.batch_size)


PAPER_SCALE = PaperScaleConfig()


def paper_scale(
    device: str = "cpu",
    *,
    images: int | None = None,
    micro_batch: int | None = None,
    arch: str | None = None,
    crop: int | None = None,
    config: PaperScaleConfig = PAPER_SCALE,
) -> PaperScale:
    """One adaptation iteration of :data:`PAPER_SCALE` on ``device``. ``images``, ``micro_batch``, ``arch`` and
    ``crop`` shrink it for tests; the row's ``paper_steps`` and accumulation always follow ``config``.

    The folder (``images`` JPEGs, default ``config.stand_in_images``) is written to a temporary directory that lives
    as long as the returned step; the banks have a row per stand-in image."""
    paper_batch, mb = config.adapt.batch_size, micro_batch
    if mb and (
        isinstance(mb, bool) or not isinstance(mb, int) or not 2 <= mb <= paper_batch or paper_batch % mb
    ):
        raise InputError(
            f"micro_batch must be an int in [2, {paper_batch}] dividing {paper_batch}, got {mb!r}"
        )
    run = ScaleRun(device, batch=paper_batch, cpu=config.cpu_micro_batch, micro_batch=mb)
    mb, acc, cuda = run.micro_batch, run.accumulation, run.cuda
    n = images if images is not None else config.stand_in_images
    crop_ = crop or config.crop
    resize = max(crop_, round(crop_ * config.resize / config.crop))
    synthetic_visda_folder(run.folder, n, seed=0)
    data = ImageFolderDataset(run.folder, train_transform(resize, crop_))
    torch.manual_seed(0)
    model = split_timm(
        arch or config.arch, num_classes=config.num_classes, bottleneck_dim=config.bottleneck_dim
    )
    model.to(device).train()
    # The official banks are one eval-mode pass over the target; here they start from random features and scores
    # of the same shape (N x 256, N x 12), so the measurement does not pay a whole pass first.
    g = torch.Generator().manual_seed(0)
    bank_z = torch.randn(n, config.bottleneck_dim, generator=g).to(device)
    bank_logits = torch.randn(n, config.num_classes, generator=g).to(device)
    adapter = Adapter(model, config.adapt, config.paper_steps, bank_z, bank_logits, device)
    workers = _workers(data, None, device)
    batches = run.stream(_Indexed(data), workers=workers)

    def step() -> dict[str, float]:
        return adapter.step(*next(batches))

    step.adapter = adapter
    step.data = data
    notes = [
        f"target adaptation of SF(DA)^2 (SNC + IFA + FD) on VisDA-2017: {config.arch} + bottleneck "
        f"{config.bottleneck_dim} + weight-norm classifier ({config.num_classes} classes), random weights (no "
        f"download), {crop_} px views (resize {resize}, random crop, flip), SGD lr {config.adapt.lr:g} "
        f"(features x{config.adapt.lr_F:g}), batch {paper_batch}, {config.adapt.max_epoch} epochs x "
        f"{math.ceil(config.target_images / paper_batch)} iterations over {config.target_images:,} images",
        f"stand-in data: synthetic VisDA-format JPEGs, {n:,} images in 12 class folders "
        f"({', '.join(VISDA_CLASSES[:3])}, ...), read lazily through a DataLoader ({workers} workers"
        f"{', pinned memory' if cuda else ''})",
        f"banks: {n:,} rows (the method keeps N x {config.bottleneck_dim} features + N x {config.num_classes} scores; "
        f"at VisDA's {config.target_images:,} images about "
        f"{config.target_images * (config.bottleneck_dim + config.num_classes + 1) * 4 / 2**20:.0f} MiB), started "
        "from random values instead of the official eval-mode pass over the target (one extra forward pass, not "
        "in paper_steps)",
        "no mixed precision (the official code runs fp32)",
    ]
    if acc > 1:
        notes.append(
            f"micro-batch {mb} x {acc}: each micro-step is one whole iteration at batch {mb} (its batch-coupled "
            f"terms, the negative term and the covariance update, see {mb} samples); the row counts {acc} of them "
            f"per paper step of {paper_batch}"
        )
    return run.paper_scale(
        step,
        config=f"PAPER_SCALE: VisDA-2017 {config.arch}, {crop_} px, batch {paper_batch}",
        paper_steps=config.paper_steps,
        dataset=f"synthetic VisDA-format JPEG folder ({n:,} images, 12 classes)",
        notes=notes,
    )
