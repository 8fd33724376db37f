"""The LACE denoiser: a transformer encoder over layout tokens with time-conditioned AdaLN (official
``util/backbone.py``).

Notation: tokens x (B, L, C+5), timestep t (B,), width d. Per block: x <- AdaLN(x, t); x <- x + MHA(x);
x <- x + FF(LN(x)); AdaLN(x, t) = LN(x) (1 + s_t) + h_t with (s_t, h_t) = Linear(SiLU(Emb(t))).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.pretrained import PretrainedMixin

__all__ = ["LayoutDenoiser"]


def sinusoidal_positions(length: int, dim: int, scale: float) -> torch.Tensor:
    """Fixed sinusoidal embedding of 0..length-1 as the official ``SinusoidalPosEmb``: argument a = n * scale
    (positions: 4000 / 25; timesteps: 4000 / T), half = dim // 2 frequencies f_k = 10000^(-k / (half - 1)),
    embedding [sin(a f_0), ..., sin(a f_{half-1}), cos(a f_0), ..., cos(a f_{half-1})] (sines first, then cosines)."""
    half = dim // 2
    if half < 2 or dim % 2:
        raise InputError(f"the sinusoidal embedding needs an even dim >= 4, got {dim}")
    freq = torch.exp(-math.log(10000.0) / (half - 1) * torch.arange(half, dtype=torch.float64))
    arg = (torch.arange(length, dtype=torch.float64) * scale)[:, None] * freq[None, :]
    return torch.cat([arg.sin(), arg.cos()], dim=-1).float()


class AdaLN(nn.Module):
    def __init__(self, dim: int, num_timesteps: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(num_timesteps, dim)
        self.proj = nn.Linear(dim, 2 * dim)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        s, h = self.proj(nn.functional.silu(self.emb(t)))[:, None, :].chunk(2, dim=-1)
        return self.norm(x) * (1 + s) + h


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, ff: int, num_timesteps: int) -> None:
        super().__init__()
        self.ada = AdaLN(dim, num_timesteps)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, ff), nn.ReLU(), nn.Linear(ff, dim))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        x = self.ada(x, t)  # the residual is added to the normalised x, as the official code
        x = x + self.attn(x, x, x, need_weights=False)[0]
        return x + self.ff(self.ln(x))


class LayoutDenoiser(PretrainedMixin, nn.Module):
    """eps-prediction network: (B, L, seq_dim) tokens and (B,) timesteps -> (B, L, seq_dim).

    Saves and loads as a model folder: ``model.save_pretrained(dir)`` / ``LayoutDenoiser.from_pretrained(dir)``.
    A model made by :func:`~iclr24.lace.make_model` (or :func:`~iclr24.lace.train`) carries its
    :class:`~iclr24.lace.LaceConfig` as ``model.lace_config``; the folder's ``config.json`` holds that whole config
    (categories, sampling steps, ...), so ``generate(model, model.lace_config, ...)`` works on a loaded model."""

    def __init__(
        self,
        seq_dim: int,
        max_elements: int,
        dim: int = 64,
        heads: int = 4,
        layers: int = 3,
        ff: int = 128,
        num_timesteps: int = 1000,
    ) -> None:
        super().__init__()
        if dim % heads:
            raise InputError(f"dim must be divisible by heads, got dim={dim}, heads={heads}")
        self.seq_dim, self.max_elements = seq_dim, max_elements
        self.inp = nn.Linear(seq_dim, dim)
        self.register_buffer("pos", sinusoidal_positions(max_elements, dim, 4000.0 / 25.0), persistent=False)
        self.blocks = nn.ModuleList(Block(dim, heads, ff, num_timesteps) for _ in range(layers))
        self.out = nn.Linear(dim, seq_dim)

    def pretrained_config(self) -> dict:
        """``{"lace_config": ...}`` for a model of :func:`make_model`, else the constructor's arguments."""
        cfg = getattr(self, "lace_config", None)
        if cfg is None:
            return super().pretrained_config()
        return {"lace_config": cfg.to_dict()}

    @classmethod
    def from_pretrained_config(cls, **config) -> LayoutDenoiser:
        """Rebuild from :meth:`pretrained_config` (its initial weights drawn without touching the global RNG; the
        saved weights replace them)."""
        with torch.random.fork_rng(devices=[]):
            if "lace_config" in config:
                from .diffusion import LaceConfig
                from .diffusion import make_model

                if set(config) != {"lace_config"} or not isinstance(config["lace_config"], dict):
                    raise InputError(f"expected {{'lace_config': {{...}}}}, got the keys {sorted(config)}")
                return make_model(LaceConfig(**config["lace_config"]))
            return cls(**config)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        if x.ndim != 3 or x.shape[1] != self.max_elements or x.shape[2] != self.seq_dim:
            raise InputError(
                f"expected tokens (B, {self.max_elements}, {self.seq_dim}), got {tuple(x.shape)}"
            )
        h = nn.functional.softplus(self.inp(x)) + self.pos
        for k, blk in enumerate(self.blocks):
            h = blk(h, t)
            if k < len(self.blocks) - 1:
                h = nn.functional.softplus(h)
        return self.out(h)
