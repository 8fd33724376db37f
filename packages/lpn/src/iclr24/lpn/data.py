"""Built-in offline data (the 1-D Laplacian toy, sklearn digits), reference denoisers, and image I/O (PNG/NPY,
folders of the user's own images)."""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import atomic_write_bytes
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputFolderError
from iclr24.paperkit.errors import InputNotAFolderError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor

__all__ = [
    "laplace_sampler",
    "soft_threshold",
    "laplace_posterior_mmse",
    "laplace_posterior_median",
    "digits_split",
    "load_image",
    "save_image",
    "load_image_folder",
    "image_to_tensor",
    "tensor_to_image",
    "psnr",
    "ssim",
    "load_celeba",
    "load_mayoct",
    "IMAGE_SUFFIXES",
]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".npy")


def laplace_sampler(scale: float = 1.0) -> Callable[[int, torch.Generator], torch.Tensor]:
    """A sampler ``(n, generator) -> (n, 1)`` of Laplace(0, scale): x = +-b E with E = -log(1 - U) ~ Exp(1),
    U ~ U[0, 1) (so E is always finite) and a fair random sign."""
    if not scale > 0:
        raise InputError(f"scale must be > 0, got {scale}")

    def sample(n: int, g: torch.Generator) -> torch.Tensor:
        e = -torch.log1p(-torch.rand(n, 1, generator=g, dtype=torch.float64))
        sign = torch.where(torch.rand(n, 1, generator=g) < 0.5, -1.0, 1.0)
        return (scale * sign * e).float()

    return sample


def soft_threshold(y: torch.Tensor | np.ndarray, lam: float = 1.0):
    """prox_{lam |.|}(y) = sign(y) max(|y| - lam, 0): the MAP denoiser for Laplace(b) + N(0, s^2), lam = s^2 / b."""
    check_float(lam, "lam", minimum=0)
    if isinstance(y, torch.Tensor):
        check_tensor(y, "y", kind="float", allow_empty=True)
        return torch.sign(y) * (y.abs() - lam).clamp_min(0)
    y = check_array(y, "y", allow_empty=True, finite=False)
    return np.sign(y) * np.maximum(np.abs(y) - lam, 0)


