"""Built-in offline data (scikit-learn's digits) and a loader for your own data from an ``.npz`` file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit.data.readers import load_npz as _paperkit_load_npz
from iclr24.paperkit.data.samples import digits_tensors
from iclr24.paperkit.data.samples import train_test_split_tensors
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe

__all__ = ["Split", "digits_split", "mnist_split", "load_npz", "load_data"]


@dataclass(frozen=True)
class Split:
    """Train/test tensors: ``x_*`` float ``[N, ...]``, ``y_*`` int64 ``[N]``; ``n_classes``."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    n_classes: int
    name: str = "data"

    def __post_init__(self) -> None:
        check_int(self.n_classes, "n_classes", minimum=1, maximum=2**20)
        for part, x, y in (("train", self.x_train, self.y_train), ("test", self.x_test, self.y_test)):
            check_tensor(x, f"x_{part}", kind="float", allow_empty=True)
            check_tensor(y, f"y_{part}", kind="int", allow_empty=True)
            if x.dim() == 0 or x.shape[0] == 0:
                raise InputError(
                    f"{self.name}: the {part} split is empty (0 samples); give at least one sample"
                )
            if x.shape[0] != y.shape[0] or y.dim() != 1:
                raise InputError(
                    f"{self.name}: {part} x {tuple(x.shape)} and y {tuple(y.shape)} do not match: expected "
                    f"x [N, ...] and y [N]"
                )
            if not bool(torch.isfinite(x).all()):
                bad = int((~torch.isfinite(x)).sum())
                raise InputError(
                    f"{self.name}: the {part} inputs hold {bad} NaN/inf values; clean or impute them first"
                )
            if int(y.min()) < 0 or int(y.max()) >= self.n_classes:
                raise InputError(
                    f"{self.name}: {part} labels must be integers in [0, {self.n_classes}), got "
                    f"[{int(y.min())}, {int(y.max())}]"
                )

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    @classmethod
    def from_data(cls, train, test, n_classes: int | None = None, name: str = "data") -> Split:
        """A Split from your own data: ``train`` and ``test`` each an ``(x, y)`` pair of tensors, a ``Dataset`` of
        ``(x, y)`` items or a ``DataLoader`` of ``(x, y)`` batches (read once, in order). ``n_classes`` defaults to
        the largest label + 1. Inputs become float32, labels int64; no normalisation is applied."""
        from iclr24.paperkit.data.user import as_tensors

        x_tr, y_tr = as_tensors(train, fields=2, what=f"{name}: train data")
        x_te, y_te = as_tensors(test, fields=2, what=f"{name}: test data")
        for part, x, y in (("train", x_tr, y_tr), ("test", x_te, y_te)):
            if not (x.is_floating_point() or x.dtype in (torch.uint8, torch.int16, torch.int32, torch.int64)):
                raise InputError(f"{name}: {part} inputs must be numeric, got {x.dtype}")
            if y.is_floating_point() or y.dtype == torch.bool or y.is_complex():
                if not (y.is_floating_point() and bool((y == y.round()).all())):
                    raise InputError(f"{name}: {part} labels must be integer class indices, got {y.dtype}")
        y_tr, y_te = y_tr.long(), y_te.long()
        if n_classes is None:
            n_classes = int(max(int(y_tr.max()), int(y_te.max()))) + 1 if len(y_tr) and len(y_te) else 1
        return cls(x_tr.float(), y_tr, x_te.float(), y_te, n_classes, name)


