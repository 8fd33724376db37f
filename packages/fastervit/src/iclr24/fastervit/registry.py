"""The official FasterViT variants, registered with timm (``timm.create_model('faster_vit_0_224')`` after
``import iclr24.fastervit``), and strict local checkpoint loading (``torch.load(weights_only=True)`` only)."""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from timm.models import build_model_with_cfg
from timm.models import generate_default_cfgs
from timm.models import register_model

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from .model import FasterViT

# Official checkpoints (timm's training script) pickle their argparse.Namespace of training args. Allow-listing
# that one plain class keeps torch.load(weights_only=True) working for them, also through timm's checkpoint_path=.
torch.serialization.add_safe_globals([argparse.Namespace])

__all__ = [
    "VARIANTS",
    "OFFICIAL_PARAMS",
    "create_model",
    "list_variants",
    "load_checkpoint",
    "read_state_dict",
    "check_model_kwargs",
    "model_keywords",
    "feature_map_size",
]

_B = dict(window_size=(7, 7, 7, 7), ct_size=2, mlp_ratio=4, hat=(False, False, True, False))
_SMALL_HEADS = (2, 4, 8, 16)
_BIG_HEADS = (4, 8, 16, 32)
_LS = dict(layer_scale=1e-5, do_propagation=True)

# name -> FasterViT keyword arguments, as in the official release (fastervit 1.0.0).
VARIANTS: dict[str, dict[str, Any]] = {
    "faster_vit_0_224": dict(
        _B, depths=(2, 3, 6, 5), num_heads=_SMALL_HEADS, dim=64, in_dim=64, drop_path_rate=0.2
    ),
    "faster_vit_1_224": dict(
        _B, depths=(1, 3, 8, 5), num_heads=_SMALL_HEADS, dim=80, in_dim=32, drop_path_rate=0.2
    ),
    "faster_vit_2_224": dict(
        _B, depths=(3, 3, 8, 5), num_heads=_SMALL_HEADS, dim=96, in_dim=64, drop_path_rate=0.2
    ),
    "faster_vit_3_224": dict(
        **_B, **_LS, depths=(3, 3, 12, 5), num_heads=_SMALL_HEADS, dim=128, in_dim=64, drop_path_rate=0.3
    ),
    "faster_vit_4_224": dict(
        **_B, **_LS, depths=(3, 3, 12, 5), num_heads=_BIG_HEADS, dim=196, in_dim=64, drop_path_rate=0.3
    ),
    "faster_vit_5_224": dict(
        **_B, **_LS, depths=(3, 3, 12, 5), num_heads=_BIG_HEADS, dim=320, in_dim=64, drop_path_rate=0.3
    ),
    "faster_vit_6_224": dict(
        **_B, **_LS, depths=(3, 3, 16, 8), num_heads=_BIG_HEADS, dim=320, in_dim=64, drop_path_rate=0.5
    ),
}
for _res, _win in ((224, (7, 7, 14, 7)), (384, (7, 7, 24, 12)), (512, (7, 7, 32, 16)), (768, (7, 7, 48, 24))):
    VARIANTS[f"faster_vit_4_21k_{_res}"] = dict(
        _B,
        **_LS,
        depths=(3, 3, 12, 5),
        num_heads=_BIG_HEADS,
        dim=196,
        in_dim=64,
        drop_path_rate=0.42,
        window_size=_win,
        hat=(False, False, False, False),
        resolution=_res,
    )
for _name in list(VARIANTS):  # the official "any_res" models: rectangular resolution, stage maps padded
    _any_name = _name.replace("_224", "_any_res") if "21k" not in _name else _name + "_any_res"
    VARIANTS[_any_name] = dict(
        VARIANTS[_name],
        any_resolution=True,
        resolution=(541, 960) if _name == "faster_vit_2_224" else (576, 960),
    )

