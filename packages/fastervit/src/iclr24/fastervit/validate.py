"""ImageNet-style validation of a local checkpoint, as timm's and the official ``validate.py`` do it: timm's eval
transform with the variant's ``crop_pct`` (0.875 for FasterViT-0, 1.0 for the others) and bicubic interpolation,
top-1 and top-5 over an ImageFolder tree (``VAL/<class>/*.JPEG``)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import torch

from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from .data import load_rgb
from .data import loader_errors
from .predict import load_classifier

__all__ = ["validate", "eval_data_config"]

_SYNSET = re.compile(r"^n\d{8}$")


def eval_data_config(
    model: torch.nn.Module, img_size: int | None = None, crop_pct: float | None = None
) -> dict:
    """timm's ``resolve_data_config`` for ``model`` (its pretrained_cfg: input size, crop_pct, bicubic, ImageNet
    mean/std), with optional overrides of the input side and crop fraction."""
    from timm.data import resolve_data_config

    args: dict = {}
    if img_size is not None:
        args["input_size"] = (3, int(img_size), int(img_size))
    if crop_pct is not None:
        if not 0 < crop_pct <= 1:
            raise InputError(f"crop_pct must be in (0, 1], got {crop_pct}")
        args["crop_pct"] = float(crop_pct)
    return resolve_data_config(args, model=model)


def _class_map(
    folder_classes: list[str], ckpt_classes: list[str] | None, num_classes: int, data: Path
) -> list[int]:
    """Index of each folder class in the model's output: by name for checkpoints that record their classes, by
    WordNet synset for 1000-class (ImageNet) heads, else in sorted order when the counts agree."""
    if ckpt_classes is not None:
        missing = [c for c in folder_classes if c not in ckpt_classes]
        if missing:
            raise InputError(
                f"{data}: class folder(s) {missing[:3]} are not among the checkpoint's classes {ckpt_classes[:5]}..."
            )
        return [ckpt_classes.index(c) for c in folder_classes]
    if num_classes == 1000 and all(_SYNSET.match(c) for c in folder_classes):
        from timm.data import ImageNetInfo

        info = ImageNetInfo()
        index = {info.index_to_label_name(i): i for i in range(1000)}
        unknown = [c for c in folder_classes if c not in index]
        if unknown:
            raise InputError(f"{data}: {unknown[:3]} are not ImageNet-1k synsets")
        return [index[c] for c in folder_classes]
    if len(folder_classes) != num_classes:
        raise InputError(
            f"{data} has {len(folder_classes)} class folders but the checkpoint's head has {num_classes} outputs "
            "and records no class names; use ImageNet synset folder names (n01440764, ...) or a checkpoint "
            "from `fastervit train`"
        )
    return list(range(num_classes))


@torch.no_grad()
def validate(
    checkpoint: str | os.PathLike,
    data: str | os.PathLike,
    model_name: str | None = None,
    batch_size: int = 64,
    img_size: int | None = None,
    crop_pct: float | None = None,
    num_workers: int = 0,
    device: str = "cpu",
    show_progress: bool = True,
) -> dict:
    """Top-1/top-5 of ``checkpoint`` on the ImageFolder ``data``. The variant and class names come from
    checkpoints written by ``fastervit train``; pass ``model_name`` for official ones (1000 ImageNet classes)."""
    from timm.data import create_transform
    from torchvision.datasets import ImageFolder

    data = Path(data)
    if not data.is_dir():
        raise InputFileError(
            f"validation folder {data} does not exist; expected {data}/<class>/*.JPEG (ImageFolder layout; for "
            "ImageNet, the 50,000 val images sorted into the 1000 synset folders)"
        )
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    model, meta, name, num_classes = load_classifier(checkpoint, model_name, "be validated")
    size = img_size or meta.get("img_size")
    model.eval().to(device)
    cfg = eval_data_config(model, img_size=size, crop_pct=crop_pct)
    transform = create_transform(**cfg, is_training=False)
    try:
        ds = ImageFolder(str(data), transform=transform, loader=load_rgb)
    except (FileNotFoundError, RuntimeError) as e:
        raise InputFileError(f"{data}: not a usable ImageFolder ({e})") from None
    mapping = _class_map(list(ds.classes), meta.get("classes"), num_classes, data)
    ds.target_transform = mapping.__getitem__
    loader = torch.utils.data.DataLoader(ds, batch_size=batch_size, num_workers=num_workers)
    t0 = time.perf_counter()
    correct1 = correct5 = n = 0
    with loader_errors():
        for x, y in progress(loader, desc=f"validate {name}", disable=not show_progress):
            logits = model(x.to(device))
            top = logits.topk(min(5, num_classes), dim=1).indices.cpu()
            correct1 += int((top[:, 0] == y).sum())
            correct5 += int((top == y[:, None]).any(dim=1).sum())
            n += len(y)
    return {
        "model": name,
        "checkpoint": str(checkpoint),
        "data": str(data),
        "n": n,
        "top1": correct1 / max(n, 1),
        "top5": correct5 / max(n, 1),
        "seconds": time.perf_counter() - t0,
        "data_config": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
    }
