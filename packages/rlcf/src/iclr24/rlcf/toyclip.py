"""The demo's small CLIP as a class that saves and loads as a model folder (``save_pretrained`` /
``from_pretrained``: ``model.safetensors``, ``config.json``, ``provenance.json``).

A separate module because it subclasses ``open_clip.model.CLIP`` at import, and open_clip takes seconds to import:
``import iclr24.rlcf`` stays light, and this module is imported on first use (``iclr24.rlcf.ToyCLIP``,
:func:`build_toy_clip`, or :func:`iclr24.paperkit.load_pretrained` on a folder).
"""

from __future__ import annotations

from dataclasses import asdict

import torch
from open_clip.model import CLIP
from open_clip.model import CLIPTextCfg
from open_clip.model import CLIPVisionCfg
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import describe
from iclr24.paperkit.pretrained import PretrainedMixin

from .model import TOY_CONTEXT_LENGTH
from .model import ConvTower
from .model import ToyCLIPConfig

__all__ = ["ToyCLIP"]


class ToyCLIP(PretrainedMixin, CLIP):
    """An ``open_clip.model.CLIP`` whose ``visual`` is a :class:`~iclr24.rlcf.model.ConvTower` for 8x8 one-channel
    images, and open_clip's text transformer; the keyword arguments are :class:`ToyCLIPConfig`'s fields.

    Randomly initialised from the global torch RNG (:func:`build_toy_clip` seeds it). The
    token table stays frozen at CLIP's N(0, 0.02²) init: ten captions use a few dozen of its rows, and updating all
    49408 of them would dominate the cost of training on a CPU."""

    def __init__(
        self,
        *,
        vision_width: int = 8,
        embed_dim: int = 32,
        text_width: int = 32,
        text_heads: int = 4,
        text_layers: int = 1,
        context_length: int = TOY_CONTEXT_LENGTH,
    ) -> None:
        cfg = ToyCLIPConfig(vision_width=vision_width, embed_dim=embed_dim, text_width=text_width,
                            text_heads=text_heads, text_layers=text_layers, context_length=context_length)  # fmt: skip
        super().__init__(
            cfg.embed_dim,
            CLIPVisionCfg(layers=1, width=16, head_width=8, patch_size=2, image_size=8),
            CLIPTextCfg(
                context_length=cfg.context_length,
                width=cfg.text_width,
                heads=cfg.text_heads,
                layers=cfg.text_layers,
            ),
        )
        self.visual = ConvTower(cfg.vision_width, cfg.embed_dim)
        self.token_embedding.weight.requires_grad_(False)

    @property
    def toy_config(self) -> ToyCLIPConfig:
        """The :class:`ToyCLIPConfig` this model was built from."""
        return ToyCLIPConfig(**self.pretrained_config())

    @classmethod
    def from_config(cls, cfg: ToyCLIPConfig) -> ToyCLIP:
        return cls(**asdict(cfg))

    @classmethod
    def from_pretrained(cls, folder, *, strict: bool = True, **overrides) -> ToyCLIP:
        """The model saved in ``folder`` by ``save_pretrained``, in eval mode (as a trained CLIP is used)."""
        return super().from_pretrained(folder, strict=strict, **overrides).eval()


_DEFAULT_CONFIG = ToyCLIPConfig()  # frozen


def build_toy_clip(cfg: ToyCLIPConfig = _DEFAULT_CONFIG, seed: int = 0) -> nn.Module:
    """A :class:`ToyCLIP` (an ``open_clip.model.CLIP`` whose ``visual`` is a
    :class:`ConvTower`), randomly initialised from ``seed`` (the global RNG is left as it was). It saves with
    ``save_pretrained(folder)`` and loads back with ``ToyCLIP.from_pretrained(folder)``."""
    if not isinstance(cfg, ToyCLIPConfig):
        raise InputError(f"cfg must be a ToyCLIPConfig, got {describe(cfg)}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ToyCLIP.from_config(cfg)
