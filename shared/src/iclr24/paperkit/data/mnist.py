"""MNIST from the data folder (``iclr24 data get mnist``): the classic ``mnist.pkl.gz``, read without pickle's
arbitrary code execution."""

from __future__ import annotations

import gzip
import os
import pickle
import zlib
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..errors import InputFileError
from ._unpickle import load_restricted
from .folder import require_data

__all__ = ["load_mnist", "read_mnist_pickle"]

_MNIST_SPLITS = ("train", "val", "test")


def read_mnist_pickle(path: str | os.PathLike) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Read a ``mnist.pkl.gz``: a gzip pickle of ``((x_train, y_train), (x_val, y_val), (x_test, y_test))``.

    Returns ``{"train": (x, y), "val": (x, y), "test": (x, y)}`` with ``x`` float32 ``(N, 784)`` in ``[0, 1]``
    and ``y`` int64 ``(N,)`` in ``0..9``. Only numpy arrays and plain containers are unpickled.
    """
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"MNIST file not found: {path}")
    try:
        with gzip.open(path, "rb") as fh:
            obj = load_restricted(fh)
    except pickle.UnpicklingError as e:  # includes UnsafePickle
        raise InputError(f"{path}: not a valid MNIST pickle: {e}") from None
    except (EOFError, OSError, zlib.error, ValueError, TypeError, IndexError) as e:  # truncated, not gzip
        raise InputError(f"{path}: not a readable gzip pickle (truncated or corrupt?): {e}") from None
    if not isinstance(obj, (tuple, list)) or len(obj) != 3:
        raise InputError(f"{path}: expected a tuple of 3 (x, y) splits, got {type(obj).__name__}")
    out = {}
    for split, pair in zip(_MNIST_SPLITS, obj):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InputError(f"{path}: split {split!r} is not an (x, y) pair")
        x, y = (np.asarray(a) for a in pair)
        if x.ndim != 2 or x.shape[1] != 784 or y.shape != (len(x),):
            raise InputError(
                f"{path}: split {split!r} has x {x.shape} and y {y.shape}, expected (N, 784) and (N,)"
            )
        x = x.astype(np.float32, copy=False)
        if x.size and (not np.isfinite(x).all() or x.min() < 0 or x.max() > 1):
            raise InputError(f"{path}: split {split!r} has pixel values outside [0, 1]")
        if y.size and (not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() > 9):
            raise InputError(f"{path}: split {split!r} has labels outside the integers 0..9")
        out[split] = (x, y.astype(np.int64, copy=False))
    return out


def load_mnist(data_dir: str | os.PathLike | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """MNIST from the data folder: 50k/10k/10k ``train``/``val``/``test`` splits of ``(x, y)``, ``x`` float32
    ``(N, 784)`` in ``[0, 1]``, ``y`` int64 ``(N,)``. Raises ``DataMissing`` naming ``iclr24 data get mnist``."""
    return read_mnist_pickle(require_data("mnist", data_dir))
