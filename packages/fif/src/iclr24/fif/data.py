"""Built-in offline data (the paper's toy manifolds), and loaders for real data from a path the user gives.

- ``toy_dataset("sine" | "s_curve" | "swiss_roll", n, seed)``: generated in-process (official ``fff/data/toy.py``
  for ``sine``: x1 ~ N(0, 1), x2 = sin(pi x1 / 2); ``s_curve`` draws the same points as sklearn's ``make_s_curve``
  without importing sklearn (tested equal); ``swiss_roll`` is sklearn's ``make_swiss_roll``).
- ``load_array(path, key=None)``: a float matrix from ``.npy`` / ``.npz`` (its only array, or the one named ``key``)
  / ``.csv`` (comma-separated numbers; a non-numeric first line is a header). ``.pkl``/``.pickle`` files are refused
  (no unpickling of user files).
- ``load_tabular(name, root)``: POWER, GAS, HEPMASS, MINIBOONE, BSDS300 from the files of the MAF data archive
  (MAF preprocessing applied here), checked against the paper's data dimension D.
- ``load_image_folder(path, size=None, grayscale=False)``: every image under a folder (recursively, PNG/JPEG/BMP/
  GIF/WebP) as flat float32 rows in [0, 1], with their (C, H, W) shape; all images must share a size unless
  ``size`` resizes them.
- ``standardize(train, *others)``: z-scoring with the training split's statistics.
"""

from __future__ import annotations

import csv
import math
import zipfile
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

__all__ = [
    "TOY_DATASETS",
    "TOY_ALIASES",
    "TABULAR_DATASETS",
    "TABULAR_LATENT_DIMS",
    "toy_dataset",
    "toy_splits",
    "load_array",
    "load_tabular",
    "load_image_folder",
    "IMAGE_SUFFIXES",
    "standardize",
    "check_data",
]

TOY_DATASETS = ("sine", "s_curve", "swiss_roll")
TOY_ALIASES = {
    "scurve": "s_curve",
    "s-curve": "s_curve",
    "swissroll": "swiss_roll",
    "swiss-roll": "swiss_roll",
}
# name -> (expected file under root, data dim D); the MAF preprocessed layout (Papamakarios et al., 2017)
TABULAR_DATASETS = {
    "power": ("power/data.npy", 6),
    "gas": ("gas/data.npy", 8),
    "hepmass": ("hepmass/data.npy", 21),
    "miniboone": ("miniboone/data.npy", 43),
    "bsds300": ("BSDS300/data.npy", 63),
}
# official configs/fif/tabular-*.yaml latent dims; BSDS300 has no official config (32, about D/2, is this package's)
TABULAR_LATENT_DIMS = {"power": 3, "gas": 2, "hepmass": 10, "miniboone": 21, "bsds300": 32}
_MANIFOLD_DIM = {"sine": 1, "s_curve": 2, "swiss_roll": 2}


