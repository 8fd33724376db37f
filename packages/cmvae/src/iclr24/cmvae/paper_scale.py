"""Paper scale: the official PolyMNIST run of CMVAE for a few steps, on PolyMNIST-format files streamed from disk.

The official PolyMNIST configuration (``src/commands/run_polyMNIST_experiment.sh`` and
``src/train_CMVAE_polyMNIST.py`` of the released code): 5 modalities of 3 x 28 x 28 images, the ResNet encoders and
decoders of ``resnet_polyMNIST.py`` (:mod:`.resnet`), shared latent d = 32, modality-specific d_w = 32,
K_max = 40 clusters, beta = 2.5, a Laplace likelihood with scale 0.75, Laplace priors and posteriors, the IWAE
(looser) objective with K = 1, Adam (amsgrad) at lr 1e-3 on every trainable parameter, batch 128, 250 epochs over the
60,000 PolyMNIST train tuples (469 steps per epoch, the last one partial). No mixed precision in the official code.

:func:`paper_scale` writes a synthetic stand-in in PolyMNIST's layout (``train/m0 .. m4/<index>.<label>.png``, 8-bit
RGB 28 x 28 PNGs: an 8x8 scikit-learn digit upscaled and composited PolyMNIST-style onto a crop of a per-modality
colour texture) to a temporary folder, streams it through :class:`~iclr24.cmvae.data.PolyMNISTFolder` and a
DataLoader, and returns one micro-step of this package's own objective (``CMVAE.loss``) and Adam.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import PaperScale
from iclr24.paperkit.scale import ScaleRun

from .data import PolyMNISTFolder
from .model import CMVAE
from .resnet import ResNetDecoder
from .resnet import ResNetEncoder

__all__ = [
    "PaperScaleConfig",
    "PAPER_SCALE",
    "write_polymnist_folder",
    "build_polymnist_model",
    "paper_scale",
]


@dataclass(frozen=True)
class PaperScaleConfig:
    """The official PolyMNIST run (``run_polyMNIST_experiment.sh`` lines 6-17, ``train_CMVAE_polyMNIST.py``)."""

    n_modalities: int = 5
    image_shape: tuple[int, int, int] = (3, 28, 28)
    latent_dim: int = 32  # SHARED_LAT_DIM
    modality_latent_dim: int = 32  # MS_LAT_DIM
    n_clusters_max: int = 40  # --latent-dim-c 40
    beta: float = 2.5
    K: int = 1  # --K 1, --obj iwae
    estimator: str = "iwae_looser"
    likelihood: str = "laplace"
    likelihood_scale: float = 0.75  # resnet_polyMNIST.py Dec.forward
    latent: str = "laplace"  # --priorposterior 'Laplace'
    batch_size: int = 128
    epochs: int = 250
    lr: float = 1e-3  # optim.Adam(..., lr=1e-3, amsgrad=True)
    train_tuples: int = 60_000  # PolyMNIST train split
    cpu_micro_batch: int = 16  # one micro-step within ~20 s on one core (the paper's batch on CUDA)
    stand_in_tuples: int = 2_000  # synthetic tuples (x 5 PNGs) written for the measurement

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(self.train_tuples / self.batch_size)

    @property
    def paper_steps(self) -> int:
        return self.epochs * self.steps_per_epoch


PAPER_SCALE = PaperScaleConfig()


def write_polymnist_folder(root: Path, n: int, n_modalities: int = 5, side: int = 28, seed: int = 0) -> Path:
    """``n`` synthetic tuples in PolyMNIST's layout under ``root/train``: ``m0 .. m{M-1}/<index>.<label>.png``,
    8-bit RGB ``side x side`` images of the same digit class per tuple (scikit-learn's 8x8 digits upscaled, drawn
    with PolyMNIST's inversion rule onto a random crop of a fixed colour texture per modality)."""
    from PIL import Image
    from scipy.ndimage import gaussian_filter
    from sklearn.datasets import load_digits

    rng = np.random.default_rng(seed)
    digits = load_digits()
    imgs = [
        np.asarray(Image.fromarray((im * 255 / 16).astype(np.uint8)).resize((side, side), Image.BILINEAR))
        / 255
        for im in digits.images
    ]
    by_class = {c: np.flatnonzero(digits.target == c) for c in range(10)}
    big = 2 * side
    tex = []
    for _ in range(n_modalities):
        t = np.stack([gaussian_filter(rng.standard_normal((big, big)), 3, mode="wrap") for _ in range(3)], -1)
        tex.append((t - t.min()) / max(t.max() - t.min(), 1e-12))
    split = root / "train"
    for m in range(n_modalities):
        (split / f"m{m}").mkdir(parents=True, exist_ok=True)
    for i in range(n):
        y = i % 10
        for m in range(n_modalities):
            d = imgs[int(rng.choice(by_class[y]))][..., None]
            r, c = rng.integers(0, big - side + 1, size=2)
            bg = tex[m][r : r + side, c : c + side]
            x = np.where(d > 0.3, 1.0 - bg, bg)
            Image.fromarray((x * 255).astype(np.uint8), mode="RGB").save(
                split / f"m{m}" / f"{i}.{y}.png", compress_level=1
            )
    return split


def build_polymnist_model(cfg: PaperScaleConfig = PAPER_SCALE, nf: int = 64) -> CMVAE:
    """CMVAE with the official PolyMNIST ResNet encoders/decoders and hyper-parameters."""
    M, side = cfg.n_modalities, cfg.image_shape[-1]
    encs = [ResNetEncoder(cfg.latent_dim, cfg.modality_latent_dim, nf, side) for _ in range(M)]
    decs = [ResNetDecoder(cfg.latent_dim + cfg.modality_latent_dim, nf, side) for _ in range(M)]
    return CMVAE(
        encs, decs, n_clusters_max=cfg.n_clusters_max, latent_dim=cfg.latent_dim,
        modality_latent_dim=cfg.modality_latent_dim, likelihood=cfg.likelihood,
        likelihood_scale=cfg.likelihood_scale, beta=cfg.beta, K=cfg.K, estimator=cfg.estimator, latent=cfg.latent,
    )  # fmt: skip


def paper_scale(
    device: str = "cpu", *, tuples: int | None = None, micro_batch: int | None = None, nf: int = 64
) -> PaperScale:
    """One micro-step (forward, backward; the Adam step every ``accumulation`` micro-steps) of CMVAE at the
    official PolyMNIST configuration, on a PolyMNIST-format stand-in streamed from disk. ``tuples``,
    ``micro_batch`` and ``nf`` shrink it for tests only."""
    cfg = PAPER_SCALE
    run = ScaleRun(device, batch=cfg.batch_size, cpu=cfg.cpu_micro_batch, micro_batch=micro_batch)
    mb, accumulation, n = run.micro_batch, run.accumulation, tuples or cfg.stand_in_tuples
    split = write_polymnist_folder(run.folder, n, cfg.n_modalities, cfg.image_shape[-1])
    batches = run.stream(PolyMNISTFolder(split), workers=2)  # the official loaders' 2 workers
    torch.manual_seed(2)  # the official script's seed
    model = build_polymnist_model(cfg, nf).to(device)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=cfg.lr, amsgrad=True)

    def loss(xs, _labels):
        return model.loss(xs)  # this package's objective; the Adam step every `accumulation` micro-steps

    step = run.train_step(batches, loss, opt, accumulate=accumulation)
    step.folder = split  # the PolyMNIST-format folder (tests read it)
    step.model = model
    return run.paper_scale(
        step,
        config=(
            f"CMVAE PolyMNIST: {cfg.n_modalities} x {'x'.join(map(str, cfg.image_shape))} ResNet enc/dec (nf {nf}), "
            f"d={cfg.latent_dim}, d_w={cfg.modality_latent_dim}, K_max={cfg.n_clusters_max}, beta={cfg.beta}, "
            f"IWAE K={cfg.K}, Adam(amsgrad) {cfg.lr:g}, batch {cfg.batch_size}, {cfg.epochs} epochs"
        ),
        paper_steps=cfg.paper_steps,
        dataset=f"synthetic PolyMNIST-format folder: {n} tuples x {cfg.n_modalities} RGB 28x28 PNGs",
        notes=[
            f"stand-in data: {n} synthetic tuples in PolyMNIST's layout (train/m0..m4/<index>.<label>.png, 8-bit "
            "RGB 28x28; scikit-learn digits composited on per-modality colour textures), read from disk per batch "
            "by a DataLoader (2 workers and pinned memory on CUDA, as the official loaders)",
            f"paper steps: {cfg.epochs} epochs x {cfg.steps_per_epoch} steps (60,000 train tuples, batch "
            f"{cfg.batch_size})",
            f"micro-batch {mb} x {accumulation} accumulation = the paper's batch {cfg.batch_size}"
            + (
                ""
                if run.cuda
                else " (CPU: the paper's batch of 128 takes well over 20 s per step on one core)"
            ),
            "fp32 on every device (the official code uses no mixed precision)",
        ],
    )
