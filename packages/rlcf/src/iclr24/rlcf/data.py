"""Built-in offline data (scikit-learn's digits as image-caption pairs under a rotation + noise shift), and a loader
for a user's own class-per-folder images."""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.io import input_file_errors

__all__ = [
    "DIGIT_NAMES",
    "DIGIT_TEMPLATE",
    "DigitsRecipe",
    "digits_recipe",
    "augment_rotate_noise",
    "class_prompts",
    "load_image_folder",
    "CLASS_SETS",
    "imagenet_classes",
    "read_class_names",
    "resolve_class_names",
    "ImageFolderTTA",
]

DIGIT_NAMES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
DIGIT_TEMPLATE = "a photo of the digit {}."


def class_prompts(classnames, template: str = "a photo of a {}.") -> list[str]:
    """The hand-crafted prompts of the reward model (official default ``"a photo of a {class}."``)."""
    names = list(classnames) if not isinstance(classnames, str) else None
    if not names:
        raise InputError(f"expected a non-empty list of class names, got {classnames!r}")
    if not all(isinstance(n, str) and n.strip() for n in names):
        raise InputError(f"class names must be non-empty strings, got {names!r}")
    if not isinstance(template, str) or "{}" not in template:
        raise InputError(f"the prompt template needs a '{{}}' for the class name, got {template!r}")
    return [template.format(n.replace("_", " ")) for n in names]


@dataclass(frozen=True, eq=False)
class DigitsRecipe:
    """Clean training images (CLIP training) and the rotated + noisy held-out test set, ``(N, 1, 8, 8)`` in [0, 1]."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor


def digits_recipe(
    seed: int = 0,
    angle: tuple[float, float] = (20.0, 35.0),
    noise_std: float = 0.15,
    test_fraction: float = 0.34,
) -> DigitsRecipe:
    """scikit-learn's digits split by ``iclr24.paperkit``'s ``digits_shift``: one half clean (training the CLIPs),
    the other half rotated by +-U(20, 35) degrees with N(0, 0.15^2) noise, of which ``test_fraction`` (about 300
    images) is the test set of test-time adaptation."""
    from iclr24.paperkit.data import digits_shift

    d = digits_shift(angle=angle, noise_std=noise_std, test_fraction=test_fraction, seed=seed)
    return DigitsRecipe(
        torch.from_numpy(d.source_x).float(),
        torch.from_numpy(d.source_y).long(),
        torch.from_numpy(d.target_test_x).float(),
        torch.from_numpy(d.target_test_y).long(),
    )


def augment_rotate_noise(
    x: torch.Tensor, copies: int, max_angle: float, noise_std: float, seed: int
) -> torch.Tensor:
    """``copies`` rotated (U(-max_angle, max_angle) degrees) and noisy copies of training images, clipped to [0, 1]
    (the reward model's wider training distribution)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(copies):
        ang = (torch.rand(len(x), generator=g) * 2 - 1) * max_angle
        rot = _rotate_batch(x, [float(a) for a in ang])
        out.append((rot + noise_std * torch.randn(rot.shape, generator=g)).clamp(0, 1))
    return torch.cat(out)


def _rotate_batch(x: torch.Tensor, degrees: list[float]) -> torch.Tensor:
    """Each image of ``x`` ``(N, C, H, W)`` rotated by its own angle (bilinear, zero fill), in one call."""
    import math

    import torch.nn.functional as F

    rad = [math.radians(d) for d in degrees]
    theta = torch.tensor([[[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0]] for a in rad])
    grid = F.affine_grid(theta, tuple(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def load_image_folder(
    path: str | os.PathLike, size: int = 224
) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """A user's test images in ``path/<class name>/<image>`` (ImageNet-A/-R/-V2/-Sketch layout): ``(images
    (N, 3, size, size) in [0, 1], labels (N,), class names)``; underscores in folder names become spaces in the
    prompts. A missing folder, one without class subfolders or an unreadable image is one clear error."""
    from iclr24.paperkit.data import image_folder

    if isinstance(size, bool) or not isinstance(size, int) or size < 8:
        raise InputError(f"size must be an int >= 8 pixels, got {size!r}")
    if size > 2**14:
        raise InputError(f"size must be at most 2**14 pixels, got {size}")
    with input_file_errors(path):
        x, y, names = image_folder(path, size=size)
    return torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))), torch.from_numpy(y), names


