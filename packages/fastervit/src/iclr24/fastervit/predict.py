"""Classify one image with a local checkpoint: a model folder or checkpoint.pth from ``fastervit train``, or an
official checkpoint."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from .data import eval_transform
from .data import load_rgb
from .registry import VARIANTS
from .registry import _check_name
from .registry import _unwrap
from .registry import read_checkpoint

__all__ = ["predict"]


def load_classifier(checkpoint, model_name: str | None, purpose: str):
    """``(model, meta, name, num_classes)``: the FasterViT classifier a checkpoint holds, built with timm and
    loaded strictly. The variant comes from ``model_name`` or the checkpoint's own record; ``purpose`` words the
    error for a checkpoint without a classifier head."""
    import timm

    if Path(checkpoint).is_dir():
        return _load_folder_classifier(checkpoint, model_name, purpose)
    raw = read_checkpoint(checkpoint)
    meta = raw if isinstance(raw, dict) else {}
    name = model_name or meta.get("model")
    if not isinstance(name, str):
        raise InputError(
            f"{checkpoint} does not record its variant: pass --model (one of {', '.join(VARIANTS)})"
        )
    _check_name(name)
    sd = _unwrap(raw, str(checkpoint))
    if "head.weight" not in sd:
        raise InputError(f"{checkpoint} has no classifier (head.weight): it cannot {purpose}")
    num_classes = sd["head.weight"].shape[0]
    model = timm.create_model(name, num_classes=num_classes, **dict(meta.get("model_kwargs", {})))
    model.load_state_dict(sd, strict=True)
    return model, meta, name, num_classes


def _load_folder_classifier(folder, model_name: str | None, purpose: str):
    """``load_classifier`` for a model folder: the config builds the model, ``provenance.json`` gives the variant,
    the class names and the training image size (as ``fastervit train`` records them)."""
    import json

    from iclr24.paperkit.pretrained import PROVENANCE_FILE

    from .model import FasterViT

    model = FasterViT.from_pretrained(folder)
    prov = json.loads((Path(folder) / PROVENANCE_FILE).read_text(encoding="utf-8"))
    name = (getattr(model, "pretrained_cfg", None) or {}).get("architecture")
    if model_name is not None:
        _check_name(model_name)
        if name is not None and model_name != name:
            raise InputError(f"{folder} holds a {name}, not a {model_name}: drop --model for a model folder")
    if not model.num_classes:
        raise InputError(f"{folder} has no classifier (num_classes 0): it cannot {purpose}")
    classes = prov.get("classes")
    meta = {
        "model": name or model_name,
        "classes": classes if isinstance(classes, list) and len(classes) == model.num_classes else None,
        "img_size": prov.get("img_size"),
    }
    return model, meta, meta["model"], model.num_classes


def predict(
    image: str | os.PathLike,
    checkpoint: str | os.PathLike,
    model_name: str | None = None,
    img_size: int | None = None,
    topk: int = 5,
) -> list[dict]:
    """Top-k ``[{"index", "label", "probability"}]`` for ``image``. The variant, class names and input size are
    read from checkpoints written by ``fastervit train``; for official checkpoints pass ``model_name`` (labels are
    then ImageNet-1k's)."""
    path = Path(image)
    if not path.is_file():
        raise InputFileError(f"image {path} does not exist", path)
    img = load_rgb(path)  # a corrupt image is refused before the checkpoint is read
    model, meta, _, num_classes = load_classifier(checkpoint, model_name, "classify images")
    size = img_size or meta.get("img_size") or 224
    model.eval()
    crop = (getattr(model, "pretrained_cfg", None) or {}).get("crop_pct", 0.875)
    x = eval_transform(int(size), crop)(img).unsqueeze(0)
    with torch.inference_mode():
        prob = model(x).softmax(-1)[0]
    k = min(topk, num_classes)
    values, idx = prob.topk(k)
    classes = meta.get("classes")
    if classes is None and num_classes == 1000:
        from timm.data import ImageNetInfo

        info = ImageNetInfo()
        classes = [info.index_to_description(i) for i in range(1000)]
    return [
        {"index": int(i), "label": classes[int(i)] if classes else str(int(i)), "probability": float(v)}
        for v, i in zip(values, idx)
    ]
