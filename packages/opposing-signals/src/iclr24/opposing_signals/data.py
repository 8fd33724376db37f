"""Built-in offline data with a planted opposing signal, and loaders for real datasets from a user path.

Real data: ``mnist_subset`` (MNIST from paperkit's data folder: ``iclr24 data get mnist``) and ``cifar10_subset``
(the python-pickle CIFAR-10 release, ``cifar-10-batches-py/``, from a path you give); both are read by paperkit's
restricted unpickler (arrays only).

``make_opposing_digits``: scikit-learn's 8x8 digits (values / 16), with a large-magnitude feature (``+alpha`` on a
3x3 patch in the top-left corner, where digits are blank) added to ``n_a`` training images of class ``class_a``
and ``n_b`` of class ``class_b``: one feature shared by two groups with different labels, the paper's
"opposing signal" (e.g. sky behind planes and behind other classes).
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputNotAFolderError

__all__ = ["TOP_LEFT_PATCH", "OpposingDigits", "make_opposing_digits", "mnist_subset", "cifar10_subset"]

TOP_LEFT_PATCH = (0, 1, 2, 8, 9, 10, 16, 17, 18)


@functools.lru_cache(maxsize=1)
def digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 digits as ``(x, y)``: ``x`` float32 ``(1797, 64)`` in ``[0, 1]`` (values / 16), ``y``
    int64; read-only, parsed once per process.

    Read from the file scikit-learn ships (``sklearn/datasets/data/digits.csv.gz``, parsed as ``load_digits``
    parses it, a test checks they are equal) without importing scikit-learn: that import alone cost 8.4 CPU s
    per process here without compiled bytecode, about 3.5 with it. Falls back to ``load_digits`` when the file
    is not there."""
    spec = importlib.util.find_spec("sklearn")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    path = Path(roots[0], "datasets", "data", "digits.csv.gz") if roots else None
    if path is not None and path.is_file():
        with gzip.open(path, "rt") as f:
            data = np.loadtxt(f, delimiter=",")
        flat, target = data[:, :-1], data[:, -1].astype(int)
    else:
        from sklearn.datasets import load_digits

        digits = load_digits()
        flat, target = digits.data, digits.target
    x = flat.astype(np.float32) / 16.0
    y = target.astype(np.int64)
    x.setflags(write=False)
    y.setflags(write=False)
    return x, y


@dataclass
class OpposingDigits:
    """Training/test tensors and where the signal was planted (``group_a``/``group_b``: training indices)."""

    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor
    group_a: Tensor
    group_b: Tensor
    alpha: float
    patch: tuple[int, ...]

    @property
    def planted(self) -> Tensor:
        """Bool mask over the training set: the images that carry the planted feature."""
        m = torch.zeros(self.x_train.shape[0], dtype=torch.bool)
        m[self.group_a] = True
        m[self.group_b] = True
        return m

    @property
    def base_rate(self) -> float:
        """Fraction of training images that carry the planted feature (precision of a random pick)."""
        return float(self.planted.float().mean())


