"""The LACE denoiser: a transformer encoder over layout tokens with time-conditioned AdaLN (official
``util/backbone.py``), its :class:`LaceConfig` (network, constraint weights, training and sampling settings) and
:func:`make_model`, which builds the denoiser a config describes.

Notation: tokens x (B, L, C+5), timestep t (B,), width d. Per block: x <- AdaLN(x, t); x <- x + MHA(x);
x <- x + FF(LN(x)); AdaLN(x, t) = LN(x) (1 + s_t) + h_t with (s_t, h_t) = Linear(SiLU(Emb(t))).
"""

from __future__ import annotations

import math
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field

import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_choice
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe
from iclr24.paperkit.pretrained import PretrainedMixin

from .layout import DEFAULT_CATEGORIES

__all__ = ["LaceConfig", "LayoutDenoiser", "make_model"]


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


ALIGN_TYPES = ("local", "global")
TIME_EMBEDDINGS = ("learned", "sinusoidal")
REC_LOSSES = ("unclamped", "clamped")


@dataclass
class LaceConfig:
    """Defaults: a CPU scale (d = 64, 3 layers, 4 heads, FF 128, lr 5e-4); the official PubLayNet model is
    d = 1024, 16 heads, 4 layers, FF 2048, lr 1e-5, batch 256, 100 DDIM steps."""

    categories: tuple[str, ...] = DEFAULT_CATEGORIES
    max_elements: int = 12
    dim: int = 64
    heads: int = 4
    layers: int = 3
    ff: int = 128
    num_timesteps: int = 1000
    align_weight: float = 1.0  # lambda_a (0 = the no-constraint baseline)
    overlap_weight: float = 1.0  # lambda_o (0 on Rico in the official code)
    align_scale: float = 20.0  # the 'local' alignment loss is 20 * Align
    # the official --align_type: 'local' (20 * Align) or 'global' (mean_alignment_error)
    align_type: str = "local"
    # 'learned': the official default nn.Embedding(T, d) per AdaLN; 'sinusoidal': the official backbone's
    # 'adalayernorm_abs' option (a fixed SinusoidalPosEmb(T, d)), kept in the same table, frozen
    time_embedding: str = "learned"
    # L_rec on x0_hat's boxes: 'unclamped' as the official train.py (line 165), or 'clamped' to [-1, 1] first
    rec_loss: str = "unclamped"
    # the 'local' alignment loss's partners: False (this package's default) only real elements, as the paper's
    # Align; True as the official util/constraint.py layout_alignment, which masks only the rows (X[~mask] = 1), so
    # the padding slots' predicted boxes stay partners of every real element (see the README for why not default)
    align_padding_partners: bool = False
    complete_keep: float = 0.2  # rand_fix: each real element kept with probability u * 0.2, u ~ U(0, 1)
    # completion keeps the first real element of every layout besides rand_fix's draw (this package's default), so
    # the task always has a condition; False: the official rand_fix alone, which may keep no element at all
    complete_keep_first: bool = True
    lr: float = 5e-4
    batch_size: int = 64
    steps: int = 2000
    grad_clip: float = 1.0
    # exponential moving average of the weights used for sampling (0 = off: the official evaluation, which updates
    # an EMA with mu = 0.9999 but never applies it)
    ema: float = 0.0
    ddim_steps: int = 50
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.categories, str) or not all(isinstance(c, str) for c in self.categories):
            raise InputError(f"categories must be a sequence of names, got {describe(self.categories)}")
        self.categories = tuple(self.categories)
        if len(self.categories) < 1 or len(set(self.categories)) != len(self.categories):
            raise InputError(f"categories must be distinct names, got {self.categories!r}")
        limits = {"max_elements": 10**4, "dim": 2**16, "heads": 1024, "layers": 1024, "ff": 2**18}
        limits.update(batch_size=2**20, steps=10**9, ddim_steps=10**6, num_timesteps=10**6)
        for n, top in limits.items():
            check_int(getattr(self, n), f"LaceConfig.{n}", minimum=1, maximum=top)
        if self.dim % self.heads:
            raise InputError(f"LaceConfig.dim {self.dim} must be divisible by heads {self.heads}")
        for n in ("align_weight", "overlap_weight", "align_scale", "grad_clip"):
            check_float(getattr(self, n), f"LaceConfig.{n}", minimum=0)
        check_float(self.complete_keep, "LaceConfig.complete_keep", minimum=0, maximum=1)
        for n in ("align_padding_partners", "complete_keep_first"):
            if not isinstance(getattr(self, n), bool):
                raise InputError(f"LaceConfig.{n} must be True or False, got {describe(getattr(self, n))}")
        check_choice(self.align_type, "align_type", ALIGN_TYPES)
        check_choice(self.rec_loss, "rec_loss", REC_LOSSES)
        check_choice(self.time_embedding, "time_embedding", TIME_EMBEDDINGS)
        check_float(self.ema, "ema", minimum=0, maximum=1, open_max=True)
        check_float(self.lr, "lr", minimum=0, maximum=1, open_min=True, open_max=True)

    @property
    def num_classes(self) -> int:
        return len(self.categories)

    @property
    def seq_dim(self) -> int:
        return self.num_classes + 5

    def to_dict(self) -> dict:
        return asdict(self)


def make_model(cfg: LaceConfig) -> LayoutDenoiser:
    """The denoiser of ``cfg``; with ``time_embedding='sinusoidal'`` every AdaLN's timestep table holds the fixed
    sinusoidal embedding of t (argument 4000 t / T, as the official ``SinusoidalPosEmb(T, d)``) and is frozen."""
    if not isinstance(cfg, LaceConfig):
        raise InputError(f"cfg must be a LaceConfig, got {describe(cfg)}")
    model = LayoutDenoiser(
        cfg.seq_dim, cfg.max_elements, cfg.dim, cfg.heads, cfg.layers, cfg.ff, cfg.num_timesteps
    )
    model.lace_config = LaceConfig(**cfg.to_dict())  # a copy: what save_pretrained writes into config.json
    if cfg.time_embedding == "sinusoidal":
        table = sinusoidal_positions(cfg.num_timesteps, cfg.dim, 4000.0 / cfg.num_timesteps)
        for blk in model.blocks:
            with torch.no_grad():
                blk.ada.emb.weight.copy_(table)
            blk.ada.emb.weight.requires_grad_(False)
    return model