# -- class names of real datasets ------------------------------------------------------------------------------------
CLASS_SETS = ("imagenet", "imagenet-a", "imagenet-r")
_WNID = re.compile(r"n\d{8}")


@functools.lru_cache(maxsize=1)
def _imagenet_table() -> dict:
    return json.loads(
        resources.files(__package__).joinpath("imagenet_classes.json").read_text(encoding="utf-8")
    )


def imagenet_classes(which: str = "imagenet") -> tuple[list[str], list[str]]:
    """``(wnids, names)`` of a class set in the order of its sorted class folders: ``"imagenet"`` (1000 classes;
    ImageNet val, ImageNet-Sketch), ``"imagenet-a"`` or ``"imagenet-r"`` (their 200 classes, as the official
    ``imagenet_a_mask``/``imagenet_r_mask`` select them). Names are CLIP's cleaned ImageNet class names."""
    if which not in CLASS_SETS:
        raise InputError(f"class set must be one of {CLASS_SETS}, got {which!r}")
    t = _imagenet_table()
    idx = range(1000) if which == "imagenet" else t["subsets"][which]
    return [t["wnids"][i] for i in idx], [t["names"][i] for i in idx]


def read_class_names(path: str | os.PathLike, folders: list[str]) -> list[str]:
    """Class names for the sorted class ``folders`` from a file: a JSON object ``{folder: name}`` (``.json``) or one
    name per line in the sorted order of the folders. A file that does not fit is one clear error."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputFileError(
            f"class-name file {p} does not exist (expected one name per line, or a .json object)"
        )
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read class-name file {p}: {e}") from None
    if p.suffix.lower() == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"class-name file {p} is not valid JSON ({e})") from None
        if not isinstance(doc, dict) or not all(isinstance(v, str) and v.strip() for v in doc.values()):
            raise InputError(
                f"class-name file {p} must hold a JSON object {{folder: name}} with non-empty names"
            )
        missing = [f for f in folders if f not in doc]
        if missing:
            raise InputError(f"class-name file {p} has no name for {len(missing)} of the {len(folders)} class "
                             f"folders (e.g. {', '.join(missing[:3])})")  # fmt: skip
        return [doc[f].strip() for f in folders]
    names = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(names) != len(folders):
        raise InputError(f"class-name file {p} has {len(names)} names for {len(folders)} class folders (expected one "
                         "name per line, in the sorted order of the folders)")  # fmt: skip
    return names


def resolve_class_names(folders: list[str], *, class_names=None, classes: str | None = None
                        ) -> tuple[list[str], dict[str, int]]:  # fmt: skip
    """``(class names of the classifier, folder -> label)`` for the sorted class ``folders`` of a test set.

    - ``classes="imagenet-a"|"imagenet-r"|"imagenet"``: the classifier has that set's classes (200 or 1000, the
      official label spaces); WordNet-ID folders map by their ID (a subset of the classes is fine), other folders
      must be exactly as many as the set's classes, in its order;
    - ``class_names``: a file (see :func:`read_class_names`) or a list of names, one per folder;
    - neither: the folder names (underscores become spaces in the prompts). WordNet-ID folders are refused: their
      prompts would read "a photo of a n01498041."."""
    folders = list(folders)
    if class_names is not None and classes is not None:
        raise InputError("give either class_names (a file or list) or classes (a named class set), not both")
    if classes is not None:
        wnids, names = imagenet_classes(classes)
        if all(_WNID.fullmatch(f) for f in folders):
            pos = {w: i for i, w in enumerate(wnids)}
            unknown = [f for f in folders if f not in pos]
            if unknown:
                raise InputError(f"{len(unknown)} class folder(s) are not {classes} classes (e.g. "
                                 f"{', '.join(unknown[:3])}); check --classes")  # fmt: skip
            return names, {f: pos[f] for f in folders}
        if len(folders) != len(names):
            raise InputError(f"--classes {classes} has {len(names)} classes but the data has {len(folders)} class "
                             "folders (folders named by WordNet ID may be a subset)")  # fmt: skip
        return names, {f: i for i, f in enumerate(folders)}
    if class_names is not None:
        if isinstance(class_names, str | os.PathLike):
            names = read_class_names(class_names, folders)
        else:
            names = [str(n) for n in class_names]
            if len(names) != len(folders):
                raise InputError(f"got {len(names)} class names for {len(folders)} class folders")
        return names, {f: i for i, f in enumerate(folders)}
    if folders and all(_WNID.fullmatch(f) for f in folders):
        raise InputError(f"the class folders are WordNet IDs ({folders[0]}, ...): give --classes "
                         f"{'|'.join(CLASS_SETS)} or --class-names FILE so the prompts name the classes")  # fmt: skip
    return [f.replace("_", " ") for f in folders], {f: i for i, f in enumerate(folders)}


def _class_folders(root: Path) -> list[str]:
    if not root.exists():
        raise InputFileError(f"image folder not found: {root} (expected PATH/<class>/<image>)")
    if not root.is_dir():
        raise NotADirectoryError(f"{root} is a file; expected a folder with one subfolder per class")
    folders = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not folders:
        raise InputError(f"{root} has no class subfolders (expected {root}/<class>/<image>)")
    return folders


def load_rgb(path: str | os.PathLike):
    """A PIL RGB image, read when called (full resolution), or a clear error naming the file."""
    from PIL import Image
    from PIL import UnidentifiedImageError

    try:
        with Image.open(path) as im:
            return im.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise InputError(f"cannot read image {path}: {e}") from None


class ImageFolderTTA(torch.utils.data.Dataset):
    """A test set ``root/<class folder>/<image>`` read lazily (a ``torch.utils.data.Dataset``): item ``i`` is
    ``(views (n_views, 3, R, R), label)``, the image opened at full resolution and turned into the official views by
    :func:`~iclr24.rlcf.views.clip_views` (view 0 = Resize + CenterCrop; the others RandomResizedCrop of the full
    image, bilinear, + flip), seeded by ``(seed, i)`` so the views do not depend on the order or the DataLoader
    workers. ``n_views=None`` gives the PIL image itself. Class names: see :func:`resolve_class_names`."""

    def __init__(self, root: str | os.PathLike, *, class_names=None, classes: str | None = None,
                 n_views: int | None = 64, resolution: int = 224, augmix: bool = False, seed: int = 0) -> None:  # fmt: skip
        from iclr24.paperkit.data.imagefolder import IMAGE_EXTENSIONS

        if n_views is not None and (isinstance(n_views, bool) or not isinstance(n_views, int) or n_views < 1):
            raise InputError(f"n_views must be an int >= 1 or None, got {n_views!r}")
        if isinstance(resolution, bool) or not isinstance(resolution, int) or resolution < 8:
            raise InputError(f"resolution must be an int >= 8 pixels, got {resolution!r}")
        self.root = Path(root).expanduser()
        self.folders = _class_folders(self.root)
        self.classnames, to_label = resolve_class_names(
            self.folders, class_names=class_names, classes=classes
        )
        self.paths: list[Path] = []
        labels, empty = [], []
        for f in self.folders:
            files = sorted(p for p in (self.root / f).iterdir()
                           if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in IMAGE_EXTENSIONS)  # fmt: skip
            if not files:
                empty.append(f)
            self.paths += files
            labels += [to_label[f]] * len(files)
        if empty:
            raise InputError(f"{self.root}: class folder(s) without images: {', '.join(empty[:5])}")
        self.labels = torch.tensor(labels, dtype=torch.long)
        self.n_views, self.resolution, self.augmix, self.seed = n_views, resolution, augmix, int(seed)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        image = load_rgb(self.paths[i])
        if self.n_views is None:
            return image, int(self.labels[i])
        from .views import clip_views

        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i % len(self))
        views = clip_views(image, self.n_views, resolution=self.resolution, augmix=self.augmix, generator=g)
        return views, int(self.labels[i])
