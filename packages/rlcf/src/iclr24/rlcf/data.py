"""Built-in offline data (scikit-learn's digits as image-caption pairs under a rotation + noise shift), and a loader
for a user's own class-per-folder images."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "DIGIT_NAMES",
    "DIGIT_TEMPLATE",
    "DigitsRecipe",
    "digits_recipe",
    "augment_rotate_noise",
    "class_prompts",
    "load_image_folder",
]

DIGIT_NAMES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
DIGIT_TEMPLATE = "a photo of the digit {}."


def class_prompts(classnames, template: str = "a photo of a {}.") -> list[str]:
    """The hand-crafted prompts of the reward model (official default ``"a photo of a {class}."``)."""
    names = list(classnames) if not isinstance(classnames, str) else None
    if not names:
        raise ValueError(f"expected a non-empty list of class names, got {classnames!r}")
    if not all(isinstance(n, str) and n.strip() for n in names):
        raise ValueError(f"class names must be non-empty strings, got {names!r}")
    if "{}" not in template:
        raise ValueError(f"the prompt template needs a '{{}}' for the class name, got {template!r}")
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
    from iclr24.paperkit.datasets import digits_shift

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
        rot = torch.stack([_rotate(img, float(a)) for img, a in zip(x, ang)])
        out.append((rot + noise_std * torch.randn(rot.shape, generator=g)).clamp(0, 1))
    return torch.cat(out)


def _rotate(img: torch.Tensor, degrees: float) -> torch.Tensor:
    import math

    import torch.nn.functional as F

    a = math.radians(degrees)
    theta = torch.tensor([[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0]])[None]
    grid = F.affine_grid(theta, (1, *img.shape), align_corners=False)
    return F.grid_sample(img[None], grid, mode="bilinear", padding_mode="zeros", align_corners=False)[0]


def load_image_folder(
    path: str | os.PathLike, size: int = 224
) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """A user's test images in ``path/<class name>/<image>`` (ImageNet-A/-R/-V2/-Sketch layout): ``(images
    (N, 3, size, size) in [0, 1], labels (N,), class names)``; underscores in folder names become spaces in the
    prompts. A missing folder, one without class subfolders or an unreadable image is one clear error."""
    from iclr24.paperkit.datasets import image_folder

    if isinstance(size, bool) or not isinstance(size, int) or size < 8:
        raise ValueError(f"size must be an int >= 8 pixels, got {size!r}")
    x, y, names = image_folder(path, size=size)
    return torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))), torch.from_numpy(y), names