# Parameter counts of the official models (fastervit 1.0.0 built on the meta device, see tests/fixtures).
OFFICIAL_PARAMS = {
    "faster_vit_0_224": 31_404_840,
    "faster_vit_1_224": 53_366_696,
    "faster_vit_2_224": 75_923_816,
    "faster_vit_3_224": 159_547_944,
    "faster_vit_4_224": 365_555_712,
    "faster_vit_5_224": 957_520_552,
    "faster_vit_6_224": 1_360_328_872,
    "faster_vit_4_21k_224": 271_944_224,
    "faster_vit_4_21k_384": 271_944_224,
    "faster_vit_4_21k_512": 271_944_224,
    "faster_vit_4_21k_768": 271_944_224,
}

_CROP = {"faster_vit_0_224": 0.875, "faster_vit_4_21k_224": 0.95, "faster_vit_4_21k_768": 0.93}


def feature_map_size(height: int, width: int) -> tuple[int, int]:
    """(H', W') of the last stage map for an H x W input: five stride-2 3x3 convolutions with padding 1 (two in the
    stem, three downsamplers), each mapping n -> ceil(n / 2)."""
    for _ in range(5):
        height, width = (height + 1) // 2, (width + 1) // 2
    return height, width


def _cfg(name: str) -> dict[str, Any]:
    base = name.replace("_any_res", "")
    base = base if base in VARIANTS else base + "_224"
    res = VARIANTS[name].get("resolution", 224)
    hw = tuple(res) if isinstance(res, tuple) else (res, res)
    return dict(
        url="",
        num_classes=1000,
        input_size=(3, *hw),
        pool_size=feature_map_size(*hw),  # the map forward_features returns at input_size
        fixed_input_size=False,
        crop_pct=_CROP.get(base, 1.0),
        interpolation="bicubic",
        mean=(0.485, 0.456, 0.406),
        std=(0.229, 0.224, 0.225),
        first_conv="patch_embed.conv_down.0",
        classifier="head",
        license="other",
        crop_mode="squash" if "21k" in name else "center",
        origin_url="https://github.com/NVlabs/FasterViT",
        paper_ids="arXiv:2306.06189",
    )


default_cfgs = generate_default_cfgs({name: _cfg(name) for name in VARIANTS})


def list_variants() -> list[str]:
    """Every registered variant name."""
    return list(VARIANTS)


def _check_name(name: str) -> None:
    if name not in VARIANTS:
        raise InputError(f"unknown FasterViT variant {name!r}; known: {', '.join(VARIANTS)}")


# keyword arguments that timm's create_model / build_model_with_cfg consume before the model sees them
_TIMM_KWARGS = frozenset(
    {
        "pretrained_cfg",
        "pretrained_cfg_overlay",
        "model_cfg",
        "cache_dir",
        "features_only",
        "feature_cls",
        "feature_cfg",
        "out_indices",
        "flatten_sequential",
    }
)


def model_keywords() -> list[str]:
    """The keyword arguments a variant accepts: FasterViT's constructor arguments (and timm's ``img_size``)."""
    return [p for p in inspect.signature(FasterViT.__init__).parameters if p != "self"] + ["img_size"]


def check_model_kwargs(kwargs: Mapping[str, Any], name: str = "FasterViT") -> None:
    """ValueError naming every keyword that no variant takes (instead of a bare TypeError from the constructor)."""
    known = set(model_keywords())
    unknown = sorted(k for k in kwargs if k not in known and k not in _TIMM_KWARGS)
    if unknown:
        raise InputError(
            f"{name}: unknown model keyword(s) {', '.join(map(repr, unknown))}; the known ones are "
            f"{', '.join(model_keywords())}"
        )


