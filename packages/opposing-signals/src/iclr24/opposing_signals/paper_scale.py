"""Paper scale: the paper's CIFAR-10 setting, a ResNet-18 trained by full-batch GD, for a few steps.

There is no official code. The paper follows the edge-of-stability protocol of Cohen et al. (2021): full-batch
gradient descent with the MSE loss on one-hot labels on a 5,000-image subset of CIFAR-10, sharpness by power
iteration on Hessian-vector products; its CIFAR models are ResNet-18 and VGG-11. :data:`PAPER_SCALE` is that run
with the standard CIFAR ResNet-18 (3x3 stem, no max-pool, BasicBlocks [2, 2, 2, 2] at widths 64-512, BatchNorm,
11.2M parameters). The learning rate and the number of GD steps are not retrievable without the paper's PDF: they
are ASSUMED (0.02 and 10,000) and stated in every row; the hours scale linearly with the steps.

:func:`paper_scale` writes a CIFAR-format folder (``cifar-10-batches-py``: ``data_batch_1..5``, ``test_batch`` and
``batches.meta``, pickled dicts with uint8 ``data`` (N, 3072) and ``labels``) of synthetic images to a temporary
folder with paperkit's stand-in writer, reads the 5,000-image training subset with the package's
:func:`~iclr24.opposing_signals.data.cifar10_subset`, and runs the package's full-batch pass: a GD step accumulates
``(1/N) sum_i l_i`` over physical batches (``physical_batch_size``, which bounds memory without changing the step)
and then steps. A micro-step is one physical batch's forward and
backward (the GD update itself, a few vector operations, comes after the last one).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch
from torch import nn

from iclr24.paperkit import PaperScale
from iclr24.paperkit.data.standins import write_cifar10_batches
from iclr24.paperkit.scale import ScaleRun

from .data import cifar10_subset
from .tracking import per_example_loss

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "resnet18_cifar", "paper_scale"]


@dataclass(frozen=True)
class PaperScaleConfig:
    """Full-batch GD on a 5k CIFAR-10 subset, ResNet-18, MSE (the EoS protocol the paper follows)."""

    subset: int = 5_000
    loss: str = "mse"
    lr: float = 0.02  # ASSUMED (GD at the edge of stability: sharpness settles near 2 / lr = 100)
    steps: int = 10_000  # ASSUMED
    sharpness_every: int = 50  # the package's default cadence; 20 iterations each
    sharpness_iters: int = 20
    cpu_physical_batch: int = 40  # 5000 = 125 x 40 on one CPU core
    cuda_physical_batch: int = 1000  # 5000 = 5 x 1000 on a GPU


PAPER_SCALE = PaperScaleConfig()


class _Basic(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.skip = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.skip = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(h)) + self.skip(x))


def resnet18_cifar(n_classes: int = 10, width: int = 64, seed: int = 0) -> nn.Module:
    """The standard CIFAR ResNet-18: 3x3 stem (no max-pool), BasicBlocks [2, 2, 2, 2] at widths w, 2w, 4w, 8w with
    strides 1, 2, 2, 2, global average pooling, a linear head (11.2M parameters at w = 64)."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        layers: list[nn.Module] = [nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU()]
        c = width
        for k, stride in enumerate((1, 2, 2, 2)):
            out = width * 2**k
            layers += [_Basic(c, out, stride), _Basic(out, out, 1)]
            c = out
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, n_classes)]
        return nn.Sequential(*layers)


def paper_scale(
    device: str = "cpu", *, subset: int | None = None, physical_batch: int | None = None, width: int = 64
) -> PaperScale:
    """One physical batch of a full-batch GD step of ResNet-18 on the 5k CIFAR-10 subset (MSE). The keyword
    overrides shrink it for tests only."""
    cfg = PAPER_SCALE
    n = subset or cfg.subset
    run = ScaleRun(
        device,
        batch=n,
        cuda=cfg.cuda_physical_batch,
        cpu=cfg.cpu_physical_batch,
        micro_batch=physical_batch,
        name="physical_batch",
        of="the subset of {batch}",
    )
    pb, accumulation = run.micro_batch, run.accumulation
    per_file = -(-n // 5)  # five train batches hold the subset
    folder = write_cifar10_batches(run.folder, 5 * per_file, per_file)
    x, y = cifar10_subset(folder, n=n, seed=0)  # (n, 3, 32, 32) in [0, 1]: in memory, as GD needs it
    x, y = x.to(device), y.to(device)
    model = resnet18_cifar(width=width).to(device)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.0)

    def loss(xb, yb):
        return per_example_loss(model(xb), yb, cfg.loss).mean()

    # L(theta) = (1/N) sum_i l_i, accumulated physical batch by physical batch (the package's _full_pass): a
    # physical batch's mean loss / accumulation is its share; the GD update once the whole subset's gradient is in
    physical = itertools.cycle([(x[s : s + pb], y[s : s + pb]) for s in range(0, n, pb)])
    step = run.train_step(physical, loss, opt, accumulate=accumulation)
    step.folder = folder  # the CIFAR-format folder (tests read it)
    step.model = model
    n_params = sum(p.numel() for p in model.parameters())
    return run.paper_scale(
        step,
        config=(
            f"ResNet-18 (CIFAR, {n_params / 1e6:.1f}M params), full-batch GD on a {n:,}-image CIFAR-10 subset, MSE, "
            f"lr {cfg.lr:g} (assumed), {cfg.steps:,} steps (assumed)"
        ),
        paper_steps=cfg.steps,
        dataset=f"synthetic CIFAR-format batch files (cifar-10-batches-py), {n:,}-image training subset",
        notes=[
            "stand-in data: synthetic images in CIFAR-10's python batch format (data_batch_1..5, test_batch), read "
            f"by cifar10_subset; the {n:,}-image subset is held in memory as full-batch GD needs it "
            "(60 MB at fp32)",
            "no official code: lr 0.02 and 10,000 GD steps are ASSUMED (the paper's PDF was not retrievable)",
            f"a paper step is one GD step = {accumulation} physical batches of {pb}; the sharpness measurement "
            f"({cfg.sharpness_iters} Hessian-vector products every {cfg.sharpness_every} steps, about two gradients "
            f"each) adds about {2 * cfg.sharpness_iters / cfg.sharpness_every:.0%} on top, not counted in the row",
            f"{'CUDA' if run.cuda else 'CPU'}: physical batch {pb}, fp32 (full-batch GD at the edge of stability is "
            "run in full precision)",
        ],
    )
