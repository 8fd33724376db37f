"""Real images as the official code reads them: lazily, one file at a time, through the official transforms.

The official ``tar_adaptation.py`` (``image_train`` / ``image_test``, and ``data_load``) reads every target image
from disk when a batch asks for it: the adaptation loader applies resize to 256 x 256, a random 224 crop, a random
horizontal flip and ImageNet normalisation (also when it fills the banks), the evaluation loader resize to
256 x 256, a centre 224 crop and the same normalisation. :class:`ImageFolderDataset` does the same for a folder
``root/<class>/<image>`` (Office-31, Office-Home, VisDA-2017's ``train/`` and ``validation/``), so memory holds the
file list, never the images; the banks of the method (N x A features, N x C scores) are the only per-image state.

:func:`synthetic_visda_folder` writes a stand-in of VisDA-2017's layout (12 class folders of JPEGs of varied sizes)
for tests and for the memory and paper-scale measurements: no download is needed or made.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputNotAFolderError

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "IMAGE_EXTENSIONS",
    "VISDA_CLASSES",
    "ImageFolderDataset",
    "digits_transform",
    "synthetic_visda_folder",
    "eval_transform",
    "train_transform",
]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm")
VISDA_CLASSES = (
    "aeroplane",
    "bicycle",
    "bus",
    "car",
    "horse",
    "knife",
    "motorcycle",
    "person",
    "plant",
    "skateboard",
    "train",
    "truck",
)


def _sizes(resize: int, crop: int) -> tuple[int, int]:
    for name, v in (("resize", resize), ("crop", crop)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be a positive int, got {v!r}")
    if crop > resize:
        raise InputError(f"the crop ({crop}) must not exceed the resized side ({resize})")
    return resize, crop


class _View:
    """PIL image -> normalised tensor [3, crop, crop]: resize to ``resize x resize`` (bilinear, aspect not kept),
    then a random (``train``) or the centre square crop, a random horizontal flip (``train``), ``/ 255`` and the
    ImageNet mean/std. The random draws are torchvision's (``RandomCrop.get_params``: ``torch.randint`` for the top,
    then the left offset; ``RandomHorizontalFlip``: ``torch.rand(1) < 0.5``), so it equals the official
    ``transforms.Compose`` draw for draw (tested) without importing torchvision."""

    def __init__(self, resize: int, crop: int, train: bool, mean=IMAGENET_MEAN, std=IMAGENET_STD, grey=False):
        self.resize, self.crop = _sizes(resize, crop)
        self.train, self.grey = train, grey
        self.mean = None if mean is None else torch.tensor(mean).view(-1, 1, 1)
        self.std = None if std is None else torch.tensor(std).view(-1, 1, 1)

    def __call__(self, img):
        from PIL import Image

        if self.grey:
            img = img.convert("L")
        r, c = self.resize, self.crop
        img = img.resize((r, r), Image.Resampling.BOX if self.grey else Image.Resampling.BILINEAR)
        if self.train and r > c:  # torchvision draws nothing when the crop is the whole image
            top = int(torch.randint(0, r - c + 1, size=(1,)).item())
            left = int(torch.randint(0, r - c + 1, size=(1,)).item())
        else:
            top = left = int(round((r - c) / 2.0))
        img = img.crop((left, top, left + c, top + c))
        if self.train and torch.rand(1) < 0.5:
            img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        arr = np.asarray(img, dtype=np.uint8)
        x = torch.from_numpy(arr.copy()).float().div_(255.0)
        x = x.unsqueeze(0) if x.ndim == 2 else x.permute(2, 0, 1).contiguous()
        if self.mean is not None:
            x = (x - self.mean) / self.std
        return x

    def __repr__(self) -> str:
        kind = "train" if self.train else "eval"
        return f"{kind} view (resize {self.resize}x{self.resize}, crop {self.crop})"


def train_transform(resize: int = 256, crop: int = 224) -> _View:
    """The official training/adaptation view (``image_train``): resize to ``resize x resize`` (aspect not kept),
    a random ``crop``-pixel square, a random horizontal flip, then ImageNet mean/std normalisation."""
    return _View(resize, crop, train=True)


def eval_transform(resize: int = 256, crop: int = 224) -> _View:
    """The official evaluation view (``image_test``): resize to ``resize x resize``, the centre ``crop``-pixel
    square, ImageNet normalisation."""
    return _View(resize, crop, train=False)


def digits_transform(size: int = 8) -> _View:
    """For the built-in digits CNN on an image folder: grey, ``size x size`` by area averaging, values in [0, 1]
    (the scale of scikit-learn's digits); no augmentation, as in the digits study."""
    return _View(size, size, train=False, mean=None, std=None, grey=True)


class ImageFolderDataset(Dataset):
    """``root/<class>/<image>`` read lazily: ``dataset[i] = (transform(image_i), label_i)``.

    Classes are the sorted subfolder names (or ``class_names``, which must then all exist, in that order: the
    source model's classes); ``labels`` is an int64 tensor of all labels (read from the folder names, no image is
    opened). The images are opened only in ``__getitem__``, so memory does not grow with the folder."""

    def __init__(self, root: str | os.PathLike, transform=None, class_names: list[str] | None = None):
        root = Path(root).expanduser()
        if not root.exists():
            raise InputFileError(
                f"image folder not found: {root}; expected {root}/<class name>/<image files>"
            )
        if not root.is_dir():
            raise InputNotAFolderError(
                f"{root} is a file; expected a folder with one subfolder per class", root
            )
        found = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        if not found:
            raise InputError(
                f"the image folder {root} is empty (no class subfolders); expected {root}/<class>/<images>"
            )
        if class_names is not None and list(class_names) != found:
            missing = sorted(set(class_names) - set(found))
            extra = sorted(set(found) - set(class_names))
            raise InputError(
                f"{root} has {len(found)} classes but the source model has {len(class_names)}; "
                f"missing {missing[:5]}, extra {extra[:5]}"
            )
        self.root, self.classes, self.transform = root, found, transform
        samples: list[tuple[str, int]] = []
        empty = []
        for label, name in enumerate(found):
            files = sorted(
                p
                for p in (root / name).iterdir()
                if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in IMAGE_EXTENSIONS
            )
            if not files:
                empty.append(name)
            samples += [(str(p), label) for p in files]
        if empty:
            raise InputError(
                f"{root}: class folder(s) without images ({', '.join(IMAGE_EXTENSIONS)}): {', '.join(empty)}"
            )
        self.samples = samples
        self.labels = torch.tensor([lab for _, lab in samples], dtype=torch.long)

    def with_transform(self, transform) -> ImageFolderDataset:
        """The same files and labels under another transform (e.g. the evaluation view)."""
        other = object.__new__(ImageFolderDataset)
        other.__dict__.update(self.__dict__)
        other.transform = transform
        return other

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int):
        from PIL import Image
        from PIL import UnidentifiedImageError

        path, label = self.samples[i]
        try:
            with Image.open(path) as im:
                img = im.convert("RGB")
        except (UnidentifiedImageError, OSError, ValueError) as e:  # not an image, truncated, unreadable
            raise InputError(f"cannot read image {path}: {e}") from None
        if self.transform is not None:
            img = self.transform(img)
        else:
            img = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1).contiguous()
        return img, label


