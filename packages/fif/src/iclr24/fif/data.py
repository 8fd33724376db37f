"""Built-in offline data (the paper's toy manifolds), and loaders for real data from a path the user gives.

- ``toy_dataset("sine" | "s_curve" | "swiss_roll", n, seed)``: generated in-process (official ``fff/data/toy.py``
  for ``sine``: x1 ~ N(0, 1), x2 = sin(pi x1 / 2); sklearn's ``make_s_curve`` / ``make_swiss_roll``).
- ``load_array(path)``: a float matrix from ``.npy`` / ``.npz`` (first array) / ``.csv`` (comma-separated numbers;
  a non-numeric first line is a header). ``.pkl``/``.pickle`` files are refused (no unpickling of user files).
- ``load_tabular(name, root)``: POWER, GAS, HEPMASS, MINIBOONE, BSDS300 from the MAF preprocessed layout, checked
  against the paper's data dimension D.
- ``standardize(train, *others)``: z-scoring with the training split's statistics.
"""

from __future__ import annotations

import csv
import math
import zipfile
from pathlib import Path

import numpy as np
import torch

__all__ = [
    "TOY_DATASETS",
    "TABULAR_DATASETS",
    "TABULAR_LATENT_DIMS",
    "toy_dataset",
    "toy_splits",
    "load_array",
    "load_tabular",
    "standardize",
    "check_data",
]

TOY_DATASETS = ("sine", "s_curve", "swiss_roll")
# name -> (expected file under root, data dim D); the MAF preprocessed layout (Papamakarios et al., 2017)
TABULAR_DATASETS = {
    "power": ("power/data.npy", 6),
    "gas": ("gas/data.npy", 8),
    "hepmass": ("hepmass/data.npy", 21),
    "miniboone": ("miniboone/data.npy", 43),
    "bsds300": ("BSDS300/data.npy", 63),
}
# official configs/fif/tabular-*.yaml latent dims
TABULAR_LATENT_DIMS = {"power": 3, "gas": 2, "hepmass": 10, "miniboone": 21, "bsds300": 32}
_MANIFOLD_DIM = {"sine": 1, "s_curve": 2, "swiss_roll": 2}


def _check_n(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"the number of points must be an int >= 1, got {n!r}")
    return n


def toy_dataset(name: str, n: int, seed: int = 0) -> torch.Tensor:
    """``n`` points of a toy manifold, float32 (n, D), not standardised. ``sine``: D=2, d=1; ``s_curve`` and
    ``swiss_roll``: D=3, d=2."""
    n = _check_n(n)
    rng = np.random.default_rng(seed)
    if name == "sine":
        x1 = rng.standard_normal(n)
        x = np.stack([x1, np.sin(math.pi * x1 / 2)], axis=1)
    elif name == "s_curve":
        from sklearn.datasets import make_s_curve

        x, _ = make_s_curve(n, random_state=int(rng.integers(2**31)))
    elif name == "swiss_roll":
        from sklearn.datasets import make_swiss_roll

        x, _ = make_swiss_roll(n, random_state=int(rng.integers(2**31)))
    else:
        raise ValueError(f"unknown toy dataset {name!r}; expected one of {TOY_DATASETS}")
    return torch.as_tensor(x, dtype=torch.float32)


def toy_splits(name: str, n_train: int, n_test: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Standardised (train, test) splits of a toy manifold and its intrinsic dimension d."""
    x = toy_dataset(name, _check_n(n_train) + _check_n(n_test), seed)
    train, test = standardize(x[:n_train], x[n_train:])
    return train, test, _MANIFOLD_DIM[name]


def standardize(train: torch.Tensor, *others: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Z-score every split with the training split's mean and std (constant columns keep std 1)."""
    mean = train.mean(0, keepdim=True)
    std = train.std(0, keepdim=True)
    std = torch.where(std > 0, std, torch.ones_like(std))
    return tuple((t - mean) / std for t in (train, *others))


def check_data(x: object, name: str = "data") -> torch.Tensor:
    """A non-empty, finite float matrix (n, D), or a clear ``ValueError``."""
    if isinstance(x, np.ndarray):
        x = torch.as_tensor(x)
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a tensor or array of shape (n, D), got {type(x).__name__}")
    if x.ndim != 2:
        raise ValueError(f"{name} must have shape (n, D), got {tuple(x.shape)}")
    if x.shape[0] == 0:
        raise ValueError(f"{name} is empty (0 rows)")
    if not x.dtype.is_floating_point:
        x = x.float()
    if not torch.isfinite(x).all():
        bad = int((~torch.isfinite(x)).any(1).sum())
        raise ValueError(f"{name} contains NaN or inf in {bad} of {x.shape[0]} rows")
    return x


def load_array(path: str | Path) -> torch.Tensor:
    """A float32 matrix from ``.npy``, ``.npz`` (its first array) or ``.csv``; 3-D+ arrays are flattened per row."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"data file not found: {p} (expected a .npy, .npz or .csv file)")
    if p.is_dir():
        raise ValueError(f"expected a data file (.npy, .npz or .csv), got a directory: {p}")
    suffix = p.suffix.lower()
    try:
        if suffix == ".npy":
            arr = np.load(p, allow_pickle=False)
        elif suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                if not z.files:
                    raise ValueError(f"{p} holds no arrays")
                arr = z[z.files[0]]
        elif suffix == ".csv":
            with p.open(newline="") as fh:
                rows = [r for r in csv.reader(fh) if r]
            if rows:
                try:
                    [float(v) for v in rows[0]]
                except ValueError:
                    rows = rows[1:]  # header
            arr = np.asarray([[float(v) for v in r] for r in rows], dtype=np.float64)
        elif suffix in (".pkl", ".pickle"):
            raise ValueError(f"{p}: pickle files are not loaded (unsafe); convert it to .npy or .csv first")
        else:
            raise ValueError(f"{p}: unsupported data format {suffix!r}; expected .npy, .npz or .csv")
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        if isinstance(e, ValueError) and str(e).startswith(str(p)):
            raise
        raise ValueError(f"{p}: not a readable {suffix} array file ({e})") from e
    if arr.dtype.kind not in "fiub":
        raise ValueError(f"{p}: expected a numeric array, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[:, None]
    elif arr.ndim > 2:
        arr = arr.reshape(arr.shape[0], -1)
    return check_data(torch.as_tensor(arr.astype(np.float32)), name=str(p))


def load_tabular(name: str, root: str | Path) -> torch.Tensor:
    """One of the paper's tabular datasets as an (n, D) float32 matrix, from ``root/<name>/data.npy``.

    Expects the MAF preprocessing (Papamakarios et al., 2017, ``datasets/*.py``) already applied and saved as one
    ``.npy`` (train, validation and test rows concatenated or a single split); D is checked against the paper's.
    """
    key = name.lower()
    if key not in TABULAR_DATASETS:
        raise ValueError(f"unknown tabular dataset {name!r}; expected one of {tuple(TABULAR_DATASETS)}")
    rel, dim = TABULAR_DATASETS[key]
    path = Path(root) / rel
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: download {key.upper()} (MAF preprocessed, zenodo.org/record/1161203), run the MAF "
            f"preprocessing and save the (n, {dim}) matrix with numpy.save to {path}"
        )
    x = load_array(path)
    if x.shape[1] != dim:
        raise ValueError(f"{path}: {key} has D={dim} columns after MAF preprocessing, got {x.shape[1]}")
    return x