def _check_timm_checkpoint_path() -> None:
    """timm.create_model(..., checkpoint_path=P) builds the model first and then raises a FileNotFoundError without
    a message when P is missing: check P before building, with a message that names it."""
    frame = sys._getframe(2)  # _build <- the registered entry point <- timm's create_model
    if frame.f_code.co_name != "create_model" or "timm" not in frame.f_code.co_filename:
        return
    path = frame.f_locals.get("checkpoint_path")
    if path and Path(path).is_dir():
        raise InputFileError(
            f"checkpoint_path {str(path)!r} is a folder; timm reads weight files: pass "
            f"checkpoint_path='{Path(path) / 'model.safetensors'}' for a model folder (or load it whole with "
            "iclr24.fastervit.FasterViT.from_pretrained)",
            path,
        )
    if path and not Path(path).is_file():
        raise InputFileError(
            f"checkpoint_path {str(path)!r} does not exist (expected a .pth/.pth.tar/.pt file; official "
            "weights: https://huggingface.co/ahatamiz/FasterViT, downloaded by you)"
        )


def _check_feature_cls(name: str, kwargs: Mapping[str, Any]) -> None:
    """features_only models are timm's FeatureGetterNet over forward_intermediates (the stage maps before each
    downsampler). The hook/fx/list wrappers would take the output of a ``levels.i`` module, which already went
    through that stage's downsampler (twice the channels, half the size): refuse them instead."""
    cls = kwargs.get("feature_cls")
    if not kwargs.get("features_only") or cls is None:
        return
    from timm.models._features import FeatureGetterNet

    ok = (
        cls.lower() == "getter"
        if isinstance(cls, str)
        else isinstance(cls, type) and issubclass(cls, FeatureGetterNet)
    )
    if not ok:
        raise InputError(
            f"{name}: features_only supports feature_cls='getter' (the default: stage maps from "
            f"forward_intermediates), got {cls!r}; each levels.i module ends with its downsampler, so a hook/fx "
            "wrapper would return the wrong maps"
        )


def _build(name: str, pretrained: bool = False, **kwargs: Any) -> FasterViT:
    _check_name(name)
    check_model_kwargs(kwargs, name)
    if pretrained and not (kwargs.get("pretrained_cfg_overlay") or {}).get("file"):
        raise InputError(
            f"{name}: weights are never downloaded here. Pass checkpoint_path='/path/to/{name}.pth.tar' to "
            "timm.create_model (or create_model(..., checkpoint_path=...)), or pretrained_cfg_overlay=dict(file=...)"
        )
    _check_feature_cls(name, kwargs)
    args = dict(VARIANTS[name])
    if "img_size" in kwargs:  # timm's usual name for the input size
        kwargs["resolution"] = kwargs.pop("img_size")
    args.update(kwargs)
    if args.get("pretrained_cfg") is None:  # ours, even if another package re-registered the name
        args["pretrained_cfg"] = default_cfgs[name].default
    return build_model_with_cfg(
        FasterViT,
        name,
        pretrained,
        feature_cfg=dict(feature_cls="getter", out_indices=(0, 1, 2, 3)),
        pretrained_strict=True,
        **args,
    )


def _register(name: str) -> None:
    def entry(pretrained: bool = False, **kwargs: Any) -> FasterViT:
        _check_timm_checkpoint_path()
        return _build(name, pretrained=pretrained, **kwargs)

    entry.__name__ = name
    entry.__qualname__ = name
    entry.__doc__ = f"FasterViT variant {name} ({VARIANTS[name]})."
    entry.__module__ = __name__
    globals()[name] = register_model(entry)


for _n in VARIANTS:
    _register(_n)


def reregister() -> None:
    """Register our variants with timm again (e.g. after importing the authors' ``fastervit`` package, which
    registers the same names)."""
    for name in VARIANTS:
        _register(name)


