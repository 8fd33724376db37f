"""Paper scale: the paper's headline LPN, the 128 x 128 CelebA model, trained for a few steps.

The official CelebA run (``exps/celeba/train.sh`` with ``exps/celeba/configs/{model,dataset}.json``,
``lpn/train.py``): ``lpn_128`` (hidden 256, beta 100, alpha 1e-6) on 128 x 128 RGB CelebA crops, batch 64, 8
DataLoader workers, Adam, 40,000 steps (l1 at 1e-3 for 20,000, then 4 proximal-matching stages at 1e-4 with
gamma_min = 0.08 sqrt(128 * 128 * 3)), one model per noise level sigma in {0.05, 0.1}: 2 x 40,000 = 80,000 steps,
fp32 (no mixed precision). Every step differentiates through f = grad psi (double backpropagation).

:func:`paper_scale` writes a CelebA-format folder (torchvision's layout, which ``load_celeba`` reads:
``celeba/img_align_celeba/NNNNNN.jpg`` 178 x 218 JPEGs and ``celeba/list_eval_partition.txt``) of synthetic images
to a temporary folder and streams the train split from disk (each item read and centre-cropped to 128 as
``load_celeba`` does it) through a ``DataLoader`` into the step of the package's own
:func:`~iclr24.lpn.train.train`: the official schedule, noise, f = grad psi, the loss, Adam and the weight clamp.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import PaperScale
from iclr24.paperkit.scale import ScaleRun
from iclr24.paperkit.scale import count_flops

from .data import image_to_tensor
from .data import load_image
from .icnn import PatchLPN128
from .loss import loss_value
from .train import TrainConfig
from .train import schedule_for

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "write_celeba_folder", "CelebAFolder", "paper_scale"]

CELEBA_SIZE = (178, 218)  # img_align_celeba: width x height


@dataclass(frozen=True)
class PaperScaleConfig:
    """The official CelebA run (``exps/celeba/train.sh``, ``configs/model.json``)."""

    image_size: int = 128  # --image_size (patch size of lpn_128)
    channels: int = 3  # --num_channels
    hidden: int = 256  # model.json
    beta: float = 100.0
    alpha: float = 1e-6
    batch: int = 64  # --train_batch_size
    workers: int = 8  # --dataloader_num_workers
    num_steps: int = 40_000
    num_steps_pretrain: int = 20_000
    pretrain_lr: float = 1e-3
    lr: float = 1e-4
    num_stages: int = 4
    noise_levels: tuple[float, ...] = (0.05, 0.1)  # one model each
    train_images: int = 162_770  # CelebA's train split
    cpu_micro_batch: int = (
        2  # one CPU core: 2 crops per micro-step, accumulation 32 (8 did not finish 5 steps in 40 min here)
    )

    @property
    def paper_steps(self) -> int:
        return self.num_steps * len(self.noise_levels)

    @property
    def gamma_min(self) -> float:
        return 0.08 * math.sqrt(self.image_size * self.image_size * self.channels)


PAPER_SCALE = PaperScaleConfig()


def write_celeba_folder(root: Path, n: int, seed: int = 0, size: tuple[int, int] = CELEBA_SIZE) -> Path:
    """``n`` synthetic JPEGs in torchvision's CelebA layout under ``root/celeba`` (``NNNNNN.jpg``, ``size`` =
    width x height), all in the train split of ``list_eval_partition.txt``."""
    from PIL import Image

    base = Path(root) / "celeba"
    imgs = base / "img_align_celeba"
    imgs.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    w, h = size
    yy, xx = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    lines = []
    for k in range(n):
        c = rng.uniform(0.2, 0.8, 3)
        face = np.exp(-((xx / rng.uniform(0.4, 0.7)) ** 2 + (yy / rng.uniform(0.5, 0.8)) ** 2))
        img = c * face[..., None] + (1 - face[..., None]) * rng.uniform(0, 1, 3)
        img = img + rng.normal(0, 0.03, img.shape)
        name = f"{k + 1:06d}.jpg"
        Image.fromarray((np.clip(img, 0, 1) * 255).astype(np.uint8)).save(imgs / name, quality=95)
        lines.append(f"{name} 0")
    (base / "list_eval_partition.txt").write_text("\n".join(lines) + "\n")
    return base


class CelebAFolder(torch.utils.data.Dataset):
    """One CelebA split streamed from disk: item ``i`` is the ``i``-th listed image, centre-cropped to
    ``image_size`` (as :func:`~iclr24.lpn.data.load_celeba` crops), ``(3, S, S)`` in [0, 1]."""

    def __init__(self, root: Path, split: int = 0, image_size: int = 128) -> None:
        base = Path(root) / "celeba"
        lines = (base / "list_eval_partition.txt").read_text().split()
        self.files = [
            base / "img_align_celeba" / n for n, s in zip(lines[::2], lines[1::2]) if int(s) == split
        ]
        self.size = image_size

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int) -> torch.Tensor:
        arr = load_image(self.files[i])
        h, w = arr.shape[:2]
        s = self.size
        top, left = int(round((h - s) / 2)), int(round((w - s) / 2))
        return image_to_tensor(arr[top : top + s, left : left + s])


def count_flops_one(model: torch.nn.Module, x: torch.Tensor) -> int:
    """FLOPs (matrix products and convolutions, by torch's flop formulas) of one training forward and
    backward on the batch ``x``: f = grad psi with its graph, the l1 loss, and the backward through it."""
    return count_flops(
        lambda: torch.autograd.grad(
            loss_value("l1", model(x), x), list(model.parameters()), allow_unused=True
        )
    )


def paper_scale(
    device: str = "cpu",
    *,
    images: int = 2000,
    micro_batch: int | None = None,
    hidden: int | None = None,
    image_size: int | None = None,
) -> PaperScale:
    """One micro-batch of the official CelebA training step. On CUDA the paper's batch of 64 per step; on the CPU
    2 crops x 32 accumulation. The keyword overrides shrink it for tests only."""
    cfg = PAPER_SCALE
    run = ScaleRun(device, batch=cfg.batch, cpu=cfg.cpu_micro_batch, micro_batch=micro_batch)
    cuda, mb = run.cuda, run.micro_batch
    size = image_size or cfg.image_size
    write_celeba_folder(run.folder, images)
    dataset = CelebAFolder(run.folder, 0, size)
    batches = run.stream(dataset, workers=cfg.workers)
    dev = torch.device(device)
    torch.manual_seed(0)
    kw = dict(in_channels=cfg.channels, hidden=hidden or cfg.hidden, beta=cfg.beta, alpha=cfg.alpha)
    model = PatchLPN128(**kw, image_size=size).to(dev)
    model.train()
    tcfg = TrainConfig(
        num_steps=cfg.num_steps,
        num_steps_pretrain=cfg.num_steps_pretrain,
        num_stages=cfg.num_stages,
        pretrain_lr=cfg.pretrain_lr,
        lr=cfg.lr,
        batch_size=mb,
        sigma_noise=cfg.noise_levels[-1],
    )
    sched = schedule_for(tcfg, cfg.channels * size * size)
    opt = torch.optim.Adam(model.parameters(), lr=tcfg.lr)
    state = {"step": cfg.num_steps_pretrain}  # time a proximal-matching step (same cost as an l1 one)

    def set_stage() -> None:
        state["s"] = sched(state["step"])
        state["step"] += 1
        for group in opt.param_groups:
            group["lr"] = state["s"].lr

    def loss(x):
        y = x + tcfg.sigma_noise * torch.randn_like(x)
        return loss_value(
            state["s"].loss, model(y), x, state["s"].gamma
        )  # model(y) = grad psi(y), in the graph

    # the backward differentiates through grad psi (double backpropagation); W_k >= 0 after every step (wclip)
    step = run.train_step(batches, loss, opt, before=set_stage, after=model.clamp_weights)
    probe = dataset[0].unsqueeze(0).to(dev)
    flops = mb * count_flops_one(model, probe)  # linear in the batch: one crop's count times the micro-batch
    step.root = run.folder  # the CelebA-format folder (tests read it)
    return run.paper_scale(
        step,
        config=(
            f"LPN lpn_128 (hidden {model.config()['hidden']}, beta {cfg.beta:g}, alpha {cfg.alpha:g}) on "
            f"{size}x{size} RGB crops, batch {cfg.batch}, Adam (l1 1e-3 then PM 1e-4, gamma_min "
            f"{cfg.gamma_min:.2f}), {cfg.num_steps:,} steps x {len(cfg.noise_levels)} noise levels"
        ),
        paper_steps=cfg.paper_steps,
        flops_per_micro_step=float(flops),
        dataset=f"synthetic CelebA-format folder: {images:,} JPEGs {CELEBA_SIZE[0]}x{CELEBA_SIZE[1]}",
        notes=[
            f"stand-in data: {images:,} synthetic {CELEBA_SIZE[0]}x{CELEBA_SIZE[1]} JPEGs in torchvision's CelebA "
            "layout (img_align_celeba/ + list_eval_partition.txt), streamed from disk and centre-cropped to "
            f"{size} per item (the train split has {cfg.train_images:,} images; load_celeba, which holds a whole "
            "split in memory, is for the test images only)",
            "each step differentiates the loss through f = grad psi (double backpropagation) and clamps W >= 0",
            (
                f"CUDA: the paper's batch of {cfg.batch} per step, {cfg.workers} DataLoader workers and pinned "
                "memory, fp32 as the official train.py"
                if cuda
                else f"CPU: micro-batch {mb} x {run.accumulation} accumulation (the paper's 64 takes minutes per step "
                "on one core); each micro-step also steps Adam and clamps, as the official step does"
            ),
            f"paper steps: {cfg.num_steps:,} x {len(cfg.noise_levels)} models (sigma 0.05 and 0.1)",
            "FLOPs: one crop's forward and double backward counted by paperkit's count_flops (torch's flop "
            "formulas) times the micro-batch",
        ],
    )