def _check_n(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 10**8:
        raise InputError(f"the number of points must be an int >= 1 (at most 10**8), got {n!r}")
    return n


def toy_dataset(name: str, n: int, seed: int = 0) -> torch.Tensor:
    """``n`` points of a toy manifold, float32 (n, D), not standardised. ``sine``: D=2, d=1; ``s_curve`` and
    ``swiss_roll``: D=3, d=2."""
    n = _check_n(n)
    name = TOY_ALIASES.get(name, name)
    rng = np.random.default_rng(seed)
    if name == "sine":
        x1 = rng.standard_normal(n)
        x = np.stack([x1, np.sin(math.pi * x1 / 2)], axis=1)
    elif name == "s_curve":
        x = _s_curve(n, int(rng.integers(2**31)))
    elif name == "swiss_roll":
        from sklearn.datasets import make_swiss_roll

        x, _ = make_swiss_roll(n, random_state=int(rng.integers(2**31)))
    else:
        raise InputError(f"unknown toy dataset {name!r}; expected one of {TOY_DATASETS}")
    return torch.as_tensor(x, dtype=torch.float32)


def _s_curve(n: int, random_state: int) -> np.ndarray:
    """sklearn's ``make_s_curve(n, noise=0.0, random_state=random_state)`` points, drawn the same way from the same
    ``RandomState`` stream (equal to sklearn's, tested) without importing sklearn (its import alone costs several
    CPU seconds, more than generating the data): t ~ U(-3 pi / 2, 3 pi / 2), x = (sin t, 2 U(0, 1), sign(t)(cos t - 1))."""
    gen = np.random.RandomState(random_state)
    t = 3 * np.pi * (gen.uniform(size=(1, n)) - 0.5)
    x = np.empty((n, 3), dtype=np.float64)
    x[:, 0] = np.sin(t)
    x[:, 1] = 2.0 * gen.uniform(size=n)
    x[:, 2] = np.sign(t) * (np.cos(t) - 1)
    return x


def toy_splits(name: str, n_train: int, n_test: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Standardised (train, test) splits of a toy manifold and its intrinsic dimension d."""
    x = toy_dataset(name, _check_n(n_train) + _check_n(n_test), seed)
    train, test = standardize(x[:n_train], x[n_train:])
    return train, test, _MANIFOLD_DIM[TOY_ALIASES.get(name, name)]


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
        raise InputError(f"{name} must be a tensor or array of shape (n, D), got {type(x).__name__}")
    if x.ndim != 2:
        raise InputError(f"{name} must have shape (n, D), got {tuple(x.shape)}")
    if x.shape[0] == 0:
        raise InputError(f"{name} is empty (0 rows)")
    if not x.dtype.is_floating_point:
        x = x.float()
    if not torch.isfinite(x).all():
        bad = int((~torch.isfinite(x)).any(1).sum())
        raise InputError(f"{name} contains NaN or inf in {bad} of {x.shape[0]} rows")
    return x


def load_array(path: str | Path, key: str | None = None) -> torch.Tensor:
    """A float32 matrix from ``.npy``, ``.npz`` or ``.csv``; 3-D+ arrays are flattened per row.

    An ``.npz`` holding one array gives that array; one holding several needs ``key`` (the array's name; CLI
    ``--npz-key``): it is refused rather than guessed."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"data file not found: {p} (expected a .npy, .npz or .csv file)")
    if p.is_dir():
        raise InputError(f"expected a data file (.npy, .npz or .csv), got a directory: {p}")
    suffix = p.suffix.lower()
    if key is not None and suffix != ".npz":
        raise InputError(f"{p}: an array name (key={key!r}, --npz-key) applies to .npz files only")
    try:
        if suffix == ".npy":
            arr = np.load(p, allow_pickle=False)
            if not isinstance(arr, np.ndarray):  # an .npz archive under a .npy name
                arr.close()
                raise InputFileError(f"{p}: an .npz archive, not one .npy array", p)
        elif suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                if not z.files:
                    raise InputError(f"{p} holds no arrays")
                if key is None and len(z.files) > 1:
                    raise InputError(
                        f"{p} holds {len(z.files)} arrays ({', '.join(z.files[:8])}); name the data matrix with "
                        "key= (CLI: --npz-key NAME)"
                    )
                if key is not None and key not in z.files:
                    raise InputError(f"{p} has no array {key!r}; it holds {', '.join(z.files[:8])}")
                arr = z[z.files[0] if key is None else key]
            if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biuf":
                raise InputFileError(f"{p}: its array is not numeric data", p)
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
            raise InputError(f"{p}: pickle files are not loaded (unsafe); convert it to .npy or .csv first")
        else:
            raise InputError(f"{p}: unsupported data format {suffix!r}; expected .npy, .npz or .csv")
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        if isinstance(e, ValueError) and str(e).startswith(str(p)):
            raise
        raise InputError(f"{p}: not a readable {suffix} array file ({e})") from e
    if arr.dtype.kind not in "fiub":
        raise InputError(f"{p}: expected a numeric array, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[:, None]
    elif arr.ndim > 2:
        arr = arr.reshape(arr.shape[0], -1)
    return check_data(torch.as_tensor(arr.astype(np.float32)), name=str(p))


def _drop_correlated(x: np.ndarray, threshold: float = 0.98) -> np.ndarray:
    """GAS (MAF preprocessing): while some column is correlated above ``threshold`` with another column, drop the
    first such column."""
    while True:
        c = np.corrcoef(x, rowvar=False)
        high = (np.abs(c) > threshold).sum(1) > 1  # every column is perfectly correlated with itself
        if not high.any():
            return x
        x = np.delete(x, int(np.argmax(high)), axis=1)


def _drop_repeated(x: np.ndarray, max_repeats: int = 5) -> np.ndarray:
    """HEPMASS (MAF preprocessing): drop the columns whose smallest value occurs more than ``max_repeats`` times."""
    keep = [j for j in range(x.shape[1]) if int((x[:, j] == x[:, j].min()).sum()) <= max_repeats]
    return x[:, keep]


def _read_table(path: Path, delimiter: str | None) -> np.ndarray:
    """A numeric text table with one header line (comma- or whitespace-separated)."""
    try:
        arr = np.loadtxt(path, delimiter=delimiter, skiprows=1, dtype=np.float64, ndmin=2)
    except ValueError as e:
        raise InputError(f"{path}: not a numeric table with one header line ({e})") from e
    if arr.shape[0] == 0:
        raise InputError(f"{path} is empty (0 rows)")
    return arr


def _tabular_raw(key: str, folder: Path, seed: int) -> tuple[np.ndarray, Path] | None:
    """The paper's tabular sets in the files of the MAF data archive, preprocessed as MAF describes."""
    if key == "power" and (folder / "data.npy").exists():
        path = folder / "data.npy"
        x = load_array(path).double().numpy()
        if x.shape[1] == 8:  # raw UCI columns: drop the two that MAF drops, add its dequantisation noise
            x = np.delete(x, [1, 3], axis=1)
            rng = np.random.default_rng(seed)
            n = x.shape[0]
            noise = [
                0.001 * rng.random((n, 1)),
                0.01 * rng.random((n, 1)),
                rng.random((n, 3)),
                np.zeros((n, 1)),
            ]
            x = x + np.hstack(noise)
        return x, path
    if key == "gas" and (folder / "ethylene_CO.txt").exists():
        path = folder / "ethylene_CO.txt"  # UCI: time, CO and ethylene concentrations, then 16 sensors
        x = _read_table(path, None)
        if x.shape[1] != 19:
            raise InputError(
                f"{path}: expected the 19 UCI columns (time, 2 concentrations, 16 sensors), got {x.shape[1]}"
            )
        return _drop_correlated(x[:, 3:]), path
    if key == "hepmass" and (folder / "1000_train.csv").exists():
        path = folder / "1000_train.csv"  # label, 27 features, mass; the signal rows (label 1), as MAF
        x = _read_table(path, ",")
        x = x[x[:, 0] == 1][:, 1:]
        if x.shape[0] == 0:
            raise InputError(f"{path} has no signal rows (label 1)")
        return _drop_repeated(x), path
    if key == "bsds300" and (folder / "BSDS300.hdf5").exists() and not (folder / "data.npy").exists():
        raise InputError(
            f"{folder / 'BSDS300.hdf5'} is HDF5, which this package does not read: save its patches as an (n, 64) or "
            f"(n, 63) matrix with numpy.save to {folder / 'data.npy'}"
        )
    return None


def load_tabular(name: str, root: str | Path, seed: int = 42) -> torch.Tensor:
    """One of the paper's tabular datasets as an (n, D) float32 matrix (not yet standardised), from ``root``.

    Reads the files of the MAF data archive (Papamakarios et al., 2017; zenodo.org/record/1161203) and applies the
    MAF preprocessing: ``power/data.npy`` (8 raw columns: 2 dropped, uniform dequantisation noise with ``seed``),
    ``gas/ethylene_CO.txt`` (the UCI text file: the 16 sensors, correlated columns dropped), ``hepmass/1000_train.csv``
    (signal rows, columns with a repeated minimum dropped), ``miniboone/data.npy``, ``BSDS300/data.npy``
    (patches, the last pixel dropped). A ``<name>/data.npy`` already holding the D preprocessed columns is used as is.
    D is checked against the paper's (6, 8, 21, 43, 63).
    """
    if not isinstance(name, str):
        raise InputError(f"name must be one of {tuple(TABULAR_DATASETS)}, got {name!r}")
    key = name.lower()
    if key not in TABULAR_DATASETS:
        raise InputError(f"unknown tabular dataset {name!r}; expected one of {tuple(TABULAR_DATASETS)}")
    rel, dim = TABULAR_DATASETS[key]
    path = Path(root) / rel
    raw = _tabular_raw(key, path.parent, seed)
    if raw is not None:
        arr, path = raw
        x = check_data(torch.as_tensor(arr, dtype=torch.float32), name=str(path))
    else:
        if not path.exists():
            raise InputFileError(
                f"{path} not found: download {key.upper()} from the MAF data archive (zenodo.org/record/1161203) and "
                f"unpack it under {Path(root)}, or save the (n, {dim}) preprocessed matrix with numpy.save to {path}"
            )
        x = load_array(path)
        if key == "bsds300" and x.shape[1] == dim + 1:
            x = x[:, :dim]  # 8x8 patches minus the last pixel (MAF)
    if x.shape[1] != dim:
        raise InputError(f"{path}: {key} has D={dim} columns after MAF preprocessing, got {x.shape[1]}")
    return x


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp")


def load_image_folder(
    path: str | Path,
    size: int | tuple[int, int] | None = None,
    grayscale: bool = False,
    max_images: int | None = None,
) -> tuple[torch.Tensor, tuple[int, int, int]]:
    """Images from a folder (searched recursively, files sorted by path) as an (n, C*H*W) float32 matrix in [0, 1]
    and their shape (C, H, W). ``size``: resize every image to ``size`` x ``size`` (or (H, W)); without it all images
    must already share one size. ``grayscale``: one channel, else RGB (C = 3)."""
    from PIL import Image
    from PIL import UnidentifiedImageError

    root = Path(path)
    if not root.exists():
        raise InputFileError(f"image folder not found: {root}")
    if not root.is_dir():
        raise InputError(f"expected a folder of images, got a file: {root}")
    files = sorted(f for f in root.rglob("*") if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES)
    if max_images is not None:
        files = files[: _check_n(max_images)]
    if not files:
        raise InputError(
            f"{root} holds no images (looked for {', '.join(IMAGE_SUFFIXES)} files, recursively)"
        )
    if size is not None:
        hw = (size, size) if isinstance(size, int) else tuple(size)
        if len(hw) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in hw):
            raise InputError(f"size must be an int >= 1 or (height, width), got {size!r}")
    rows, shape = [], None
    for f in files:
        try:
            with Image.open(f) as im:
                im = im.convert("L" if grayscale else "RGB")
                if size is not None:
                    im = im.resize((hw[1], hw[0]), Image.Resampling.BILINEAR)
                arr = np.asarray(im, dtype=np.float32) / 255.0
        except (UnidentifiedImageError, OSError) as e:
            raise InputError(f"{f}: not a readable image ({e})") from e
        arr = arr[None] if arr.ndim == 2 else arr.transpose(2, 0, 1)
        if shape is None:
            shape = arr.shape
        elif arr.shape != shape:
            raise InputError(
                f"{f} has shape (C, H, W) = {arr.shape}, the first image {files[0]} has {shape}; "
                "pass size= (CLI: --image-size) to resize them all"
            )
        rows.append(arr.reshape(-1))
    x = check_data(torch.as_tensor(np.stack(rows)), name=str(root))
    return x, tuple(int(v) for v in shape)