def synthetic_visda_folder(
    root: str | os.PathLike,
    n_images: int = 3000,
    *,
    side: tuple[int, int] = (160, 400),
    classes: tuple[str, ...] = VISDA_CLASSES,
    seed: int = 0,
    quality: int = 85,
) -> Path:
    """Write a VisDA-2017-format folder: ``root/<class>/<name>.jpg`` for the 12 VisDA classes, ``n_images`` JPEGs
    spread evenly over the classes, each of a random width and height in ``side`` (VisDA's images vary in size),
    content a smooth random colour field plus noise whose hue depends on the class. A stand-in of the layout and
    format only: nothing in it resembles the real photographs. Returns ``root``."""
    from PIL import Image

    if isinstance(n_images, bool) or not isinstance(n_images, int) or not len(classes) <= n_images <= 10**7:
        raise InputError(f"n_images must be an int >= {len(classes)} (one per class), got {n_images!r}")
    lo, hi = side
    if not 1 <= lo <= hi:
        raise InputError(f"side must be a (min, max) pair with 1 <= min <= max, got {side!r}")
    root = Path(root)
    rng = np.random.default_rng(seed)
    for name in classes:
        (root / name).mkdir(parents=True, exist_ok=True)
    palette = rng.uniform(0, 255, size=(len(classes), 3))
    for i in range(n_images):
        c = i % len(classes)
        w, h = (int(v) for v in rng.integers(lo, hi + 1, size=2))
        coarse = rng.normal(0, 40, size=(4, 4, 3)) + palette[c]
        img = Image.fromarray(np.clip(coarse, 0, 255).astype(np.uint8)).resize(
            (w, h), Image.Resampling.BILINEAR
        )
        arr = np.asarray(img, dtype=np.float32) + rng.normal(0, 12, size=(h, w, 3))
        Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8)).save(
            root / classes[c] / f"synthetic_{i:06d}.jpg", quality=quality
        )
    return root