def _unwrap(obj: Any, path: str) -> dict[str, torch.Tensor]:
    if not isinstance(obj, Mapping):
        raise InputFileError(f"{path}: expected a state dict or a dict holding one, got {type(obj).__name__}")
    for key in ("state_dict_ema", "state_dict", "model", "model_ema"):
        if key in obj and isinstance(obj[key], Mapping):
            obj = obj[key]
            break
    sd = dict(obj)
    if not sd or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise InputFileError(f"{path}: found no tensors under 'state_dict'/'model' or at the top level")
    for prefix in ("module.", "_orig_mod."):
        if all(k.startswith(prefix) for k in sd):
            sd = {k[len(prefix) :]: v for k, v in sd.items()}
    if any(k.startswith("encoder.") for k in sd) and not any(k.startswith("patch_embed.") for k in sd):
        sd = {k[len("encoder.") :]: v for k, v in sd.items() if k.startswith("encoder.")}
    return sd


def read_checkpoint(path: str | os.PathLike) -> Any:
    """The raw object of a checkpoint file, read with ``torch.load(weights_only=True)`` (``argparse.Namespace``
    training args of official/timm checkpoints are allowed, nothing else); a ``.safetensors`` file is read with
    safetensors (its tensors)."""
    from iclr24.paperkit.checkpoint import safe_torch_load

    p = Path(path)
    if not p.exists():
        raise InputFileError(
            f"checkpoint {p} does not exist (expected a model folder from save_pretrained / `fastervit train`, or "
            "a .pth/.pth.tar/.pt/.safetensors file; official weights: https://huggingface.co/ahatamiz/FasterViT, "
            "downloaded by you)",
            p,
        )
    if p.is_dir():
        raise InputFileError(
            f"{p} is a folder: read a model folder with read_state_dict or FasterViT.from_pretrained", p
        )
    if p.suffix == ".safetensors":
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            return load_file(str(p))
        except (SafetensorError, OSError, ValueError) as e:
            raise InputFileError(
                f"{p} is not a readable safetensors file: {' '.join(str(e).split())[:200]}", p
            ) from None
    return safe_torch_load(p, what="checkpoint", safe_globals=[argparse.Namespace])


def read_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """A FasterViT state dict from a model folder (``save_pretrained`` / ``fastervit train``'s ``OUT/model``), an
    official ``.pth.tar``, a timm/our training checkpoint, a ``.safetensors`` file or a bare state dict (EMA
    weights preferred in a checkpoint that has them; ``module.`` prefixes stripped)."""
    if Path(path).is_dir():
        from iclr24.paperkit.pretrained import read_model_folder

        return dict(read_model_folder(path)[1])
    return _unwrap(read_checkpoint(path), str(path))


def load_checkpoint(model: torch.nn.Module, path: str | os.PathLike, strict: bool = True) -> torch.nn.Module:
    """Load a local checkpoint into ``model`` (strict by default: a checkpoint of another variant raises ValueError
    naming the first mismatching key). Returns the model."""
    sd = read_state_dict(path)
    model.load_state_dict(sd, strict=strict)
    return model


def create_model(
    name: str,
    *,
    num_classes: int = 1000,
    checkpoint_path: str | os.PathLike | None = None,
    strict: bool = True,
    **kwargs: Any,
) -> torch.nn.Module:
    """Build a registered variant (same as ``timm.create_model(name, ...)``) and optionally load a local checkpoint
    through :func:`load_checkpoint` (which also reads official ``.pth.tar`` files holding pickled training args)."""
    import timm

    _check_name(name)
    model = timm.create_model(name, pretrained=False, num_classes=num_classes, **kwargs)
    if checkpoint_path is not None:
        load_checkpoint(model, checkpoint_path, strict=strict)
    return model


def load_for_finetuning(model: torch.nn.Module, path: str | os.PathLike) -> list[str]:
    """Initialise ``model`` from a checkpoint of the same variant whose classifier may differ (another class
    count): every other key must match (ValueError naming the first that does not). Returns the skipped keys."""
    sd = read_state_dict(path)
    own = model.state_dict()
    skipped = [k for k in sd if k.startswith("head.") and k in own and sd[k].shape != own[k].shape]
    for k in skipped:
        sd[k] = own[k]
    model.load_state_dict(sd, strict=True)
    return skipped
