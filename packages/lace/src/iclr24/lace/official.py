"""Official LACE checkpoints (``model/{publaynet,rico25}_best.pt``) from a user path, mapped onto
:class:`~iclr24.lace.model.LayoutDenoiser`.

The official file is the ``state_dict`` of ``util/backbone.py``'s ``TransformerEncoder`` (what
``Diffusion.load_diffusion_net`` loads with ``strict=True``). Key map (i = block):

| official | here |
|---|---|
| ``layer_in.{weight,bias}`` | ``inp.*`` |
| ``layers.i.norm1.emb.weight`` (AdaLN timestep ``Embedding``) | ``blocks.i.ada.emb.weight`` |
| ``layers.i.norm1.linear.{weight,bias}`` | ``blocks.i.ada.proj.*`` |
| ``layers.i.self_attn.{in_proj_weight,in_proj_bias,out_proj.weight,out_proj.bias}`` | ``blocks.i.attn.*`` |
| ``layers.i.linear1.*`` / ``layers.i.linear2.*`` | ``blocks.i.ff.0.*`` / ``blocks.i.ff.2.*`` |
| ``layers.i.norm2.{weight,bias}`` | ``blocks.i.ln.*`` |
| ``layer_out.{weight,bias}`` | ``out.*`` |

The official position table (``SinusoidalPosEmb(num_steps=25)`` on positions 0..24: ``[sin(160 p f_k) |
cos(160 p f_k)]`` with ``f_k = exp(-k ln(10^4) / (d/2 - 1))``) is not part of the state dict: ``LayoutDenoiser``
builds the same table (the tests check a mapped model against the official forward pass, table included). The
number of heads is not in the state dict either: 16 for both official models.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import torch

from iclr24.paperkit.checkpoint import safe_torch_load
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from .model import LayoutDenoiser

__all__ = [
    "map_official_state_dict",
    "load_official_checkpoint",
    "load_any_checkpoint",
]

_BLOCK = {
    "norm1.emb.weight": "ada.emb.weight",
    "norm1.linear.weight": "ada.proj.weight",
    "norm1.linear.bias": "ada.proj.bias",
    "self_attn.in_proj_weight": "attn.in_proj_weight",
    "self_attn.in_proj_bias": "attn.in_proj_bias",
    "self_attn.out_proj.weight": "attn.out_proj.weight",
    "self_attn.out_proj.bias": "attn.out_proj.bias",
    "linear1.weight": "ff.0.weight",
    "linear1.bias": "ff.0.bias",
    "linear2.weight": "ff.2.weight",
    "linear2.bias": "ff.2.bias",
    "norm2.weight": "ln.weight",
    "norm2.bias": "ln.bias",
}
_TOP = {
    "layer_in.weight": "inp.weight",
    "layer_in.bias": "inp.bias",
    "layer_out.weight": "out.weight",
    "layer_out.bias": "out.bias",
}
OFFICIAL_LENGTH = 25  # the length of the official TransformerEncoder's fixed position table


def _sizes(sd: dict[str, torch.Tensor]) -> dict:
    need = ["layer_in.weight", "layers.0.linear1.weight", "layers.0.norm1.emb.weight"]
    missing = [k for k in need if k not in sd]
    if missing:
        raise InputError(
            f"not an official LACE state dict (util/backbone.py TransformerEncoder): missing {missing}; "
            f"found keys such as {sorted(sd)[:4]}"
        )
    idx = {int(m.group(1)) for k in sd if (m := re.match(r"layers\.(\d+)\.", k))}
    dim, seq_dim = sd["layer_in.weight"].shape
    return dict(
        seq_dim=int(seq_dim),
        dim=int(dim),
        layers=max(idx) + 1,
        ff=int(sd["layers.0.linear1.weight"].shape[0]),
        num_timesteps=int(sd["layers.0.norm1.emb.weight"].shape[0]),
    )


def map_official_state_dict(sd: dict[str, torch.Tensor], model: LayoutDenoiser) -> dict[str, torch.Tensor]:
    """Rename an official state dict to ``model``'s keys, strictly: every official key is used, every model key
    is filled, every shape matches; otherwise a ValueError naming the keys."""
    sd = {k.removeprefix("module."): v for k, v in sd.items()}  # saved from nn.DataParallel
    ours = model.state_dict()
    out, unused = {}, []
    for k, v in sd.items():
        m = re.fullmatch(r"layers\.(\d+)\.(.+)", k)
        new = f"blocks.{m.group(1)}.{_BLOCK[m.group(2)]}" if m and m.group(2) in _BLOCK else _TOP.get(k)
        if new is None or new not in ours:
            unused.append(k)
            continue
        if not isinstance(v, torch.Tensor) or tuple(v.shape) != tuple(ours[new].shape):
            raise InputError(
                f"official key {k!r} has shape {tuple(getattr(v, 'shape', ()))}, "
                f"the model's {new!r} {tuple(ours[new].shape)}"
            )
        out[new] = v
    missing = sorted(set(ours) - set(out))
    if unused or missing:
        raise InputError(
            f"official state dict does not fit the model: unused keys {unused[:6]}, missing {missing[:6]}"
        )
    return out


def load_official_checkpoint(
    path: str | os.PathLike,
    categories: tuple[str, ...] | None = None,
    heads: int = 16,
    ddim_steps: int = 100,
):
    """An official LACE checkpoint -> ``(LayoutDenoiser, LaceConfig)``.

    ``categories``: the dataset's category names (e.g. ``real_data.CATEGORIES['publaynet']``); None: inferred
    from the checkpoint's width (5 -> PubLayNet, 25 -> Rico25, 13 -> Rico13). A checkpoint for another category
    set, a file that is not an official state dict, or sizes the model cannot take are ValueErrors."""
    p, obj = _read(path)
    return _from_object(p, obj, categories, heads, ddim_steps)


def _read(path) -> tuple[Path, object]:
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputFileError(
            f"no checkpoint at {p}; the official ones (publaynet_best.pt, rico25_best.pt) are in model.tar.gz of "
            "the Hugging Face dataset puar-playground/LACE"
        )
    return p, safe_torch_load(p, what="LACE checkpoint")


def load_any_checkpoint(
    path: str | os.PathLike, categories: tuple[str, ...] | None = None, heads: int = 16, ddim_steps: int = 100
):
    """This package's model folder or checkpoint file (:func:`~iclr24.lace.load_checkpoint`) or an official one
    (:func:`load_official_checkpoint`), told apart by its content; ``categories``: the set the caller expects."""
    from .diffusion import load_checkpoint

    if Path(path).is_dir():  # a model folder (save_pretrained)
        return load_checkpoint(path, categories=categories)
    p, obj = _read(path)
    if isinstance(obj, dict) and "config" in obj and "state_dict" in obj:
        return load_checkpoint(p, categories=categories)
    return _from_object(p, obj, categories, heads, ddim_steps)


def _from_object(p: Path, obj, categories, heads: int, ddim_steps: int):
    from .model import LaceConfig
    from .real_data import CATEGORIES
    from .real_data import MAX_ELEMENTS

    if isinstance(obj, dict) and isinstance(obj.get("state_dict"), dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise InputError(f"{p} is not an official LACE checkpoint (expected a state dict of tensors)")
    sd = {k.removeprefix("module."): v for k, v in obj.items()}
    s = _sizes(sd)
    C = s["seq_dim"] - 5
    if categories is None:
        match = [n for n, c in CATEGORIES.items() if len(c) == C]
        if not match:
            raise InputError(f"{p} is for {C} categories (seq_dim {s['seq_dim']}); pass its category names")
        categories = CATEGORIES[match[0]]
    categories = tuple(categories)
    if len(categories) != C:
        raise InputError(
            f"{p} is a checkpoint for {C} categories (seq_dim {s['seq_dim']}), expected {len(categories)} "
            f"({', '.join(categories[:6])}{', ...' if len(categories) > 6 else ''})"
        )
    if s["dim"] % heads:
        raise InputError(f"{p} has width {s['dim']}, not divisible by heads={heads}")
    cfg = LaceConfig(
        categories=categories,
        max_elements=MAX_ELEMENTS,
        dim=s["dim"],
        heads=heads,
        layers=s["layers"],
        ff=s["ff"],
        num_timesteps=s["num_timesteps"],
        ddim_steps=ddim_steps,
        extra={"source": "official checkpoint"},
    )
    model = LayoutDenoiser(
        cfg.seq_dim, OFFICIAL_LENGTH, cfg.dim, cfg.heads, cfg.layers, cfg.ff, cfg.num_timesteps
    )
    model.load_state_dict(map_official_state_dict(sd, model), strict=True)
    model.eval()
    return model, cfg
