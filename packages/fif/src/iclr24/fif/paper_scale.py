"""Paper scale (issue 48): the paper's MNIST run (official ``configs/fif/mnist.yaml``) for a few steps.

``PAPER_SCALE`` is the official configuration: a conv encoder/decoder to a 16-dim latent (``ch_factor`` 32)
followed by a latent-space ResNet of 4 blocks of ``[512, 512]``, loss weights ``nll 1, noisy_reconstruction 10``,
SoftFlow noise 0.01, Adam lr 1e-3 (no scheduler in that config), batch 512, 2000 epochs of the 50,000 training
images (the official split keeps the last 10,000 of torchvision's 60,000 for validation,
``fff/data/image.py: _process_img_data``). One step is one micro-batch of the same update as :func:`~.training.fit`
(``beta * noisy_reconstruction + nll``, backward, Adam step). Data: the real MNIST (``mnist.pkl.gz`` from the data
folder) when it is there, else a synthetic file of the same format written to a temporary folder; the official code
also holds MNIST in memory (a ``TensorDataset``), batches come from a shuffling ``DataLoader``.
"""

from __future__ import annotations

import gzip
import math
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from iclr24.paperkit import PaperScale
from iclr24.paperkit.scale import ScaleRun

from .model import FreeFormInjectiveFlow
from .nets import conv_pair
from .nets import resnet_pair

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "paper_scale", "build_model", "write_mnist_pickle"]


@dataclass(frozen=True)
class PaperScaleConfig:
    """The official MNIST run (``configs/fif/mnist.yaml``; split from ``fff/data/image.py``)."""

    latent_dim: int = 16
    ch_factor: int = 32
    resnet_blocks: int = 4
    resnet_widths: tuple[int, ...] = (512, 512)
    beta: float = 10.0  # loss_weights.noisy_reconstruction
    noise: float = 0.01
    lr: float = 1e-3
    batch_size: int = 512
    epochs: int = 2000
    n_train: int = 50_000  # 60,000 minus the last 10,000 kept for validation

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(self.n_train / self.batch_size)  # the last partial batch is kept (drop_last=False)

    @property
    def paper_steps(self) -> int:
        return self.epochs * self.steps_per_epoch


PAPER_SCALE = PaperScaleConfig()


def build_model(cfg: PaperScaleConfig = PAPER_SCALE, image_shape=(1, 28, 28)) -> FreeFormInjectiveFlow:
    """The official stack: conv to ``latent_dim``, then a ResNet in latent space (encoder); the mirror (decoder)."""
    conv_enc, conv_dec = conv_pair(image_shape, cfg.latent_dim, ch_factor=cfg.ch_factor)
    res_enc, res_dec = resnet_pair(cfg.latent_dim, cfg.latent_dim, cfg.resnet_blocks, cfg.resnet_widths)
    d = int(np.prod(image_shape))
    return FreeFormInjectiveFlow(
        nn.Sequential(conv_enc, res_enc),
        nn.Sequential(res_dec, conv_dec),
        data_dim=d,
        latent_dim=cfg.latent_dim,
        beta=cfg.beta,
        noise=cfg.noise,
    )


def write_mnist_pickle(path: Path, n_train: int, seed: int = 0) -> Path:
    """A synthetic ``mnist.pkl.gz`` (the classic format: ``((x, y), (x, y), (x, y))``, ``x`` float32 (N, 784) in
    [0, 1]): blurred random strokes, ``n_train`` training images and a tenth of that for val and test."""
    rng = np.random.default_rng(seed)

    def split(n):
        x = np.zeros((n, 28, 28), np.float32)
        for i in range(n):
            r, c = rng.integers(6, 22, 2)
            x[i, r - 4 : r + 4, c - 1 : c + 2] = 1.0
            x[i, r - 1 : r + 2, c - 4 : c + 4] = rng.random()
        return x.reshape(n, 784), rng.integers(0, 10, n).astype(np.int64)

    m = max(1, n_train // 10)
    with gzip.open(path, "wb") as fh:
        pickle.dump((split(n_train), split(m), split(m)), fh)
    return path


def paper_scale(
    device: str = "cpu", *, items: int | None = None, batch: int | None = None, cfg=None
) -> PaperScale:
    """One micro-step of the official MNIST run. ``items``: use a synthetic ``mnist.pkl.gz`` of that many training
    images (default: the real MNIST from the data folder, or a 5,000-image synthetic file when it is missing);
    ``batch``: a smaller micro-batch (tests); ``cfg``: a smaller :class:`PaperScaleConfig` (tests)."""
    from iclr24.paperkit.data.folder import is_present
    from iclr24.paperkit.data.mnist import load_mnist
    from iclr24.paperkit.data.mnist import read_mnist_pickle

    cfg = cfg or PAPER_SCALE
    micro = None if batch is None else int(batch)
    run = ScaleRun(
        device, batch=cfg.batch_size, micro_batch=micro, name="batch", of="the paper batch {batch}"
    )
    notes = []
    if items is None and is_present("mnist"):
        x = load_mnist()["train"][0][: cfg.n_train]
        dataset = f"MNIST (real, mnist.pkl.gz), {len(x):,} training images"
    else:
        n = 5000 if items is None else int(items)
        path = write_mnist_pickle(run.folder / "mnist.pkl.gz", n)
        x = read_mnist_pickle(path)["train"][0]
        dataset = f"synthetic mnist.pkl.gz, {n:,} training images (stand-in)"
        notes.append(
            "stand-in: synthetic stroke images in the mnist.pkl.gz format (the real file is missing)"
        )
    batches = run.stream(torch.utils.data.TensorDataset(torch.from_numpy(np.ascontiguousarray(x))), workers=2)
    torch.manual_seed(0)
    model = build_model(cfg).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, foreach=True)
    gen = torch.Generator().manual_seed(1)  # noise and Hutchinson probes: a CPU generator, as in fit()

    def loss(xb):
        terms = model.loss_terms(xb, generator=gen)
        return (model.beta * terms["noisy_reconstruction"] + terms["nll"]).mean()  # Eq. (E6), as in fit()

    notes += [
        "official configs/fif/mnist.yaml: conv (ch_factor 32) to latent 16 + latent ResNet 4 x [512, 512], "
        "beta 10, noise 0.01, Adam lr 1e-3, batch 512, 2000 epochs x 98 steps",
        "the conv encoder/decoder is this package's conv_pair at ch_factor 32 (two stride-2 convs, no batch norm)",
        "fp32 as the official config (no mixed precision); data in memory as the official TensorDataset",
    ]
    return run.paper_scale(
        run.train_step(batches, loss, opt),
        config="FIF MNIST: conv(32)->16 + ResNet 4x[512,512], batch 512, Adam 1e-3, 2000 epochs",
        paper_steps=cfg.paper_steps,
        dataset=dataset,
        notes=notes,
    )
