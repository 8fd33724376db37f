"""Small built-in datasets that several packages use, loaded offline from installed PyPI packages."""

from __future__ import annotations

import numpy as np
import torch

from ..errors import InputError

__all__ = ["digits_tensors", "train_test_split_tensors", "sample_image", "SAMPLE_IMAGES"]

# scikit-image sample images that ship inside the wheel (others in skimage.data are fetched on demand and fail
# offline). Licences per skimage's docstrings: public domain / CC0 unless noted.
SAMPLE_IMAGES = (
    "camera",
    "astronaut",
    "coffee",
    "chelsea",
    "rocket",
    "moon",
    "page",
    "coins",
    "horse",
    "text",
    "brick",
    "grass",
    "gravel",
    "hubble_deep_field",
    "retina",
    "immunohistochemistry",
)


def digits_tensors(
    flatten: bool = False, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's digits (UCI optical recognition of handwritten digits; BSD-3 via scikit-learn):
    1797 images 8x8 in [0, 1] as ``(N, 1, 8, 8)`` (or ``(N, 64)`` with ``flatten``), labels ``(N,)`` int64."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.as_tensor(d.images / 16.0, dtype=dtype)
    x = x.reshape(len(x), 64) if flatten else x.unsqueeze(1)
    return x, torch.as_tensor(d.target, dtype=torch.long)


def train_test_split_tensors(x: torch.Tensor, y: torch.Tensor, test_fraction: float = 0.2, seed: int = 0):
    """A seeded stratified split ``(x_train, y_train, x_test, y_test)``."""
    if not 0.0 < test_fraction < 1.0:
        raise InputError(f"test_fraction must be in (0, 1), got {test_fraction}")
    if len(x) != len(y):
        raise InputError(f"x and y must have the same length, got {len(x)} and {len(y)}")
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(x))
    tr, te = train_test_split(idx, test_size=test_fraction, random_state=seed, stratify=y.numpy())
    tr, te = torch.as_tensor(tr), torch.as_tensor(te)
    return x[tr], y[tr], x[te], y[te]


def sample_image(
    name: str = "camera", size: int | tuple[int, int] | None = None, gray: bool = False
) -> np.ndarray:
    """A scikit-image sample image as float32 in [0, 1], ``(H, W)`` or ``(H, W, 3)``; optional resize and grey.

    Licences: see ``skimage.data.<name>.__doc__`` (camera, astronaut, coffee, chelsea, ... are public domain or
    CC0)."""
    if name not in SAMPLE_IMAGES:
        raise InputError(f"unknown sample image {name!r}; choose one of {', '.join(SAMPLE_IMAGES)}")
    import skimage.data
    from skimage.transform import resize

    img = getattr(skimage.data, name)()
    img = img.astype(np.float32) / (255.0 if img.dtype == np.uint8 else max(float(img.max()), 1.0))
    if img.ndim == 3 and img.shape[-1] == 4:
        img = img[..., :3]
    if gray and img.ndim == 3:
        from skimage.color import rgb2gray

        img = rgb2gray(img).astype(np.float32)
    if size is not None:
        hw = (size, size) if isinstance(size, int) else tuple(size)
        if len(hw) != 2 or min(hw) <= 0:
            raise InputError(f"size must be a positive int or (H, W), got {size!r}")
        img = resize(img, hw + img.shape[2:], anti_aliasing=True, preserve_range=True).astype(np.float32)
    return np.clip(img, 0.0, 1.0)
