"""Built-in offline data, and loaders for real image folders from a path the user gives.

- :func:`quadrant_copy_batch`: the synthetic "copy across windows" task (a mechanism check of Sec. 3.3): the label is the
  colour of a square in the top-left quadrant, read out from the bottom-right window only.
- :func:`digits_dataset`: scikit-learn's 8x8 digits, upsampled to RGB images (a real, tiny, offline dataset).
- :func:`image_folder_datasets`: a torchvision ``ImageFolder`` (``DIR/train/<class>/*.jpg`` + ``DIR/val/...``, or
  one ``DIR/<class>/*.jpg`` split 90/10), with ImageNet-style transforms.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset
from torch.utils.data import Subset
from torch.utils.data import TensorDataset

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "quadrant_copy_batch",
    "digits_dataset",
    "image_folder_datasets",
    "eval_transform",
    "load_rgb",
    "BUILTIN_DATASETS",
]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
BUILTIN_DATASETS = ("digits",)

_COLOURS = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]])


def quadrant_copy_batch(
    n: int, generator: torch.Generator, size: int = 32, square: int = 4, noise: float = 0.1
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` images (n, 3, size, size) and labels (n,) of the cross-window copy task.

    Background N(0, noise^2); a ``square`` x ``square`` patch of colour a in {red, green} (the label) at a random
    ``square``-aligned spot of the top-left quadrant; a distractor patch of a random colour (red, green, blue or
    yellow) in the bottom-right quadrant. A model that reads out only the bottom-right window must move information
    across windows to beat chance (50%)."""
    if n < 1 or size % (2 * square):
        raise InputError(
            f"need n >= 1 and size divisible by 2*square, got n={n}, size={size}, square={square}"
        )
    x = noise * torch.randn(n, 3, size, size, generator=generator)
    y = torch.randint(0, 2, (n,), generator=generator)
    cells = size // 2 // square
    pos = torch.randint(0, cells, (n, 4), generator=generator) * square
    distract = torch.randint(0, len(_COLOURS), (n,), generator=generator)
    half = size // 2
    # paint both squares at once (the two quadrants never overlap): a per-sample pixel mask of each square, then
    # its colour where the mask is set; the same images as painting sample by sample, ~20x faster
    idx = torch.arange(size)

    def square_mask(r: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        rows = (idx >= r[:, None]) & (idx < r[:, None] + square)
        cols = (idx >= c[:, None]) & (idx < c[:, None] + square)
        return (rows[:, :, None] & cols[:, None, :])[:, None]  # (n, 1, size, size)

    x = torch.where(square_mask(pos[:, 0], pos[:, 1]), _COLOURS[y][:, :, None, None], x)
    x = torch.where(square_mask(half + pos[:, 2], half + pos[:, 3]), _COLOURS[distract][:, :, None, None], x)
    return x, y


def digits_dataset(size: int = 64, normalize: bool = True) -> tuple[TensorDataset, TensorDataset, list[str]]:
    """scikit-learn's handwritten digits (1797 images, 10 classes; BSD-3), as RGB ``size`` x ``size`` tensors,
    split 80/20 stratified with seed 0. Returns (train, test, class_names)."""
    from iclr24.paperkit.data.samples import digits_tensors
    from iclr24.paperkit.data.samples import train_test_split_tensors

    if size < 8 or size % 32:
        raise InputError(f"size must be a multiple of 32 (the FasterViT stride), got {size}")
    x, y = digits_tensors()
    x = (
        F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
        .clamp(0, 1)
        .repeat(1, 3, 1, 1)
    )
    if normalize:
        x = (x - torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)) / torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    xtr, ytr, xte, yte = train_test_split_tensors(x, y, test_fraction=0.2, seed=0)
    return TensorDataset(xtr, ytr), TensorDataset(xte, yte), [str(i) for i in range(10)]


def load_rgb(path: str | os.PathLike):
    """An image file as an RGB PIL image (the ImageFolder loader of every reader here): a file PIL cannot read
    (corrupt, truncated, not an image) is one :class:`InputFileError` naming it."""
    from PIL import Image

    try:
        with open(path, "rb") as f, Image.open(f) as img:
            return img.convert("RGB")
    except OSError as e:
        if isinstance(e, FileNotFoundError):
            raise InputFileError(f"image {path} does not exist", path) from None
        raise InputFileError(
            f"{path} is not a readable image (corrupt, truncated or not an image)", path
        ) from None
    except (SyntaxError, ValueError, Image.DecompressionBombError) as e:
        raise InputFileError(f"{path} is not a readable image ({type(e).__name__}: {e})", path) from None


