"""The CPU-scale networks of one modality: an MLP encoder (``x_m -> (z_loc, z_raw, w_loc, w_raw)``) and an MLP
decoder (``[z, w_m] -> the mean of p(x_m | z, w_m)``); :mod:`.model` holds the CMVAE that combines them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn as nn

from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_layer_widths
from iclr24.paperkit.nets import mlp_layers

__all__ = ["MAX_WIDTH", "MLPDecoder", "MLPEncoder"]


class MLPEncoder(nn.Module):
    """x_m [B, in_dim] -> (z_loc, z_raw, w_loc, w_raw): a shared trunk with one head per latent."""

    def __init__(
        self, in_dim: int, latent_dim: int, modality_latent_dim: int, hidden: Sequence[int] = (256, 256)
    ):
        super().__init__()
        _check_widths(in_dim=in_dim, latent_dim=latent_dim, modality_latent_dim=modality_latent_dim)
        check_layer_widths(hidden, maximum=MAX_WIDTH)
        layers, prev = [], in_dim
        for h in hidden:
            layers += [nn.Linear(prev, h), nn.ReLU()]
            prev = h
        self.trunk = nn.Sequential(*layers)
        self.z_head = nn.Linear(prev, 2 * latent_dim)
        self.w_head = nn.Linear(prev, 2 * modality_latent_dim)
        self.in_shape = (in_dim,)
        self.latent_dim, self.modality_latent_dim = latent_dim, modality_latent_dim

    def forward(self, x: torch.Tensor):
        h = self.trunk(x.flatten(1))
        z_loc, z_raw = self.z_head(h).chunk(2, dim=-1)
        w_loc, w_raw = self.w_head(h).chunk(2, dim=-1)
        return z_loc, z_raw, w_loc, w_raw


def _check_widths(**widths: object) -> None:
    for name, v in widths.items():
        check_int(v, name, minimum=1, maximum=MAX_WIDTH)


MAX_WIDTH = 2**17  # layer widths and latent sizes; far past any model here, and refused before allocation


class MLPDecoder(nn.Module):
    """[N, d + d_w] -> [N, out_dim]: the mean (or logits) of p(x_m | z, w_m)."""

    def __init__(self, in_dim: int, out_dim: int, hidden: Sequence[int] = (256, 256)):
        super().__init__()
        _check_widths(in_dim=in_dim, out_dim=out_dim)
        check_layer_widths(hidden, maximum=MAX_WIDTH)
        self.net = nn.Sequential(*mlp_layers(in_dim, hidden, out_dim))
        self.in_dim, self.out_shape = in_dim, (out_dim,)

    def forward(self, zw: torch.Tensor) -> torch.Tensor:
        return self.net(zw)
