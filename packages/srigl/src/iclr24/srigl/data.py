"""Built-in offline data (scikit-learn's digits) and a loader for your own data from an ``.npz`` file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit.data import digits_tensors, train_test_split_tensors

__all__ = ["Split", "digits_split", "load_npz", "load_data"]


@dataclass(frozen=True)
class Split:
    """Train/test tensors: ``x_*`` float ``[N, ...]``, ``y_*`` int64 ``[N]``; ``n_classes``."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    n_classes: int
    name: str = "data"

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])


def _zscore(x_tr: torch.Tensor, x_te: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Standardise each feature with the *training* mean and std (test statistics are never used)."""
    mu = x_tr.mean(dim=0, keepdim=True)
    sd = x_tr.std(dim=0, keepdim=True).clamp(min=1e-6)
    return (x_tr - mu) / sd, (x_te - mu) / sd


def digits_split(seed: int = 0, flatten: bool = True) -> Split:
    """scikit-learn digits (1797 images 8x8, BSD-3): pixels / 16, an 80/20 stratified split (``seed``), z-scored
    with training statistics. ``flatten``: ``[N, 64]``, else ``[N, 1, 8, 8]``."""
    x, y = digits_tensors(flatten=True)
    x_tr, y_tr, x_te, y_te = train_test_split_tensors(x, y, test_fraction=0.2, seed=seed)
    x_tr, x_te = _zscore(x_tr, x_te)
    if not flatten:
        x_tr, x_te = x_tr.view(-1, 1, 8, 8), x_te.view(-1, 1, 8, 8)
    return Split(x_tr, y_tr, x_te, y_te, 10, "digits")


def load_npz(path: str | os.PathLike, seed: int = 0, flatten: bool = True) -> Split:
    """Your own data: an ``.npz`` with arrays ``x`` ``[N, ...]`` and ``y`` ``[N]`` (integer labels from 0), and
    optionally ``x_test``/``y_test`` (otherwise an 80/20 stratified split with ``seed``). Features are z-scored
    with training statistics. Save one with ``np.savez(path, x=x, y=y)``."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(
            f"data file {p} does not exist; pass --data digits or an .npz file with arrays "
            f"'x' and 'y' (np.savez(path, x=x, y=y))"
        )
    if p.suffix != ".npz":
        raise ValueError(f"data file must be an .npz with arrays 'x' and 'y', got {p.name}")
    with np.load(p, allow_pickle=False) as d:
        missing = [k for k in ("x", "y") if k not in d.files]
        if missing:
            raise ValueError(
                f"{p} lacks arrays {missing} (has {d.files}); save with np.savez(path, x=x, y=y)"
            )
        arrs = {k: d[k] for k in d.files}
    x = torch.as_tensor(arrs["x"], dtype=torch.float32)
    y = torch.as_tensor(arrs["y"]).long()
    if y.dim() != 1 or len(x) != len(y):
        raise ValueError(
            f"y must be [N] labels matching x [N, ...]; got x {tuple(x.shape)}, y {tuple(y.shape)}"
        )
    if int(y.min()) < 0:
        raise ValueError("labels y must be integers >= 0")
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


def load_data(spec: str, seed: int = 0, flatten: bool = True) -> Split:
    """``"digits"`` (built in) or a path to an ``.npz`` (see :func:`load_npz`)."""
    if spec == "digits":
        return digits_split(seed=seed, flatten=flatten)
    return load_npz(spec, seed=seed, flatten=flatten)
