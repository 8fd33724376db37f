"""Augmented views of one test image (the "batch" of episodic test-time adaptation, as in TPT and RLCF).

View 0 is always the original (test-time preprocessed) image; views 1..N-1 are random augmentations:
- :func:`clip_views` (real images, the official ``AugMixAugmenter``): Resize + CenterCrop for the original, and
  RandomResizedCrop + horizontal flip (+ AugMix of severity 1 for fine-grained sets) for the others, then CLIP's
  normalisation;
- :func:`digit_views` (the 8x8 digits of the offline demo): small rotations and shifts of the whole image.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int

__all__ = ["clip_views", "digit_views", "CLIP_MEAN", "CLIP_STD", "check_image"]

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def check_image(image, channels: tuple[int, ...] | None = None) -> torch.Tensor:
    """A float ``(C, H, W)`` tensor with finite values, or a clear ``ValueError`` naming what came."""
    if not isinstance(image, torch.Tensor):
        try:
            import numpy as np

            if isinstance(image, np.ndarray) and image.dtype.kind in "fiu":
                image = torch.as_tensor(image)
            else:
                raise TypeError
        except TypeError:
            raise InputError(
                f"expected an image tensor (C, H, W) of floats, got {type(image).__name__}"
            ) from None
    if image.ndim != 3 or not image.is_floating_point() and image.dtype != torch.uint8:
        raise InputError(
            f"expected an image tensor (C, H, W) of floats, got shape {tuple(image.shape)} {image.dtype}"
        )
    image = image.float() / 255.0 if image.dtype == torch.uint8 else image.float()
    if min(image.shape) == 0:
        raise InputError(f"the image is empty: shape {tuple(image.shape)}")
    if channels is not None and image.shape[0] not in channels:
        raise InputError(
            f"expected an image with {channels} channel(s) first, got shape {tuple(image.shape)}"
        )
    if min(image.shape[1:]) < 2:
        raise InputError(f"expected an image of at least 2x2 pixels, got shape {tuple(image.shape)}")
    if not torch.isfinite(image).all():
        raise InputError("the image has NaN or infinite pixels")
    return image


MAX_VIEWS = 2**16  # views of one image (the paper: 64)


def digit_views(
    image: torch.Tensor,
    n_views: int = 64,
    *,
    max_angle: float = 10.0,
    max_shift: int = 1,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """``(n_views, C, H, W)``: the image, then ``n_views - 1`` copies rotated by U(-max_angle, max_angle) degrees
    and shifted by an integer in [-max_shift, max_shift] pixels per axis (bilinear, zero fill)."""
    image = check_image(image)
    check_int(n_views, "n_views", minimum=1, maximum=MAX_VIEWS)
    check_float(max_angle, "max_angle", minimum=0, maximum=360)
    check_int(max_shift, "max_shift", minimum=0, maximum=2**12)
    n = n_views - 1
    if n == 0:
        return image[None]
    c, h, w = image.shape
    ang = (torch.rand(n, generator=generator) * 2 - 1) * math.radians(max_angle)
    sh = torch.randint(-max_shift, max_shift + 1, (n, 2), generator=generator).float()
    cos, sin = torch.cos(ang), torch.sin(ang)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0], theta[:, 0, 1], theta[:, 1, 0], theta[:, 1, 1] = cos, -sin, sin, cos
    theta[:, 0, 2] = sh[:, 0] * 2 / w
    theta[:, 1, 2] = sh[:, 1] * 2 / h
    grid = F.affine_grid(theta, (n, c, h, w), align_corners=False)
    aug = F.grid_sample(
        image.expand(n, c, h, w), grid, mode="bilinear", padding_mode="zeros", align_corners=False
    )
    return torch.cat([image[None], aug], 0)


def clip_views(
    image,
    n_views: int = 64,
    *,
    resolution: int = 224,
    augmix: bool = False,
    normalize: bool = True,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """``(n_views, 3, R, R)`` views of one RGB image at its full resolution (a PIL image, or a ``(3, H, W)`` tensor
    in [0, 1]) as the official ``AugMixAugmenter``: view 0 = Resize(R, bicubic) + CenterCrop(R); the others
    RandomResizedCrop(R) of the full image (scale (0.08, 1), bilinear: torchvision's default, as the official
    ``get_preaugment``) + RandomHorizontalFlip, with torchvision's AugMix (severity 1) on top when ``augmix``; CLIP
    normalisation when ``normalize``. Crops are taken before any resizing, so a large photo is never squashed."""
    from torchvision.transforms import v2

    check_int(n_views, "n_views", minimum=1, maximum=MAX_VIEWS)
    check_int(resolution, "resolution", minimum=8, maximum=2**14)
    try:
        from PIL import Image

        pil = isinstance(image, Image.Image)
    except ImportError:  # pragma: no cover - Pillow is a dependency
        pil = False
    if pil:
        if image.mode != "RGB":
            image = image.convert("RGB")
        to_tensor = v2.Compose([v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True)])
    else:
        image = check_image(image, channels=(3,))

        def to_tensor(x):
            return x.clamp(0, 1)

    base = v2.Compose(
        [
            v2.Resize(resolution, interpolation=v2.InterpolationMode.BICUBIC, antialias=True),
            v2.CenterCrop(resolution),
        ]
    )
    aug = v2.Compose([v2.RandomResizedCrop(resolution, interpolation=v2.InterpolationMode.BILINEAR, antialias=True),
                      v2.RandomHorizontalFlip()])  # fmt: skip
    mix = v2.AugMix(severity=1) if augmix else None
    seed = None if generator is None else int(torch.randint(2**31 - 1, (1,), generator=generator))
    views = [to_tensor(base(image))]
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        for _ in range(n_views - 1):
            v = to_tensor(aug(image))
            if mix is not None:
                v = mix((v * 255).round().to(torch.uint8)).float() / 255.0
            views.append(v)
    out = torch.stack(views)
    if normalize:
        out = (out - torch.tensor(CLIP_MEAN)[:, None, None]) / torch.tensor(CLIP_STD)[:, None, None]
    return out