def make_opposing_digits(
    alpha: float = 10.0,
    n_a: int = 60,
    n_b: int = 30,
    class_a: int = 0,
    class_b: int = 1,
    patch: Sequence[int] = TOP_LEFT_PATCH,
    n_train: int = 1200,
    seed: int = 0,
) -> OpposingDigits:
    """Digits with ``+alpha`` on ``patch`` (pixel indices of the 8x8 image) in ``n_a`` images of ``class_a`` and
    ``n_b`` of ``class_b`` (training split only). ``alpha = 0`` or ``n_a = n_b = 0`` gives the clean data set with
    the same split. Features are in ``[0, 1]`` before planting; float32, labels int64."""
    if (
        isinstance(alpha, bool)
        or not isinstance(alpha, int | float)
        or not np.isfinite(alpha)
        or not 0 <= alpha <= 1e6
    ):
        # the features are float32 in [0, 1]: beyond 1e6 the planted signal is no longer a number the model can use
        raise InputError(f"alpha must be a number in [0, 1e6], got {alpha!r}")
    if class_a == class_b or not (0 <= class_a <= 9 and 0 <= class_b <= 9):
        raise InputError(
            f"class_a and class_b must be two different digits in 0..9, got {class_a} and {class_b}"
        )
    patch = tuple(int(p) for p in patch)
    if not patch or any(not 0 <= p < 64 for p in patch):
        raise InputError(f"patch must be a non-empty list of pixel indices in [0, 63], got {patch}")
    x, y = digits_arrays()
    if isinstance(n_train, bool) or not isinstance(n_train, int) or not 10 <= n_train < len(y):
        raise InputError(f"n_train must be an int in [10, {len(y) - 1}], got {n_train!r}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    tr, te = perm[:n_train], perm[n_train:]
    xtr, ytr = x[tr].copy(), y[tr]
    groups = []
    for cls, cnt in ((class_a, n_a), (class_b, n_b)):
        pool = np.flatnonzero(ytr == cls)
        if isinstance(cnt, bool) or not isinstance(cnt, int) or not 0 <= cnt <= len(pool):
            raise InputError(
                f"n for class {cls} must be an int in [0, {len(pool)}] (its training images), got {cnt!r}"
            )
        pick = np.sort(rng.choice(pool, size=cnt, replace=False)) if cnt else np.zeros(0, dtype=np.int64)
        groups.append(pick)
        for p in patch:
            xtr[pick, p] += alpha
    return OpposingDigits(
        x_train=torch.from_numpy(xtr),
        y_train=torch.from_numpy(ytr),
        x_test=torch.from_numpy(x[te].copy()),
        y_test=torch.from_numpy(y[te].copy()),
        group_a=torch.from_numpy(groups[0].astype(np.int64)),
        group_b=torch.from_numpy(groups[1].astype(np.int64)),
        alpha=float(alpha),
        patch=patch,
    )


def _subset(x: np.ndarray, y: np.ndarray, n: int, seed: int) -> tuple[Tensor, Tensor]:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(y):
        raise InputError(f"n must be an int in [1, {len(y)}] (the images available), got {n!r}")
    idx = np.sort(np.random.default_rng(seed).permutation(len(y))[:n])
    return torch.from_numpy(np.ascontiguousarray(x[idx], dtype=np.float32)), torch.from_numpy(
        y[idx].astype(np.int64)
    )


def mnist_subset(data_dir=None, n: int = 5000, seed: int = 0, split: str = "train") -> tuple[Tensor, Tensor]:
    """``n`` MNIST images of ``split`` (drawn with ``seed``): ``x`` float32 ``(n, 784)`` in [0, 1], ``y`` int64.

    Raises ``DataMissing`` (a ``FileNotFoundError``) naming ``iclr24 data get mnist`` when the file is absent."""
    from iclr24.paperkit.data import load_mnist

    splits = load_mnist(data_dir)
    if split not in splits:
        raise InputError(f"split must be one of {sorted(splits)}, got {split!r}")
    return _subset(*splits[split], n, seed)


def cifar10_subset(path, n: int = 5000, seed: int = 0, split: str = "train") -> tuple[Tensor, Tensor]:
    """``n`` CIFAR-10 images from the ``cifar-10-batches-py`` folder at ``path``: ``x`` float32 ``(n, 3, 32, 32)``
    in [0, 1] (channels first), ``y`` int64. A missing folder or batch file is a ``FileNotFoundError`` naming it."""
    from iclr24.paperkit.data import load_cifar10

    try:
        splits = load_cifar10(path)
    except InputFileError:
        raise
    except NotADirectoryError as e:
        raise InputNotAFolderError(str(e), path) from None
    except (FileNotFoundError, OSError, ValueError) as e:
        raise InputFileError(str(e), path) from None
    if split not in splits:
        raise InputError(f"split must be one of {sorted(splits)}, got {split!r}")
    x, y = splits[split]
    x = x.transpose(0, 3, 1, 2).astype(np.float32) / 255.0
    return _subset(x, y, n, seed)
