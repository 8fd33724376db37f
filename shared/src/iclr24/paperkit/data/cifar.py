"""CIFAR-10 from a user path: the official "python version" (``cifar-10-python.tar.gz`` unpacked to
``cifar-10-batches-py/``), read with the restricted unpickler. CIFAR is not shipped in any wheel: download it
yourself from https://www.cs.toronto.edu/~kriz/cifar.html and pass the folder."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..errors import InputFileError
from ..errors import InputNotAFolderError
from ._unpickle import load_restricted

__all__ = [
    "load_cifar10",
    "read_cifar_batch",
    "CIFAR10_CLASSES",
    "CIFAR10_TRAIN_BATCHES",
    "CIFAR10_TEST_BATCH",
]

CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)
CIFAR10_TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR10_TEST_BATCH = "test_batch"
_FOLDER = "cifar-10-batches-py"


def _key(d: dict, name: str):
    for k in (
        name,
        name.encode(),
    ):  # Python 2 pickles give str keys (latin-1), re-pickled ones may give bytes
        if k in d:
            return d[k]
    raise KeyError(name)


def read_cifar_batch(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR-10 batch file: images uint8 ``(N, 32, 32, 3)`` (HWC, RGB) and labels int64 ``(N,)``.

    The file is a pickled dict with ``data`` (uint8 ``(N, 3072)``, the 1024 red, then green, then blue pixels of
    each row-major 32x32 image) and ``labels`` (N ints in 0..9).
    """
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"CIFAR-10 batch file not found: {path}")
    try:
        with open(path, "rb") as fh:
            obj = load_restricted(fh)
    except pickle.UnpicklingError as e:  # includes UnsafePickle
        raise InputError(f"{path}: not a valid CIFAR-10 batch: {e}") from None
    except (EOFError, ValueError, TypeError, IndexError) as e:  # truncated or foreign bytes
        raise InputError(f"{path}: not a readable CIFAR-10 batch (truncated or corrupt?): {e}") from None
    if not isinstance(obj, dict):
        raise InputError(
            f"{path}: expected a pickled dict with 'data' and 'labels', got {type(obj).__name__}"
        )
    try:
        data, labels = np.asarray(_key(obj, "data")), np.asarray(_key(obj, "labels"))
    except KeyError as e:
        raise InputError(f"{path}: CIFAR-10 batch has no {e.args[0]!r} entry") from None
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise InputError(f"{path}: 'data' is {data.dtype} {data.shape}, expected uint8 (N, 3072)")
    if labels.shape != (len(data),):
        raise InputError(f"{path}: {labels.shape} labels for {len(data)} images")
    if labels.size and (not np.issubdtype(labels.dtype, np.integer) or labels.min() < 0 or labels.max() > 9):
        raise InputError(f"{path}: labels outside the integers 0..9")
    images = np.ascontiguousarray(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    return images, labels.astype(np.int64)


def _batches_folder(path: Path) -> Path:
    if not path.exists():
        raise InputFileError(f"CIFAR-10 folder not found: {path} (expected the unpacked {_FOLDER}/ folder)")
    if not path.is_dir():
        raise InputNotAFolderError(f"{path} is a file; expected the unpacked {_FOLDER}/ folder of CIFAR-10")
    inner = path / _FOLDER
    return inner if inner.is_dir() and not (path / CIFAR10_TEST_BATCH).exists() else path


def load_cifar10(path: str | os.PathLike) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """CIFAR-10 from ``path`` (the ``cifar-10-batches-py`` folder, or the folder that holds it).

    Returns ``{"train": (x, y), "test": (x, y)}``: ``x`` uint8 ``(N, 32, 32, 3)``, ``y`` int64 ``(N,)``
    (50,000 and 10,000 images in the real set); class names in :data:`CIFAR10_CLASSES`.
    """
    folder = _batches_folder(Path(path).expanduser())
    needed = (*CIFAR10_TRAIN_BATCHES, CIFAR10_TEST_BATCH)
    missing = [n for n in needed if not (folder / n).is_file()]
    if missing:
        raise InputFileError(
            f"CIFAR-10 batch file(s) missing in {folder}: {', '.join(missing)} (expected {', '.join(needed)})"
        )
    train = [read_cifar_batch(folder / n) for n in CIFAR10_TRAIN_BATCHES]
    return {
        "train": (np.concatenate([x for x, _ in train]), np.concatenate([y for _, y in train])),
        "test": read_cifar_batch(folder / CIFAR10_TEST_BATCH),
    }
