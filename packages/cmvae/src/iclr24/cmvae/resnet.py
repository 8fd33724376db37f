"""The official PolyMNIST encoder and decoder architecture (``src/models/encoder_decoder_blocks/resnet_polyMNIST.py``
of the released code), written for this package's encoder/decoder interface.

Residual block: pre-activation (leaky ReLU, slope 0.2), two 3x3 convolutions (hidden width min(in, out)), the
residual branch scaled by 0.1, a 1x1 convolution without bias as the shortcut when the width changes.

Encoder (3 x 28 x 28 -> z, w): two separate branches, one for the shared latent z and one for the modality-specific
w, each: 3x3 conv 3 -> 64, block 64 -> 64, then twice [3x3 average pool stride 2, block doubling the width]
(28 -> 14 -> 7 pixels, 64 -> 128 -> 256 channels), and linear heads from 256 x 7 x 7 to the location and the raw
scale. Decoder ([z, w] -> 3 x 28 x 28): linear to 256 x 7 x 7, [block halving the width, 2x nearest upsampling]
twice (7 -> 14 -> 28, 256 -> 128 -> 64), block 64 -> 64, leaky ReLU, 3x3 conv 64 -> 3: the mean of a Laplace
likelihood with scale 0.75.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["ResBlock", "ResNetEncoder", "ResNetDecoder"]


def _act(x: torch.Tensor) -> torch.Tensor:
    return F.leaky_relu(x, 0.2)


class ResBlock(nn.Module):
    """x + 0.1 * conv(act(conv(act(x)))), with a learned 1x1 shortcut when the width changes."""

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        mid = min(c_in, c_out)
        self.conv_a = nn.Conv2d(c_in, mid, 3, padding=1)
        self.conv_b = nn.Conv2d(mid, c_out, 3, padding=1)
        self.skip = nn.Conv2d(c_in, c_out, 1, bias=False) if c_in != c_out else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.skip(x) + 0.1 * self.conv_b(_act(self.conv_a(_act(x))))


def _branch(nf: int, levels: int) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(3, nf, 3, padding=1), ResBlock(nf, nf)]
    for i in range(levels):
        layers += [nn.AvgPool2d(3, stride=2, padding=1), ResBlock(nf * 2**i, nf * 2 ** (i + 1))]
    return nn.Sequential(*layers, nn.Flatten())


class ResNetEncoder(nn.Module):
    """x_m [B, 3, 28, 28] -> (z_loc, z_raw, w_loc, w_raw): separate ResNet branches for z and w."""

    def __init__(self, latent_dim: int, modality_latent_dim: int, nf: int = 64, side: int = 28) -> None:
        super().__init__()
        levels, s0 = 2, side // 4
        feat = nf * 2**levels * s0 * s0
        self.z_branch, self.w_branch = _branch(nf, levels), _branch(nf, levels)
        self.z_loc, self.z_raw = nn.Linear(feat, latent_dim), nn.Linear(feat, latent_dim)
        self.w_loc, self.w_raw = nn.Linear(feat, modality_latent_dim), nn.Linear(feat, modality_latent_dim)
        self.in_shape = (3, side, side)
        self.latent_dim, self.modality_latent_dim = latent_dim, modality_latent_dim

    def forward(self, x: torch.Tensor):
        hz, hw = self.z_branch(x), self.w_branch(x)
        return self.z_loc(hz), self.z_raw(hz), self.w_loc(hw), self.w_raw(hw)


class ResNetDecoder(nn.Module):
    """[N, d + d_w] -> the mean image [N, 3, 28, 28]."""

    def __init__(self, in_dim: int, nf: int = 64, side: int = 28) -> None:
        super().__init__()
        levels = 2
        self.s0, self.c0 = side // 4, nf * 2**levels
        self.fc = nn.Linear(in_dim, self.c0 * self.s0 * self.s0)
        blocks: list[nn.Module] = []
        for i in range(levels):
            blocks += [
                ResBlock(nf * 2 ** (levels - i), nf * 2 ** (levels - i - 1)),
                nn.Upsample(scale_factor=2),
            ]
        self.blocks = nn.Sequential(*blocks, ResBlock(nf, nf))
        self.out = nn.Conv2d(nf, 3, 3, padding=1)
        self.in_dim, self.out_shape = in_dim, (3, side, side)

    def forward(self, zw: torch.Tensor) -> torch.Tensor:
        h = self.fc(zw).view(-1, self.c0, self.s0, self.s0)
        return self.out(_act(self.blocks(h)))
