"""Built-in free-form encoder/decoder pairs: residual MLPs (toy, tabular) and a small conv pair (images).

Any ``nn.Module`` pair with shapes (B, D) -> (B, d) and (B, d) -> (B, D) works with :class:`FreeFormInjectiveFlow`;
these are the official code's architectures (``fff/model/res_net.py``, ``conv_auto_encoder.py``) at a size chosen
by the caller. No batch norm: forward-mode AD and per-sample Jacobians need per-sample networks.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.nets import mlp_layers

__all__ = [
    "ResidualBlock",
    "ResNetEncoder",
    "ResNetDecoder",
    "ConvEncoder",
    "ConvDecoder",
    "resnet_pair",
    "conv_pair",
]


def _check_pos_int(name: str, v: object, maximum: int = 2**17) -> int:
    """A size in [1, maximum] (widths, dimensions, block counts), refused before any layer is allocated."""
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= maximum:
        raise InputError(f"{name} must be an int >= 1 (at most {maximum}), got {v!r}")
    return v


def _check_widths(widths: Sequence[int]) -> list[int]:
    if isinstance(widths, int | str) or len(widths) == 0:
        raise InputError(f"hidden widths must be a non-empty list of ints, e.g. [256, 256], got {widths!r}")
    return [_check_pos_int("hidden width", w) for w in widths]


class ResidualBlock(nn.Module):
    """``x + MLP(x)``: Linear -> SiLU -> ... -> Linear back to the block's dimension (official ``ResNet`` block)."""

    def __init__(self, dim: int, widths: Sequence[int]):
        super().__init__()
        self.net = nn.Sequential(*mlp_layers(dim, _check_widths(widths), dim, nn.SiLU))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.net(x)


class ResNetEncoder(nn.Module):
    """``n_blocks`` residual blocks in data space, then ``Linear(D -> d)``."""

    def __init__(self, data_dim: int, latent_dim: int, n_blocks: int = 4, widths: Sequence[int] = (256, 256)):
        super().__init__()
        _check_pos_int("data_dim", data_dim)
        _check_pos_int("latent_dim", latent_dim)
        self.blocks = nn.Sequential(
            *[ResidualBlock(data_dim, widths) for _ in range(_check_pos_int("n_blocks", n_blocks))]
        )
        self.out = nn.Linear(data_dim, latent_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.blocks(x))


class ResNetDecoder(nn.Module):
    """The mirror of :class:`ResNetEncoder`: ``Linear(d -> D)``, then ``n_blocks`` residual blocks in data space."""

    def __init__(self, data_dim: int, latent_dim: int, n_blocks: int = 4, widths: Sequence[int] = (256, 256)):
        super().__init__()
        _check_pos_int("data_dim", data_dim)
        _check_pos_int("latent_dim", latent_dim)
        self.inp = nn.Linear(latent_dim, data_dim)
        self.blocks = nn.Sequential(
            *[ResidualBlock(data_dim, widths) for _ in range(_check_pos_int("n_blocks", n_blocks))]
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.blocks(self.inp(z))


def resnet_pair(
    data_dim: int, latent_dim: int, n_blocks: int = 4, widths: Sequence[int] = (256, 256)
) -> tuple[ResNetEncoder, ResNetDecoder]:
    """Encoder and decoder of the official toy config (``configs/fif/toy.yaml``: 4 blocks of [256, 256], SiLU)."""
    _check_pos_int("n_blocks", n_blocks, maximum=1024)
    if isinstance(widths, str | bytes) or not isinstance(widths, Sequence) or not widths:
        raise InputError(f"widths must be a non-empty sequence of layer widths, got {widths!r}")
    return (
        ResNetEncoder(data_dim, latent_dim, n_blocks, widths),
        ResNetDecoder(data_dim, latent_dim, n_blocks, widths),
    )


def _check_image_shape(image_shape: Sequence[int]) -> tuple[int, int, int]:
    """``(C, H, W)`` of positive ints with H and W multiples of 4 (the two stride-2 halvings)."""
    c, h, w = (_check_pos_int("image_shape[...]", s) for s in image_shape)
    if h % 4 or w % 4:
        raise InputError(f"image height and width must be multiples of 4, got {h}x{w}")
    return c, h, w


class ConvEncoder(nn.Module):
    """Flat images (B, C*H*W) -> latent (B, d): two stride-2 convs (SiLU), flatten, a residual MLP, Linear to d."""

    def __init__(self, image_shape: Sequence[int], latent_dim: int, ch_factor: int = 16, hidden: int = 256):
        super().__init__()
        self.image_shape = _check_image_shape(image_shape)
        c, h, w = self.image_shape
        self.conv = nn.Sequential(
            nn.Conv2d(c, ch_factor, 3, stride=2, padding=1),
            nn.SiLU(),
            nn.Conv2d(ch_factor, 2 * ch_factor, 3, stride=2, padding=1),
            nn.SiLU(),
        )
        flat = 2 * ch_factor * (h // 4) * (w // 4)
        self.fc = nn.Sequential(nn.Linear(flat, hidden), nn.SiLU(), ResidualBlock(hidden, [hidden]))
        self.out = nn.Linear(hidden, _check_pos_int("latent_dim", latent_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(x.reshape(x.shape[0], *self.image_shape))
        return self.out(self.fc(h.flatten(1)))


class ConvDecoder(nn.Module):
    """The mirror of :class:`ConvEncoder`; returns flat images (B, C*H*W)."""

    def __init__(self, image_shape: Sequence[int], latent_dim: int, ch_factor: int = 16, hidden: int = 256):
        super().__init__()
        self.image_shape = _check_image_shape(image_shape)
        c, h, w = self.image_shape
        self.ch = 2 * ch_factor
        self.fc = nn.Sequential(
            nn.Linear(_check_pos_int("latent_dim", latent_dim), hidden),
            nn.SiLU(),
            ResidualBlock(hidden, [hidden]),
            nn.Linear(hidden, self.ch * (h // 4) * (w // 4)),
            nn.SiLU(),
        )
        self.deconv = nn.Sequential(
            nn.ConvTranspose2d(self.ch, ch_factor, 4, stride=2, padding=1),
            nn.SiLU(),
            nn.ConvTranspose2d(ch_factor, c, 4, stride=2, padding=1),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        c, h, w = self.image_shape
        x = self.deconv(self.fc(z).reshape(z.shape[0], self.ch, h // 4, w // 4))
        return x.flatten(1)


def conv_pair(
    image_shape: Sequence[int], latent_dim: int, ch_factor: int = 16, hidden: int = 256
) -> tuple[ConvEncoder, ConvDecoder]:
    """A small conv encoder/decoder for (C, H, W) images given as flat vectors."""
    if isinstance(image_shape, str | bytes) or not isinstance(image_shape, Sequence) or len(image_shape) != 3:
        raise InputError(f"image_shape must be (C, H, W), got {image_shape!r}")
    return ConvEncoder(image_shape, latent_dim, ch_factor, hidden), ConvDecoder(
        image_shape, latent_dim, ch_factor, hidden
    )
