"""Paper scale: the paper's headline image run (Kodak, the official ``NET_IMG`` configuration) for a few steps.

The official Kodak script (``scripts/train_kodak.sh``) fits each of the 24 Kodak images (``kodimNN.png``, 768 x 512
RGB PNGs, read in landscape as 512 rows x 768 columns) for 3 seeds (43-45), each fit 10,000 full-batch iterations
(every one of the 393,216 pixels per step) of Adam at 1e-4, cosine-annealed to 1e-5 (``config/train_image.yaml``,
``train_utils.train_image``). ASMR's ``NET_IMG`` (``config/model_config/asmr.yaml``): L = 4 levels, hidden 256,
omega0 = 30, linear modulator, bases [[4, 4, 4, 8], [4, 4, 6, 8]] (512 = 4*4*4*8 rows, 768 = 4*4*6*8 columns).

:func:`paper_scale` writes a Kodak-format folder of 24 synthetic 768 x 512 RGB PNGs (``kodim01.png`` ..) to a
temporary folder, loads one with the package's own :func:`~iclr24.asmr.data.load_image` (a fit reads its image
once, as the official loop does), and returns one training step of :func:`~iclr24.asmr.train.fit`'s full-batch
path: the shared render, MSE, Adam and the cosine schedule. A paper step is that one step (no accumulation).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import PaperScale
from iclr24.paperkit.scale import ScaleRun

from .data import load_image
from .model import ASMR

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "write_kodak_folder", "paper_scale"]


@dataclass(frozen=True)
class PaperScaleConfig:
    """The official Kodak run (``NET_IMG`` + ``train_image.yaml`` + ``train_kodak.sh``)."""

    height: int = 512  # Kodak in landscape: 512 rows x 768 columns
    width: int = 768
    channels: int = 3  # color_mode: RGB
    bases: tuple[tuple[int, ...], ...] = ((4, 4, 4, 8), (4, 4, 6, 8))  # NET_IMG.dimensions
    hidden: int = 256  # NET_IMG.dim_hidden
    omega0: float = 30.0  # NET_IMG.w0 = w0_initial
    modulator: str = "linear"
    lr: float = 1e-4  # train_image.yaml lr (NET_IMG.lr)
    lr_min: float = 1e-5  # CosineAnnealingLR eta_min
    iterations: int = 10_000  # train_image.yaml iterations, full batch each
    images: int = 24  # kodim01 .. kodim24
    seeds: int = 3  # train_kodak.sh: seeds 43..45

    @property
    def paper_steps(self) -> int:
        """ASMR's whole Kodak table: 24 images x 3 seeds x 10,000 full-batch iterations."""
        return self.images * self.seeds * self.iterations


PAPER_SCALE = PaperScaleConfig()


def write_kodak_folder(root: Path, n: int, height: int, width: int, seed: int = 0) -> list[Path]:
    """``n`` synthetic Kodak-format images: ``kodimNN.png``, 8-bit RGB, ``width`` x ``height`` (smooth colour
    fields plus texture, so the PNGs decode like photographs of that size)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.meshgrid(np.linspace(0, 1, height), np.linspace(0, 1, width), indexing="ij")
    paths = []
    from PIL import Image

    for k in range(n):
        f = rng.uniform(1, 6, size=(3, 2))
        ph = rng.uniform(0, 2 * np.pi, size=3)
        chans = [0.5 + 0.4 * np.sin(2 * np.pi * (f[c, 0] * yy + f[c, 1] * xx) + ph[c]) for c in range(3)]
        img = np.stack(chans, -1) + rng.normal(0, 0.05, size=(height, width, 3))
        arr = (np.clip(img, 0, 1) * 255).astype(np.uint8)
        p = root / f"kodim{k + 1:02d}.png"
        Image.fromarray(arr, mode="RGB").save(p)
        paths.append(p)
    return paths


def paper_scale(
    device: str = "cpu",
    *,
    height: int | None = None,
    width: int | None = None,
    bases: tuple[tuple[int, ...], ...] | None = None,
    hidden: int | None = None,
    images: int | None = None,
) -> PaperScale:
    """One full-batch training step of ASMR on a Kodak-format image at the official ``NET_IMG`` configuration.
    The keyword overrides shrink it for tests only."""
    cfg = PAPER_SCALE
    height, width = height or cfg.height, width or cfg.width
    bases = bases or cfg.bases
    hidden, images = hidden or cfg.hidden, images or cfg.images
    n_pix = height * width
    run = ScaleRun(device, batch=n_pix)  # full batch: every pixel, one optimiser step
    files = write_kodak_folder(run.folder, images, height, width)
    signal = load_image(files[0])  # (H, W, 3) in [0, 1], read once per fit (official: dataset.get_data())
    dev = torch.device(device)
    torch.manual_seed(43)
    model = ASMR(
        2, cfg.channels, (height, width), bases, hidden=hidden, omega0=cfg.omega0, modulator=cfg.modulator
    ).to(dev)
    target = torch.from_numpy(signal.values).reshape(-1, cfg.channels).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.iterations, eta_min=cfg.lr_min)
    model.train()

    def loss(rgb):
        pred = model.render()  # fit()'s full-batch path: every pixel, through the activation-sharing render
        return torch.mean((pred - rgb) ** 2)

    step = run.train_step(itertools.repeat(target), loss, opt, after=sched.step)
    step.folder = run.folder  # the Kodak-format folder (tests read it)
    step.signal_shape = signal.values.shape
    return run.paper_scale(
        step,
        config=(
            f"ASMR NET_IMG: L={len(bases[0])}, h={hidden}, bases {[list(b) for b in bases]}, {height}x{width} RGB, "
            f"full batch {n_pix:,} px, Adam {cfg.lr:g} cosine to {cfg.lr_min:g}, "
            f"{cfg.images} images x {cfg.seeds} seeds x {cfg.iterations:,} it"
        ),
        paper_steps=cfg.paper_steps,
        dataset=f"synthetic Kodak-format folder: {images} RGB PNGs kodimNN.png, {width}x{height}",
        notes=[
            f"stand-in data: {images} synthetic {width}x{height} 8-bit RGB PNGs in Kodak's file layout "
            "(Kodak is not offline); one fit reads its image once, as the official loop does",
            "micro-batch = every pixel of the image (full batch); a paper step is one optimiser step",
            "the step trains through the activation-sharing render (fit()'s full-batch path, equal in value to the "
            "per-coordinate forward); the official NET_IMG trains with shared_inference: False, the per-coordinate "
            "forward on all pixels, which costs more FLOPs per step",
            f"paper steps: {cfg.images} Kodak images x {cfg.seeds} seeds x {cfg.iterations:,} iterations "
            "(ASMR's share of the Kodak table; the baselines add their own)",
            "fp32 on every device (the official code uses no mixed precision)",
        ],
    )
