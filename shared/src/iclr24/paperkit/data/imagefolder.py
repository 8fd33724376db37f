"""A class-per-subfolder image dataset (``root/<class>/<image>``, the layout of Office-31, Office-Home,
VisDA and torchvision's ImageFolder) loaded into numpy arrays."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..errors import InputFileError
from ..errors import InputNotAFolderError

__all__ = ["image_folder", "IMAGE_EXTENSIONS"]

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm")


def _size(size: int | tuple[int, int] | None) -> tuple[int, int] | None:
    if size is None:
        return None
    try:
        hw = (size, size) if isinstance(size, int) and not isinstance(size, bool) else tuple(size)
    except TypeError:
        hw = ()
    if len(hw) != 2 or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in hw):
        raise InputError(
            f"size must be a positive int or a (height, width) pair of positive ints, got {size!r}"
        )
    return hw  # type: ignore[return-value]


def _visible(p: Path) -> bool:
    return not p.name.startswith(".")


def image_folder(
    path: str | os.PathLike, size: int | tuple[int, int] | None = None
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Load every image under ``path/<class>/`` (sorted by class name, then file name).

    Returns ``(images, labels, class_names)``: ``images`` float32 ``(N, H, W, 3)`` RGB in ``[0, 1]``, ``labels``
    int64 ``(N,)`` indexing ``class_names`` (the sorted subfolder names). ``size`` (an int or ``(H, W)``) resizes
    every image bilinearly; without it all images must already share one size. Needs Pillow (``[data]`` extra).
    """
    try:
        from PIL import Image
        from PIL import UnidentifiedImageError
    except ImportError as e:  # pragma: no cover - Pillow is in the [data] extra
        raise ImportError("image_folder needs Pillow: install iclr24-paperkit[data]") from e

    root = Path(path).expanduser()
    hw = _size(size)
    if not root.exists():
        raise InputFileError(f"image folder not found: {root}")
    if not root.is_dir():
        raise InputNotAFolderError(f"{root} is a file; expected a folder with one subfolder per class")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and _visible(p))
    if not classes:
        raise InputError(f"{root} has no class subfolders; expected {root}/<class name>/<image files>")
    files: list[tuple[Path, int]] = []
    empty = []
    for label, name in enumerate(classes):
        imgs = sorted(
            p
            for p in (root / name).iterdir()
            if p.is_file() and _visible(p) and p.suffix.lower() in IMAGE_EXTENSIONS
        )
        if not imgs:
            empty.append(name)
        files += [(p, label) for p in imgs]
    if empty:
        raise InputError(
            f"{root}: class folder(s) without images ({', '.join(IMAGE_EXTENSIONS)}): {', '.join(empty)}"
        )

    images: np.ndarray | None = None
    for i, (p, _) in enumerate(files):
        try:
            with Image.open(p) as im:
                im = im.convert("RGB")
                if hw is not None and im.size != (hw[1], hw[0]):
                    im = im.resize((hw[1], hw[0]), Image.Resampling.BILINEAR)
                arr = np.asarray(im, dtype=np.uint8)
        except (UnidentifiedImageError, OSError, ValueError) as e:  # not an image, truncated, unreadable
            raise InputError(f"cannot read image {p}: {e}") from None
        if images is None:  # allocate once: N x H x W x 3 of the first image's size
            images = np.empty((len(files), *arr.shape), dtype=np.float32)
        elif arr.shape != images.shape[1:]:
            raise InputError(
                f"{p} is {arr.shape[1]}x{arr.shape[0]} but {files[0][0]} is {images.shape[2]}x{images.shape[1]}; "
                "pass size= to resize every image to one size"
            )
        np.divide(arr, 255.0, out=images[i], casting="unsafe")  # exact: 255 / 255 == 1.0
    labels = np.fromiter((label for _, label in files), dtype=np.int64, count=len(files))
    assert images is not None  # files is non-empty here
    return images, labels, classes