def _zscore(x_tr: torch.Tensor, x_te: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Standardise each feature with the *training* mean and std (test statistics are never used)."""
    mu = x_tr.mean(dim=0, keepdim=True)
    sd = x_tr.std(dim=0, keepdim=True).clamp(min=1e-6)
    return (x_tr - mu) / sd, (x_te - mu) / sd


def digits_split(seed: int = 0, flatten: bool = True) -> Split:
    """scikit-learn digits (1797 images 8x8, BSD-3): pixels / 16, an 80/20 stratified split (``seed``), z-scored
    with training statistics. ``flatten``: ``[N, 64]``, else ``[N, 1, 8, 8]``."""
    check_int(seed, "seed", minimum=0, maximum=2**32 - 1)
    x, y = digits_tensors(flatten=True)
    x_tr, y_tr, x_te, y_te = train_test_split_tensors(x, y, test_fraction=0.2, seed=seed)
    x_tr, x_te = _zscore(x_tr, x_te)
    if not flatten:
        x_tr, x_te = x_tr.view(-1, 1, 8, 8), x_te.view(-1, 1, 8, 8)
    return Split(x_tr, y_tr, x_te, y_te, 10, "digits")


def mnist_split(n_train: int | None = None, data_dir: str | os.PathLike | None = None) -> Split:
    """MNIST from paperkit's data folder (``iclr24 data get mnist``; raises paperkit's ``DataMissing`` naming that
    command when absent): the first ``n_train`` images of the 50k training split (all by default) and the 10k test
    split, as ``[N, 1, 28, 28]``, standardised with the training mean and std (one scalar each)."""
    from iclr24.paperkit.data import load_mnist

    d = load_mnist(data_dir)
    x_tr, y_tr = d["train"]
    x_te, y_te = d["test"]
    if n_train is not None:
        if not isinstance(n_train, int) or not 0 < n_train <= len(x_tr):
            raise InputError(f"n_train must be an int in [1, {len(x_tr)}], got {n_train!r}")
        x_tr, y_tr = x_tr[:n_train], y_tr[:n_train]
    a = torch.as_tensor(x_tr).view(-1, 1, 28, 28)
    b = torch.as_tensor(x_te).view(-1, 1, 28, 28)
    mu, sd = a.mean(), a.std().clamp(min=1e-6)
    return Split((a - mu) / sd, torch.as_tensor(y_tr), (b - mu) / sd, torch.as_tensor(y_te), 10, "mnist")


def load_npz(path: str | os.PathLike, seed: int = 0, flatten: bool = True) -> Split:
    """Your own data: an ``.npz`` with arrays ``x`` ``[N, ...]`` and ``y`` ``[N]`` (integer labels from 0), and
    optionally ``x_test``/``y_test`` (otherwise an 80/20 stratified split with ``seed``). Features are z-scored
    with training statistics. Save one with ``np.savez(path, x=x, y=y)``."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(
            f"data file {p} does not exist; pass --data digits or an .npz file with arrays "
            f"'x' and 'y' (np.savez(path, x=x, y=y))"
        )
    if p.suffix != ".npz":
        raise InputFileError(f"data file must be an .npz with arrays 'x' and 'y', got {p.name}", p)
    arrs = _paperkit_load_npz(p)  # no pickles; a text file, a folder or a damaged archive: one InputFileError
    missing = [k for k in ("x", "y") if k not in arrs]
    if missing:
        raise InputFileError(
            f"{p} lacks arrays {missing} (has {sorted(arrs)}); save with np.savez(path, x=x, y=y)", p
        )
    for k in ("x", "y", "x_test", "y_test"):
        if k in arrs and arrs[k].dtype.kind not in "biuf":
            raise InputError(f"{p}: array {k!r} must be numeric, got dtype {arrs[k].dtype}")
    if arrs["x"].shape[0] == 0:
        raise InputError(f"{p}: array 'x' is empty (0 samples); give at least a few samples per class")
    if arrs["y"].dtype.kind == "f" and not np.all(np.mod(arrs["y"], 1) == 0):
        raise InputError(f"{p}: labels 'y' must be integers (class indices from 0), got non-integer floats")
    if not np.isfinite(arrs["x"]).all():
        raise InputError(
            f"{p}: array 'x' holds {int((~np.isfinite(arrs['x'])).sum())} NaN/inf values; clean or impute them"
        )
    x = torch.as_tensor(arrs["x"], dtype=torch.float32)
    y = torch.as_tensor(arrs["y"]).long()
    if y.dim() != 1 or len(x) != len(y):
        raise InputError(
            f"y must be [N] labels matching x [N, ...]; got x {tuple(x.shape)}, y {tuple(y.shape)}"
        )
    if int(y.min()) < 0:
        raise InputError("labels y must be integers >= 0")
    if "x_test" in arrs and "y_test" in arrs:
        x_tr, y_tr = x, y
        x_te = torch.as_tensor(arrs["x_test"], dtype=torch.float32)
        y_te = torch.as_tensor(arrs["y_test"]).long()
    else:
        x_tr, y_tr, x_te, y_te = train_test_split_tensors(x, y, test_fraction=0.2, seed=seed)
    shape = x_tr.shape[1:]
    a, b = _zscore(x_tr.reshape(len(x_tr), -1), x_te.reshape(len(x_te), -1))
    if not flatten:
        a, b = a.view(-1, *shape), b.view(-1, *shape)
    n_classes = int(max(int(y_tr.max()), int(y_te.max()))) + 1
    return Split(a, y_tr, b, y_te, n_classes, p.stem)


def cifar10_split(path: str | os.PathLike) -> Split:
    """CIFAR-10 from a user path (the ``cifar-10-batches-py`` folder of the official python release, or the folder
    holding it; read with paperkit's restricted unpickler): float ``[N, 3, 32, 32]`` in [0, 1], not normalised,
    as the official ``configs/dataset/cifar10.yaml`` (``normalize: False``)."""
    from iclr24.paperkit.data import load_cifar10

    d = load_cifar10(path)

    def t(x):
        return torch.from_numpy(x).permute(0, 3, 1, 2).float().div_(255.0).contiguous()

    (xa, ya), (xb, yb) = d["train"], d["test"]
    return Split(t(xa), torch.from_numpy(ya), t(xb), torch.from_numpy(yb), 10, "cifar10")


def load_data(
    spec: str, seed: int = 0, flatten: bool = True, data_dir: str | os.PathLike | None = None
) -> Split:
    """``"digits"`` (built in), ``"mnist"`` (paperkit's data folder, see :func:`mnist_split`),
    ``"cifar10:PATH"`` (see :func:`cifar10_split`) or a path to an ``.npz`` (see :func:`load_npz`)."""
    if not isinstance(spec, str | os.PathLike):
        raise InputError(
            f"spec must be 'digits', 'mnist', 'cifar10:PATH' or an .npz path, got {describe(spec)}"
        )
    spec = str(spec)
    if spec.startswith("cifar10:"):
        d = cifar10_split(spec.split(":", 1)[1])
        if flatten:
            d = Split(d.x_train.flatten(1), d.y_train, d.x_test.flatten(1), d.y_test, 10, "cifar10")
        return d
    if spec == "digits":
        return digits_split(seed=seed, flatten=flatten)
    if spec == "mnist":
        d = mnist_split(data_dir=data_dir)
        if flatten:
            d = Split(d.x_train.flatten(1), d.y_train, d.x_test.flatten(1), d.y_test, 10, "mnist")
        return d
    return load_npz(spec, seed=seed, flatten=flatten)