def _posterior_grid(y: np.ndarray, b: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(-25, 25, 20001)
    logp = -np.abs(x)[None] / b - (np.asarray(y, dtype=np.float64)[:, None] - x[None]) ** 2 / (2 * sigma**2)
    w = np.exp(logp - logp.max(1, keepdims=True))
    return x, w / w.sum(1, keepdims=True)


def laplace_posterior_mmse(y, b: float = 1.0, sigma: float = 1.0) -> np.ndarray:
    """E[x | y] for x ~ Laplace(0, b), y = x + N(0, sigma^2), by quadrature (the l2-optimal denoiser)."""
    y = np.atleast_1d(np.asarray(y, dtype=np.float64))
    x, w = _posterior_grid(y, b, sigma)
    return (w * x[None]).sum(1)


def laplace_posterior_median(y, b: float = 1.0, sigma: float = 1.0) -> np.ndarray:
    """The posterior median of x given y (the l1-optimal denoiser), by quadrature."""
    y = np.atleast_1d(np.asarray(y, dtype=np.float64))
    x, w = _posterior_grid(y, b, sigma)
    cdf = np.cumsum(w, 1)
    return np.array([np.interp(0.5, c, x) for c in cdf])


@functools.lru_cache(maxsize=1)
def _digits_flat() -> torch.Tensor:
    """sklearn's digits as ``(1797, 64)`` in [0, 1], decoded once per process (``digits_split`` indexes it)."""
    from iclr24.paperkit.data.samples import digits_tensors

    return digits_tensors(flatten=True)[0]


def digits_split(n_train: int = 1500, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """sklearn's digits (1797 images 8x8, scaled to [0, 1]) flattened to ``(N, 64)``, split by a seeded permutation
    into ``(train, test)`` (1500 / 297 by default)."""
    check_int(n_train, "n_train", minimum=1, maximum=10**6)
    x = _digits_flat()
    if not 0 < n_train < len(x):
        raise InputError(f"n_train must be in (0, {len(x)}), got {n_train}")
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    return x[perm[:n_train]].contiguous(), x[perm[n_train:]].contiguous()


def _check_metric_input(x: torch.Tensor, ref: torch.Tensor, data_range: float, what: str) -> None:
    """Non-empty, floating, finite images and a finite positive range: a metric refuses NaN instead of
    answering it."""
    for name, t in (("x", x), ("ref", ref)):
        check_tensor(t, f"{what}: {name}", kind="float", finite=True)
    check_float(data_range, f"{what}: data_range", minimum=0, maximum=1e100, open_min=True)


def psnr(x: torch.Tensor, ref: torch.Tensor, data_range: float = 1.0) -> torch.Tensor:
    """PSNR in dB per sample: 10 log10(range^2 / MSE), over all but the batch dimension. ``x`` and ``ref``
    must have the same shape (ValueError otherwise; no broadcasting)."""
    if not isinstance(x, torch.Tensor) or not isinstance(ref, torch.Tensor):
        raise InputError(f"psnr takes two tensors, got {type(x).__name__} and {type(ref).__name__}")
    if x.shape != ref.shape:
        raise InputError(
            f"psnr: x has shape {tuple(x.shape)} but ref has shape {tuple(ref.shape)}; they must match "
            "(batched (B, ...) tensors)"
        )
    if x.dim() < 2:
        raise InputError(f"psnr expects batched tensors (B, ...), got shape {tuple(x.shape)}")
    _check_metric_input(x, ref, data_range, "psnr")
    mse = (x - ref).pow(2).flatten(1).mean(1).clamp_min(1e-20)
    return 10 * torch.log10(data_range**2 / mse)


def ssim(
    x: torch.Tensor, ref: torch.Tensor, data_range: float = 1.0, win_size: int = 7, image_shape=None
) -> torch.Tensor:
    """SSIM per sample, as ``skimage.metrics.structural_similarity`` computes it by default (the official
    ``lpn/metrics.py``): a ``win_size`` x ``win_size`` uniform window, K1 = 0.01, K2 = 0.03, sample covariances,
    averaged over the positions where the window lies inside the image, and over channels.

    ``x``, ``ref``: ``(B, C, H, W)`` or ``(B, H, W)``; flattened ``(B, D)`` with ``image_shape=(H, W)``.
    """
    if not isinstance(x, torch.Tensor) or not isinstance(ref, torch.Tensor):
        raise InputError(f"ssim takes two tensors, got {type(x).__name__} and {type(ref).__name__}")
    if x.shape != ref.shape:
        raise InputError(
            f"ssim: x has shape {tuple(x.shape)} but ref has shape {tuple(ref.shape)}; they must match"
        )
    _check_metric_input(x, ref, data_range, "ssim")
    check_int(win_size, "win_size", minimum=3, maximum=2**10)
    if win_size % 2 == 0:
        raise InputError(f"win_size must be odd, got {win_size}")
    if image_shape is not None:
        if (
            not isinstance(image_shape, tuple | list)
            or len(image_shape) != 2
            or math.prod(int(s) for s in image_shape) * len(x) != x.numel()
        ):
            raise InputError(
                f"image_shape {image_shape!r} does not fit flattened samples of shape {tuple(x.shape)}"
            )
        x, ref = x.reshape(len(x), 1, *image_shape), ref.reshape(len(ref), 1, *image_shape)
    if x.dim() == 3:
        x, ref = x.unsqueeze(1), ref.unsqueeze(1)
    if x.dim() != 4:
        raise InputError(
            f"ssim expects images (B, C, H, W) or (B, H, W) (or (B, D) with image_shape), got {tuple(x.shape)}"
        )
    if win_size < 3 or win_size % 2 == 0 or min(x.shape[-2:]) < win_size:
        raise InputError(
            f"win_size must be odd, >= 3 and <= the image side, got {win_size} for {tuple(x.shape)}"
        )
    b, c = x.shape[:2]
    a, r = x.double().reshape(b * c, 1, *x.shape[2:]), ref.double().reshape(b * c, 1, *x.shape[2:])
    n = win_size**2
    cov = n / (n - 1)

    def mean(t: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.avg_pool2d(t, win_size, stride=1)

    ma, mr = mean(a), mean(r)
    vaa, vrr, var_ = (
        cov * (mean(a * a) - ma * ma),
        cov * (mean(r * r) - mr * mr),
        cov * (mean(a * r) - ma * mr),
    )
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    s = ((2 * ma * mr + c1) * (2 * var_ + c2)) / ((ma * ma + mr * mr + c1) * (vaa + vrr + c2))
    return s.reshape(b, c, -1).mean((1, 2)).to(x.dtype)


# -- the paper's datasets from a user path (as the official repository lays them out) ----------------------------
CELEBA_SPLITS = {"train": 0, "valid": 1, "test": 2}


def load_celeba(
    root: str | Path,
    split: str = "test",
    image_size: int = 128,
    *,
    start: int = 0,
    max_images: int | None = None,
) -> torch.Tensor:
    """CelebA as the official ``lpn/datasets/celeba.py`` reads it (torchvision's layout, ``download=False``):
    ``root/celeba/img_align_celeba/*.jpg`` and ``root/celeba/list_eval_partition.txt`` (``name split`` per line,
    0/1/2 = train/valid/test). Each image is centre-cropped to ``image_size`` (the official ``CenterCrop`` +
    ``Resize`` of the same size), RGB in [0, 1]: ``(N, 3, image_size, image_size)``. ``start``/``max_images`` pick
    a range of the split (the official deblurring uses test images 100-119)."""

    if split not in CELEBA_SPLITS:
        raise InputError(f"split must be one of {', '.join(CELEBA_SPLITS)}, got {split!r}")
    base = Path(root) / "celeba"
    part, imgs = base / "list_eval_partition.txt", base / "img_align_celeba"
    for need in (part, imgs):
        if not need.exists():
            raise InputFileError(
                f"{need} does not exist; download CelebA (img_align_celeba.zip, list_eval_partition.txt) from the "
                "authors' Google Drive and unzip it under ROOT/celeba/ (torchvision's CelebA layout)"
            )
    names = []
    for k, line in enumerate(part.read_text().splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 2 or fields[1] not in ("0", "1", "2"):
            raise InputError(f"{part}:{k}: expected 'NAME SPLIT' with SPLIT in 0/1/2, got {line!r}")
        if int(fields[1]) == CELEBA_SPLITS[split]:
            names.append(fields[0])
    names = names[start : None if max_images is None else start + max_images]
    if not names:
        raise InputError(f"{part}: no images in split {split!r} (from index {start})")
    out = []
    for name in names:
        f = imgs / name
        if not f.is_file():
            raise InputFileError(f"{f} is listed in {part.name} but missing")
        arr = load_image(f)
        if arr.ndim == 2:
            arr = np.repeat(arr[..., None], 3, axis=2)
        h, w = arr.shape[:2]
        if min(h, w) < image_size:
            raise InputError(f"{f}: {h}x{w} is smaller than image_size {image_size}")
        i, j = int(round((h - image_size) / 2)), int(round((w - image_size) / 2))
        out.append(image_to_tensor(arr[i : i + image_size, j : j + image_size]))
    return torch.stack(out)


def load_mayoct(root: str | Path, split: str = "test", *, max_images: int | None = None) -> torch.Tensor:
    """Mayo CT phantoms as the official ``lpn/datasets/mayoct.py`` reads them:
    ``root/mayo_data_arranged_patientwise/{train,test}/Phantom/*.npy`` (one 2-D float slice per file, sorted by
    name), as ``(N, 1, H, W)`` float32 (no augmentation; the official training adds random flips/affine/crops)."""
    if split not in ("train", "test"):
        raise InputError(f"split must be 'train' or 'test', got {split!r}")
    folder = Path(root) / "mayo_data_arranged_patientwise" / split / "Phantom"
    if not folder.is_dir():
        raise InputFileError(
            f"{folder} does not exist; download the Mayo CT data from the authors' Google Drive into ROOT "
            "(layout: mayo_data_arranged_patientwise/{train,test}/Phantom/*.npy)"
        )
    files = sorted(p for p in folder.iterdir() if p.suffix == ".npy")[:max_images]
    if not files:
        raise InputFileError(f"no .npy slices in {folder}")
    out = []
    for f in files:
        try:
            arr = np.load(f, allow_pickle=False)
        except ValueError as e:
            raise InputError(f"{f}: not a plain .npy array ({e})") from None
        if arr.ndim != 2 or not np.isfinite(arr).all():
            raise InputError(f"{f}: expected a finite 2-D slice, got shape {arr.shape}")
        out.append(torch.from_numpy(arr.astype(np.float32)).unsqueeze(0))
    if len({t.shape for t in out}) != 1:
        raise InputError(f"{folder}: slices have different shapes {sorted({tuple(t.shape) for t in out})}")
    return torch.stack(out)


# -- images -------------------------------------------------------------------------------------------------------
def load_image(path: str | Path, gray: bool = False) -> np.ndarray:
    """Read a PNG/JPEG/... (scaled to [0, 1]) or an ``.npy`` array (must already lie in [0, 1]) as float32
    ``(H, W)`` or ``(H, W, C)``."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"image file {path} does not exist")
    if path.suffix.lower() == ".npy":
        arr = np.load(path, allow_pickle=False)
        if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[-1] not in (1, 3)):
            raise InputError(f"{path}: expected an image array (H, W) or (H, W, 1|3), got shape {arr.shape}")
        arr = arr.astype(np.float32)
        bad = ~np.isfinite(arr)
        if bad.any():
            n_nan, n_inf = int(np.isnan(arr).sum()), int(np.isinf(arr).sum())
            raise InputError(
                f"{path}: the array contains {n_nan} NaN and {n_inf} inf value(s) (of {arr.size}); "
                "images must be finite and in [0, 1]"
            )
        if arr.min() < 0 or arr.max() > 1:
            raise InputError(
                f"{path}: values must be in [0, 1], got range [{arr.min():.3g}, {arr.max():.3g}]; "
                "rescale the array first"
            )
    elif path.suffix.lower() in IMAGE_SUFFIXES:
        from PIL import Image

        try:
            with Image.open(path) as im:
                if im.mode in ("I;16", "I;16B", "I"):
                    arr = np.asarray(im, dtype=np.float32) / 65535.0
                else:
                    im = im.convert("L" if gray else ("RGB" if im.mode not in ("L", "1") else "L"))
                    arr = np.asarray(im, dtype=np.float32) / 255.0
        except (OSError, SyntaxError) as e:  # PIL: truncated / not an image / bad header
            raise InputError(
                f"{path}: cannot decode the image ({' '.join(str(e).split())}); the file is truncated or "
                "not a valid image"
            ) from None
    else:
        raise InputError(
            f"{path}: unsupported image type {path.suffix!r}; use one of {', '.join(IMAGE_SUFFIXES)}"
        )
    if arr.ndim == 3 and arr.shape[-1] == 1:
        arr = arr[..., 0]
    if gray and arr.ndim == 3:
        arr = arr @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    return np.clip(arr, 0.0, 1.0).astype(np.float32)


def save_image(path: str | Path, img: np.ndarray | torch.Tensor) -> Path:
    """Atomically write ``(H, W)`` / ``(H, W, C)`` (or ``(C, H, W)`` tensor) in [0, 1] as PNG (8-bit) or NPY."""
    if isinstance(img, torch.Tensor):
        img = tensor_to_image(img)
    img = check_array(img, "img").astype(np.float32)
    if img.ndim not in (2, 3) or (img.ndim == 3 and img.shape[-1] not in (1, 3, 4)):
        raise InputError(f"img must be (H, W) or (H, W, C) with C in 1, 3, 4, got shape {img.shape}")
    if img.ndim == 3 and img.shape[-1] == 1:
        img = img[..., 0]
    path = Path(path)
    if path.is_dir():
        raise InputFolderError(f"cannot write an image at {path}: it is a folder", path)
    buf = io.BytesIO()
    if path.suffix.lower() == ".npy":
        np.save(buf, img)
    elif path.suffix.lower() == ".png":
        from PIL import Image

        Image.fromarray((np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8)).save(buf, format="PNG")
    else:
        raise InputError(f"output must end in .png or .npy, got {path.name!r}")
    return atomic_write_bytes(path, buf.getvalue())


def image_to_tensor(img: np.ndarray) -> torch.Tensor:
    """``(H, W)`` / ``(H, W, C)`` -> ``(C, H, W)`` float32."""
    t = torch.tensor(np.array(img, dtype=np.float32))
    return t.unsqueeze(0) if t.dim() == 2 else t.permute(2, 0, 1).contiguous()


def tensor_to_image(t: torch.Tensor) -> np.ndarray:
    """``(C, H, W)`` -> ``(H, W)`` (one channel) or ``(H, W, C)`` numpy float32."""
    t = t.detach().cpu().float()
    if t.dim() == 4 and t.shape[0] == 1:
        t = t[0]
    if t.dim() != 3:
        raise InputError(f"expected an image tensor (C, H, W), got shape {tuple(t.shape)}")
    a = t.permute(1, 2, 0).numpy()
    return a[..., 0] if a.shape[-1] == 1 else a


def load_image_folder(
    folder: str | Path,
    size: int,
    *,
    gray: bool = True,
    patches_per_image: int = 1,
    seed: int = 0,
    max_images: int | None = None,
) -> torch.Tensor:
    """Training data from a folder of images: ``patches_per_image`` random ``size`` x ``size`` crops of each image
    (images smaller than ``size`` are resized up first), as ``(N, C, size, size)`` in [0, 1]."""
    check_int(size, "size", minimum=1, maximum=2**14)
    check_int(patches_per_image, "patches_per_image", minimum=1, maximum=10**6)
    if max_images is not None:
        check_int(max_images, "max_images", minimum=1)
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputNotAFolderError(f"image folder {folder} is a file; expected a folder of images", folder)
    if not folder.is_dir():
        raise InputFileError(f"image folder {folder} does not exist")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if max_images is not None:
        files = files[:max_images]
    if not files:
        raise InputFileError(f"no images ({', '.join(IMAGE_SUFFIXES)}) in {folder}")
    rng = np.random.default_rng(seed)
    out = []
    for f in files:
        img = load_image(f, gray=gray)
        if img.ndim == 2 and not gray:
            img = np.repeat(img[..., None], 3, axis=2)
        h, w = img.shape[:2]
        if min(h, w) < size:
            from PIL import Image

            s = size / min(h, w)
            nh, nw = max(size, math.ceil(h * s)), max(size, math.ceil(w * s))
            chans = [img] if img.ndim == 2 else [img[..., c] for c in range(img.shape[2])]
            chans = [np.asarray(Image.fromarray(c).resize((nw, nh), Image.BILINEAR)) for c in chans]
            img = chans[0] if img.ndim == 2 else np.stack(chans, -1)
            h, w = nh, nw
        t = image_to_tensor(img)
        for _ in range(patches_per_image):
            i, j = int(rng.integers(0, h - size + 1)), int(rng.integers(0, w - size + 1))
            out.append(t[:, i : i + size, j : j + size])
    return torch.stack(out).clamp(0, 1)