@contextlib.contextmanager
def loader_errors() -> Iterator[None]:
    """Around a loop over a DataLoader: an :class:`InputFileError` from a worker process (which the DataLoader
    re-raises with the worker's whole traceback as its message) comes out as the one line the worker raised."""
    try:
        yield
    except InputFileError as e:
        text = str(e)
        if "Traceback" not in text:
            raise
        last = [ln for ln in text.splitlines() if ln.strip()][-1]
        raise InputFileError(last.split("InputFileError: ", 1)[-1], e.filename) from None


def eval_transform(img_size: int, crop_pct: float = 0.875):
    """Resize the short side to img_size / crop_pct (bicubic), centre-crop img_size, normalise (timm eval)."""
    from torchvision import transforms as T

    return T.Compose(
        [
            T.Resize(int(round(img_size / crop_pct)), interpolation=T.InterpolationMode.BICUBIC),
            T.CenterCrop(img_size),
            T.ToTensor(),
            T.Normalize(IMAGENET_MEAN, IMAGENET_STD),
        ]
    )


def _train_transform(img_size: int, rand_augment: str | None = None):
    """Random resized crop (bicubic) and flip; with ``rand_augment`` (e.g. the paper's "rand-m9-mstd0.5-inc1"),
    timm's RandAugment on the PIL image, configured as timm's training script does."""
    from torchvision import transforms as T

    steps = [
        T.RandomResizedCrop(img_size, scale=(0.35, 1.0), interpolation=T.InterpolationMode.BICUBIC),
        T.RandomHorizontalFlip(),
    ]
    if rand_augment:
        from timm.data.auto_augment import rand_augment_transform

        if not rand_augment.startswith("rand"):
            raise InputError(
                f"rand_augment must be a timm RandAugment string like 'rand-m9-mstd0.5', got {rand_augment!r}"
            )
        hparams = dict(
            translate_const=int(img_size * 0.45), img_mean=tuple(round(255 * m) for m in IMAGENET_MEAN)
        )
        try:
            steps.append(rand_augment_transform(rand_augment, hparams))
        except (AssertionError, ValueError, KeyError) as e:
            raise InputError(
                f"rand_augment {rand_augment!r} is not a valid timm RandAugment string ({e})"
            ) from None
    return T.Compose([*steps, T.ToTensor(), T.Normalize(IMAGENET_MEAN, IMAGENET_STD)])


def image_folder_datasets(
    root: str | os.PathLike,
    img_size: int = 224,
    crop_pct: float = 0.875,
    val_fraction: float = 0.1,
    seed: int = 0,
    rand_augment: str | None = None,
) -> tuple[Dataset, Dataset, list[str]]:
    """(train, val, class_names) from ``root/train`` + ``root/val`` (or ``root/validation``), or from a single
    ``root/<class>/`` tree split ``val_fraction`` at random (seeded). Errors name what is missing."""
    from torchvision.datasets import ImageFolder

    root = Path(root)
    if not root.is_dir():
        raise InputFileError(
            f"image folder {root} does not exist; expected {root}/train/<class>/*.jpg and "
            f"{root}/val/<class>/*.jpg (torchvision ImageFolder layout), or {root}/<class>/*.jpg"
        )
    if img_size % 32:
        raise InputError(f"img_size must be a multiple of 32 (the FasterViT stride), got {img_size}")
    val_dir = next((root / d for d in ("val", "validation") if (root / d).is_dir()), None)

    def folder(path: Path, tf) -> ImageFolder:
        try:
            return ImageFolder(str(path), transform=tf, loader=load_rgb)
        except (FileNotFoundError, RuntimeError) as e:
            raise InputFileError(
                f"{path}: not a usable ImageFolder ({e}); expected one sub-folder per class "
                "holding .jpg/.png images"
            ) from None

    if (root / "train").is_dir():
        train = folder(root / "train", _train_transform(img_size, rand_augment))
        if val_dir is None:
            raise InputFileError(
                f"{root}/train exists but {root}/val does not; add a val/ split with the same class folders"
            )
        val = folder(val_dir, eval_transform(img_size, crop_pct))
        if val.classes != train.classes:
            raise InputError(
                f"{val_dir} classes {val.classes[:5]}... differ from {root}/train {train.classes[:5]}..."
            )
        return train, val, list(train.classes)
    if not 0 < val_fraction < 1:
        raise InputError(f"val_fraction must be in (0, 1), got {val_fraction}")
    full_train = folder(root, _train_transform(img_size, rand_augment))
    full_val = folder(root, eval_transform(img_size, crop_pct))
    n = len(full_train)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
    n_val = max(1, int(round(val_fraction * n)))
    if n - n_val < 1:
        raise InputError(f"{root} holds only {n} images: too few to split")
    return Subset(full_train, perm[n_val:]), Subset(full_val, perm[:n_val]), list(full_train.classes)
