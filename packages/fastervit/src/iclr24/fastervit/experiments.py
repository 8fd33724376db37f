"""The CPU-scale experiments behind the claims: carrier tokens carry global context (a cross-window copy task),
and a HAT layer scales better with the feature-map size than global attention."""

from __future__ import annotations

import time
from dataclasses import asdict
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from timm.layers import LayerNorm2d
from torch import nn

from iclr24.paperkit import progress
from iclr24.paperkit import seed_everything
from iclr24.paperkit.errors import InputError

from .blocks import FasterViTLayer
from .data import quadrant_copy_batch

__all__ = [
    "CarrierTokenConfig",
    "QuadrantReadoutNet",
    "run_carrier_token_task",
    "ScalingConfig",
    "time_layers",
    "ATTENTION_VARIANTS",
]

ATTENTION_VARIANTS = ("local", "hat", "global")


@dataclass(frozen=True)
class CarrierTokenConfig:
    """The cross-window copy task (the mechanism of Sec. 3.3). Defaults: the settings first verified on the official
    ``FasterViTLayer`` (4x4-px squares, 20 epochs x 3000 samples), except the batch."""

    image_size: int = 32
    patch: int = 4  # Conv 4x4 stride 4 -> 8x8 tokens
    square: int = 4  # side (px) of the label and distractor squares, also their grid alignment
    dim: int = 32
    depth: int = 2
    heads: int = 2
    window: int = 4  # 4 windows of 4x4 tokens; "global" uses one 8x8 window
    ct_size: int = 2
    epochs: int = 20
    samples_per_epoch: int = 3000
    test_samples: int = 1000
    # first verified with batch 128; 32 takes 4x more steps per sample (leaves the plateau sooner)
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.05


class QuadrantReadoutNet(nn.Module):
    """Conv patchify -> one FasterViT stage -> per-token LayerNorm -> mean over the bottom-right window only ->
    linear. ``attention``: "local" (plain window attention), "hat" (carrier tokens, with propagation) or
    "global" (a single window covering the map)."""

    def __init__(self, attention: str, cfg: CarrierTokenConfig = CarrierTokenConfig()) -> None:
        super().__init__()
        if attention not in ATTENTION_VARIANTS:
            raise InputError(f"attention must be one of {ATTENTION_VARIANTS}, got {attention!r}")
        tokens = cfg.image_size // cfg.patch
        self.readout = cfg.window  # side of the bottom-right readout window, in tokens
        self.embed = nn.Conv2d(3, cfg.dim, cfg.patch, stride=cfg.patch)
        self.stage = FasterViTLayer(
            dim=cfg.dim,
            depth=cfg.depth,
            input_resolution=tokens,
            num_heads=cfg.heads,
            window_size=tokens if attention == "global" else cfg.window,
            ct_size=cfg.ct_size,
            conv=False,
            downsample=False,
            only_local=attention == "local",
            do_propagation=True,
        )
        self.norm = LayerNorm2d(cfg.dim)
        self.head = nn.Linear(cfg.dim, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(self.stage(self.embed(x)))
        r = self.readout
        return self.head(y[:, :, -r:, -r:].mean(dim=(2, 3)))


def run_carrier_token_task(
    attention: str, seed: int, cfg: CarrierTokenConfig = CarrierTokenConfig(), show_progress: bool = False
) -> dict:
    """Train one model on freshly generated samples each epoch; return test/train accuracy and seconds."""
    t0 = time.perf_counter()
    seed_everything(seed)
    model = QuadrantReadoutNet(attention, cfg)
    # foreach: the same AdamW update in multi-tensor kernels (torch's default on CUDA, not on CPU); a step of this
    # small model is ~15-25% faster on CPU
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, foreach=True)
    gen = torch.Generator().manual_seed(10_000 + seed)
    xt, yt = quadrant_copy_batch(
        cfg.test_samples, torch.Generator().manual_seed(99_999), size=cfg.image_size, square=cfg.square
    )
    train_acc = 0.0
    for _ in progress(range(cfg.epochs), desc=f"{attention} seed {seed}", disable=not show_progress):
        model.train()
        x, y = quadrant_copy_batch(cfg.samples_per_epoch, gen, size=cfg.image_size, square=cfg.square)
        correct = 0
        for i in range(0, len(x), cfg.batch_size):
            xb, yb = x[i : i + cfg.batch_size], y[i : i + cfg.batch_size]
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            correct += int((logits.argmax(1) == yb).sum())
        train_acc = correct / len(x)
    model.eval()
    with torch.no_grad():
        acc = float((model(xt).argmax(1) == yt).float().mean())
    return {
        "attention": attention,
        "seed": seed,
        "test_acc": acc,
        "last_epoch_train_acc": train_acc,
        "seconds": time.perf_counter() - t0,
    }


@dataclass(frozen=True)
class ScalingConfig:
    """A HAT layer vs a global-attention layer (one block each) on k=7 windows of growing maps."""

    sizes: tuple[int, ...] = (14, 28, 56)
    dim: int = 64
    heads: int = 2
    window: int = 7
    ct_size: int = 2
    batch: int = 1
    repeats: int = 5


def time_layers(cfg: ScalingConfig = ScalingConfig()) -> list[dict]:
    """Median forward time (inference) of a HAT layer and a global-attention layer per map size."""
    from iclr24.paperkit import benchmark

    rows = []
    for n in cfg.sizes:
        torch.manual_seed(0)
        hat = FasterViTLayer(
            dim=cfg.dim,
            depth=1,
            input_resolution=n,
            num_heads=cfg.heads,
            window_size=cfg.window,
            ct_size=cfg.ct_size,
            downsample=False,
        ).eval()
        glob = FasterViTLayer(
            dim=cfg.dim, depth=1, input_resolution=n, num_heads=cfg.heads, window_size=n, downsample=False
        ).eval()
        x = torch.randn(cfg.batch, cfg.dim, n, n)

        def run(m, x=x):
            def f():
                with torch.inference_mode():
                    m(x)

            return f

        r = benchmark(
            run(hat),
            baseline=run(glob),
            repeats=cfg.repeats,
            warmup=1,
            name=f"HAT {n}x{n}",
            baseline_name=f"global {n}x{n}",
        )
        rows.append(
            {
                "size": n,
                "hat_s": r.median_s,
                "global_s": r.baseline_median_s,
                "global_over_hat": r.baseline_median_s / r.median_s,
                "tokens": n * n,
            }
        )
    return rows


def config_dict(cfg) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(cfg).items()}
