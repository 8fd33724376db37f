"""Built-in offline data (scikit-image's cameraman), and loaders for the user's own images, audio and video.

Every loader returns a :class:`Signal`: ``values`` of shape ``(*grid, channels)`` (float32), its ``kind`` and the
``value_range`` used for PSNR (images and video in [0, 1], audio in [-1, 1]).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iclr24.paperkit.data.samples import sample_image as _paperkit_sample_image
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputFolderError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.io import atomic_write_bytes

__all__ = [
    "Signal",
    "camera_image",
    "sample_image",
    "load_image",
    "load_audio",
    "load_video",
    "load_signal",
    "save_signal",
    "IMAGE_SUFFIXES",
]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".gif", ".webp")


@dataclass
class Signal:
    """A signal on a regular grid: ``values`` ``(*shape, channels)`` float32; ``kind`` image | audio | video."""

    values: np.ndarray
    kind: str
    value_range: tuple[float, float] = (0.0, 1.0)
    sample_rate: int | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        """The grid (without channels)."""
        return tuple(self.values.shape[:-1])

    @property
    def channels(self) -> int:
        return int(self.values.shape[-1])


def sample_image(name: str, size: int | None = 128, gray: bool = False) -> np.ndarray:
    """A scikit-image sample image (``camera``, ``astronaut``, ``coffee``, ``chelsea``, ``rocket``, ``retina``, ...;
    they ship inside the scikit-image wheel, public domain / CC0 per their docstrings), centre-cropped to a square
    and resized with anti-aliasing to ``size^2`` (``None``: the square crop as is), float32 in [0, 1]:
    ``(size, size, 3)`` for colour images, ``(size, size)`` for grey ones or with ``gray=True``."""
    try:
        import skimage.data
        from skimage.color import rgb2gray
        from skimage.transform import resize
    except ImportError:  # pragma: no cover - scikit-image is a dependency of iclr24-asmr
        raise ImportError(
            "sample_image needs scikit-image, a dependency of iclr24-asmr: pip install iclr24-asmr"
        ) from None
    from iclr24.paperkit.data.samples import SAMPLE_IMAGES

    if not isinstance(name, str) or name not in SAMPLE_IMAGES:
        raise InputError(f"unknown sample image {name!r}; choose one of {', '.join(SAMPLE_IMAGES)}")
    _check_size(size)
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise InputError(f"size must be a positive int or None, got {size!r}")
    img = np.asarray(getattr(skimage.data, name)())
    img = img.astype(np.float32) / (255.0 if img.dtype == np.uint8 else max(float(img.max()), 1.0))
    if img.ndim == 3 and img.shape[-1] == 4:
        img = img[..., :3]
    h, w = img.shape[:2]
    s = min(h, w)
    if size is not None and size > s:
        raise InputError(f"{name} is {h}x{w}: its square crop ({s}^2) is smaller than size={size}")
    img = img[(h - s) // 2 : (h - s) // 2 + s, (w - s) // 2 : (w - s) // 2 + s]
    if gray and img.ndim == 3:
        img = rgb2gray(img).astype(np.float32)
    if size is not None and size != s:
        img = resize(img, (size, size) + img.shape[2:], anti_aliasing=True, preserve_range=True)
    return np.clip(img, 0.0, 1.0).astype(np.float32)


def _check_size(size: object) -> None:
    if size is not None:
        check_int(size, "size", minimum=1, maximum=2**14)


def camera_image(size: int | None = 128) -> np.ndarray:
    """``skimage.data.camera()`` (512^2 grey, public domain), resized with anti-aliasing to ``size^2``, in [0, 1]:
    float32 ``(size, size)``."""
    _check_size(size)
    return _paperkit_sample_image("camera", size=size, gray=True)


def _check_array(arr: np.ndarray, what: str) -> np.ndarray:
    """Real, non-empty, finite; uint8 is scaled by 1/255, anything else must already lie in [0, 1]."""
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise InputError(f"{what} must hold real numbers, got dtype {arr.dtype}")
    if arr.size == 0:
        raise InputError(f"{what} is empty (shape {arr.shape})")
    arr = arr.astype(np.float32) / 255.0 if arr.dtype == np.uint8 else arr.astype(np.float32)
    if not np.isfinite(arr).all():
        raise InputError(f"{what} contains NaN or infinite values; clean it first")
    lo, hi = float(arr.min()), float(arr.max())
    if lo < -1e-6 or hi > 1 + 1e-6:
        raise InputError(
            f"{what} must hold values in [0, 1] (or uint8 0-255), got range [{lo:.4g}, {hi:.4g}]; "
            "rescale it first, e.g. arr / arr.max()"
        )
    return arr


def image_signal(arr: np.ndarray) -> Signal:
    """An image array ``(H, W)`` or ``(H, W, C)`` (uint8 0-255 or float 0-1) as a :class:`Signal`."""
    arr = np.asarray(arr)
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[-1] not in (1, 2, 3, 4)):
        raise InputError(f"an image must be a 2-D (H, W) or 3-D (H, W, C<=4) array, got shape {arr.shape}")
    arr = _check_array(arr, "the image")
    if arr.ndim == 2:
        arr = arr[..., None]
    if arr.shape[-1] == 4:  # drop alpha
        arr = arr[..., :3]
    if arr.shape[-1] == 2:  # grey + alpha
        arr = arr[..., :1]
    return Signal(np.clip(arr, 0.0, 1.0), "image", (0.0, 1.0))


def _existing(path: str | os.PathLike, file: bool = False) -> Path:
    p = Path(path)
    if file and p.is_dir():
        raise InputFolderError(f"{p} is a folder; expected a file", p)
    if not p.exists():
        raise InputFileError(
            f"{p}: no such file; give the path to your image (PNG/JPEG), audio (WAV) or "
            "video (NPY array (T, H, W[, C]) or a folder of frames)"
        )
    return p


def load_image(path: str | os.PathLike) -> Signal:
    """A PNG/JPEG/... image as a :class:`Signal` ``(H, W, C)`` in [0, 1] (grey stays one channel)."""
    from PIL import Image

    p = _existing(path)
    if p.is_dir():
        raise InputError(f"{p}: is a folder; give an image file (a folder of frames loads with load_video)")
    try:
        with Image.open(p) as im:
            if im.mode not in ("L", "RGB", "LA", "RGBA", "I;16", "I", "F"):
                im = im.convert("RGB")
            arr = np.asarray(im)
    except OSError as e:  # truncated or corrupt file, or not an image at all (PIL's UnidentifiedImageError)
        raise InputError(
            f"{p}: cannot read the image ({e}); the file is truncated, corrupt or not an image"
        ) from None
    if arr.dtype == np.uint16 or (arr.dtype.kind in "iu" and arr.dtype != np.uint8):
        arr = arr.astype(np.float32) / max(float(np.iinfo(arr.dtype).max), 1.0)
    return image_signal(arr)


def load_audio(path: str | os.PathLike) -> Signal:
    """A WAV file as a :class:`Signal` ``(T, channels)`` in [-1, 1] with its sample rate."""
    from scipy.io import wavfile

    p = _existing(path, file=True)
    try:
        rate, data = wavfile.read(p)
    except ValueError as e:
        raise InputError(f"{p}: not a readable WAV file ({e})") from None
    data = np.asarray(data)
    if data.ndim == 1:
        data = data[:, None]
    if np.issubdtype(data.dtype, np.integer):
        info = np.iinfo(data.dtype)
        if info.min == 0:  # 8-bit WAV is unsigned
            data = (data.astype(np.float32) - (info.max + 1) / 2) / ((info.max + 1) / 2)
        else:
            data = data.astype(np.float32) / float(-info.min)
    data = data.astype(np.float32)
    if not np.isfinite(data).all():
        raise InputError(f"{p}: the audio contains NaN or infinite samples")
    return Signal(np.clip(data, -1.0, 1.0), "audio", (-1.0, 1.0), sample_rate=int(rate))


def video_signal(arr: np.ndarray) -> Signal:
    """A video array ``(T, H, W)`` or ``(T, H, W, C)`` (uint8 or float in [0, 1]) as a :class:`Signal`."""
    arr = np.asarray(arr)
    if arr.ndim not in (3, 4):
        raise InputError(f"a video must be a (T, H, W) or (T, H, W, C) array, got shape {arr.shape}")
    arr = _check_array(arr, "the video")
    if arr.ndim == 3:
        arr = arr[..., None]
    return Signal(np.clip(arr, 0.0, 1.0), "video", (0.0, 1.0))


def load_video(path: str | os.PathLike) -> Signal:
    """A video from an ``.npy`` array ``(T, H, W[, C])`` or a folder of same-size frames (sorted by name)."""
    p = _existing(path)
    if p.is_dir():
        frames = sorted(f for f in p.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES)
        if not frames:
            raise InputFileError(f"{p}: the folder holds no image frames ({', '.join(IMAGE_SUFFIXES)})")
        imgs = [load_image(f).values for f in frames]
        if len({im.shape for im in imgs}) != 1:
            raise InputError(f"{p}: frames differ in size: {sorted({im.shape for im in imgs})}")
        return Signal(np.stack(imgs), "video", (0.0, 1.0))
    return video_signal(_load_npy(p))


def _load_npy(p: Path) -> np.ndarray:
    try:
        arr = np.load(p, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise InputFileError(f"{p}: not a readable .npy array ({e}); write it with numpy.save", p) from None
    if not isinstance(arr, np.ndarray):  # an .npz archive under a .npy name
        arr.close()
        raise InputFileError(f"{p}: an .npz archive, not one .npy array; write it with numpy.save", p)
    return arr


def load_signal(path: str | os.PathLike) -> Signal:
    """Dispatch on the suffix: images, ``.wav`` audio, ``.npy`` (2-D image or 3/4-D video) or a frame folder."""
    p = _existing(path)
    suffix = p.suffix.lower()
    if p.is_dir():
        return load_video(p)
    if suffix in IMAGE_SUFFIXES:
        return load_image(p)
    if suffix == ".wav":
        return load_audio(p)
    if suffix == ".npy":
        arr = _load_npy(p)
        if arr.ndim == 2 or (arr.ndim == 3 and arr.shape[-1] in (1, 3) and arr.shape[0] > 4):
            return image_signal(arr)
        return video_signal(arr)
    raise InputError(
        f"{p}: unsupported file type {suffix!r}; use an image ({', '.join(IMAGE_SUFFIXES)}), .wav, "
        ".npy or a folder of frames"
    )


def save_signal(
    values: np.ndarray, path: str | os.PathLike, kind: str, sample_rate: int | None = None
) -> Path:
    """Write ``values`` ``(*grid, channels)`` atomically: images as PNG (8-bit), audio as 16-bit WAV, video or any
    ``.npy`` path as a float32 array."""
    import io

    p = Path(path)
    if p.is_dir():
        raise InputFolderError(f"cannot write a signal at {p}: it is a folder", p)
    v = check_array(values, "values").astype(np.float32)
    if kind not in ("image", "audio", "video"):
        raise InputError(f"kind must be image, audio or video, got {kind!r}")
    if sample_rate is not None:
        check_int(sample_rate, "sample_rate", minimum=1, maximum=2**31 - 1)
    suffix = p.suffix.lower()
    if suffix == ".npy":
        buf = io.BytesIO()
        np.save(buf, v)
        return atomic_write_bytes(p, buf.getvalue())
    if kind == "image":
        from PIL import Image

        img = np.round(np.clip(v, 0, 1) * 255).astype(np.uint8)
        img = img[..., 0] if img.ndim == 3 and img.shape[-1] == 1 else img
        if img.ndim not in (2, 3) or (img.ndim == 3 and img.shape[-1] not in (3, 4)):
            raise InputError(
                f"an image must be (H, W), (H, W, 1), (H, W, 3) or (H, W, 4), got shape {v.shape}"
            )
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG" if suffix not in (".jpg", ".jpeg") else "JPEG")
        return atomic_write_bytes(p, buf.getvalue())
    if kind == "audio":
        from scipy.io import wavfile

        buf = io.BytesIO()
        wavfile.write(buf, int(sample_rate or 16_000), np.round(np.clip(v, -1, 1) * 32767).astype(np.int16))
        return atomic_write_bytes(p, buf.getvalue())
    if kind == "video":
        raise InputError(f"save a video as .npy (got {p.name}); e.g. out.npy")
    raise InputError(f"kind must be image, audio or video, got {kind!r}")
