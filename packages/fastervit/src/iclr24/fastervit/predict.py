"""Classify one image with a local checkpoint (ours from ``fastervit train``, or an official one)."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from .data import eval_transform
from .registry import VARIANTS, _check_name, _unwrap, read_checkpoint

__all__ = ["predict"]


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
    import timm
    from PIL import Image, UnidentifiedImageError

    path = Path(image)
    if not path.is_file():
        raise FileNotFoundError(f"image {path} does not exist")
    raw = read_checkpoint(checkpoint)
    meta = raw if isinstance(raw, dict) else {}
    name = model_name or meta.get("model")
    if not isinstance(name, str):
        raise ValueError(
            f"{checkpoint} does not record its variant: pass --model (one of {', '.join(VARIANTS)})"
        )
    _check_name(name)
    sd = _unwrap(raw, str(checkpoint))
    if "head.weight" not in sd:
        raise ValueError(f"{checkpoint} has no classifier (head.weight): it cannot classify images")
    num_classes = sd["head.weight"].shape[0]
    size = img_size or meta.get("img_size") or 224
    model = timm.create_model(name, num_classes=num_classes, **dict(meta.get("model_kwargs", {})))
    model.load_state_dict(sd, strict=True)
    model.eval()
    crop = model.pretrained_cfg.get("crop_pct", 0.875)
    try:
        img = Image.open(path).convert("RGB")
    except (UnidentifiedImageError, OSError) as e:
        raise ValueError(f"{path} is not a readable image: {e}") from None
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
