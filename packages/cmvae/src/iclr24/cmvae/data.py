"""Built-in offline data, and loaders for the real datasets from a path the user gives.

- :func:`poly_digits`: a PolyMNIST-like multimodal set from scikit-learn's 8x8 digits. Each modality has its own
  fixed background texture; a tuple is M *different* images of the same digit, each composited onto a random crop
  of its modality's texture (``x = where(digit > 0.3, 1 - bg, bg)``, PolyMNIST's inversion rule). The only
  information the modalities share is the digit class. Base images are split per class 80/20 into train/test
  pools, so no image is in both.
- :func:`poly_mnist`: the same construction on real MNIST 28x28 digits from the data folder
  (``iclr24 data get mnist``; DataMissing otherwise).
- :func:`load_polymnist`: the original PolyMNIST folders (``<root>/<split>/m0 .. m4/<index>.<label>.png``), in
  memory; :class:`PolyMNISTFolder`: the same folders as a ``torch`` Dataset that reads each tuple from disk.
- :func:`load_multimodal_npz`: your own aligned modalities in one ``.npz`` (``x0``, ``x1``, ... and ``labels``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

__all__ = [
    "MultimodalData",
    "poly_digits",
    "poly_mnist",
    "make_textures",
    "compose_tuples",
    "load_polymnist",
    "load_multimodal_npz",
    "PolyMNISTFolder",
]


@dataclass
class MultimodalData:
    """Aligned modalities: ``train``/``test`` lists of M float32 arrays [N, D] in [0, 1], their labels, and the
    image side (``side x side`` pixels, ``channels`` per pixel) for plots."""

    train: list[np.ndarray]
    train_labels: np.ndarray
    test: list[np.ndarray]
    test_labels: np.ndarray
    side: int
    channels: int = 1
    name: str = "poly_digits"

    @property
    def n_modalities(self) -> int:
        return len(self.train)

    @property
    def input_dims(self) -> list[int]:
        return [int(x.shape[1]) for x in self.train]

    def tensors(self, split: str = "train") -> list[torch.Tensor]:
        if split not in ("train", "test"):
            raise InputError(f"split must be 'train' or 'test', got {split!r}")
        return [torch.from_numpy(np.ascontiguousarray(x)) for x in getattr(self, split)]


def make_textures(
    n_modalities: int, size: int, seed: int = 0, smooth: float = 2.0, top: float = 0.6
) -> np.ndarray:
    """M fixed background textures [M, size, size]: seeded white noise, Gaussian-smoothed, rescaled to [0, top]."""
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_modalities):
        t = gaussian_filter(rng.standard_normal((size, size)), smooth, mode="wrap")
        t = (t - t.min()) / max(t.max() - t.min(), 1e-12)
        out.append(top * t)
    return np.stack(out).astype(np.float32)


def compose_tuples(
    pools: dict[int, np.ndarray],
    n: int,
    textures: np.ndarray,
    rng: np.random.Generator,
    threshold: float = 0.3,
) -> tuple[list[np.ndarray], np.ndarray]:
    """``n`` tuples: a label y, then M distinct images of class y from ``pools[y]`` [n_y, s, s], each composited
    onto a random s x s crop of its modality's texture. Returns (M arrays [n, s*s], labels [n])."""
    M, T = textures.shape[0], textures.shape[1]
    classes = np.array(sorted(pools))
    side = next(iter(pools.values())).shape[-1]
    small = [int(c) for c in classes if len(pools[c]) < M]
    if small:
        raise InputError(f"classes {small} have fewer than {M} base images: cannot draw {M} distinct ones")
    y = rng.choice(classes, size=n)
    picks = np.empty((n, M), dtype=np.int64)
    for label in classes:  # M distinct images per tuple: the first M of a random permutation of the pool
        rows = np.flatnonzero(y == label)
        picks[rows] = rng.random((rows.size, len(pools[label]))).argsort(1)[:, :M]
    offsets = rng.integers(0, T - side + 1, size=(n, M, 2))
    ar = np.arange(side)
    xs = []
    for m in range(M):
        digits = np.empty((n, side, side), np.float32)
        for label in classes:
            rows = np.flatnonzero(y == label)
            digits[rows] = pools[label][picks[rows, m]]
        r = offsets[:, m, 0, None, None] + ar[None, :, None]
        c = offsets[:, m, 1, None, None] + ar[None, None, :]
        bg = textures[m][r, c]
        xs.append(np.where(digits > threshold, 1.0 - bg, bg).reshape(n, -1).astype(np.float32))
    return xs, y.astype(np.int64)


def _pools(images: np.ndarray, labels: np.ndarray, frac_train: float, rng) -> tuple[dict, dict]:
    tr, te = {}, {}
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        k = int(round(frac_train * len(idx)))
        tr[int(c)], te[int(c)] = images[idx[:k]], images[idx[k:]]
    return tr, te


def _check_sizes(n_train: int, n_test: int, n_modalities: int) -> None:
    for name, v in (("n_train", n_train), ("n_test", n_test), ("n_modalities", n_modalities)):
        top = 64 if name == "n_modalities" else 10**7
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= top:
            raise InputError(f"{name} must be an integer in [1, {top}], got {v!r}")
    if n_modalities < 2:
        raise InputError(f"n_modalities must be >= 2 for a multimodal set, got {n_modalities}")


def poly_digits(
    n_train: int = 6000, n_test: int = 1000, n_modalities: int = 3, seed: int = 0, texture_seed: int = 0
) -> MultimodalData:
    """The PolyMNIST-like set from scikit-learn's digits (offline): M modalities of 8x8 = 64 pixels in [0, 1].

    ``seed`` draws the tuples; the base-image split (80/20 per class) and the textures are fixed by
    ``texture_seed`` so that every seed sees the same pools and backgrounds."""
    from sklearn.datasets import load_digits

    _check_sizes(n_train, n_test, n_modalities)
    d = load_digits()
    images = (d.images / 16.0).astype(np.float32)
    tr, te = _pools(images, d.target, 0.8, np.random.default_rng(texture_seed))
    tex = make_textures(n_modalities, 32, seed=texture_seed, smooth=2.0)
    rng = np.random.default_rng(seed)
    xtr, ytr = compose_tuples(tr, n_train, tex, rng)
    xte, yte = compose_tuples(te, n_test, tex, rng)
    return MultimodalData(xtr, ytr, xte, yte, side=8, name="poly_digits")


def poly_mnist(
    data_dir: str | os.PathLike | None = None,
    n_train: int = 6000,
    n_test: int = 1000,
    n_modalities: int = 3,
    seed: int = 0,
    texture_seed: int = 0,
) -> MultimodalData:
    """The same construction on real MNIST (28x28 = 784 pixels): base images from MNIST's train split for the train
    tuples and from its test split for the test tuples. Reads MNIST from the data folder through
    ``iclr24.paperkit.data.load_mnist``; raises ``DataMissing`` (``iclr24 data get mnist``) when absent."""
    from iclr24.paperkit.data import load_mnist

    _check_sizes(n_train, n_test, n_modalities)
    mn = load_mnist(data_dir)
    (x_tr, y_tr), (x_te, y_te) = mn["train"], mn["test"]
    pools_tr = {int(c): x_tr[y_tr == c].reshape(-1, 28, 28) for c in np.unique(y_tr)}
    pools_te = {int(c): x_te[y_te == c].reshape(-1, 28, 28) for c in np.unique(y_te)}
    tex = make_textures(n_modalities, 112, seed=texture_seed, smooth=4.0)
    rng = np.random.default_rng(seed)
    xtr, ytr = compose_tuples(pools_tr, n_train, tex, rng)
    xte, yte = compose_tuples(pools_te, n_test, tex, rng)
    return MultimodalData(xtr, ytr, xte, yte, side=28, name="poly_mnist")


_POLY_NAME = re.compile(r"^(\d+)\.(\d+)\.png$")


def _modality_index(folder: Path) -> tuple[list[dict[int, tuple[int, Path]]], list[int]]:
    """The files of a PolyMNIST split ``folder/m0 .. m<M-1>/<index>.<label>.png``: per modality
    ``{index: (label, path)}``, and the tuple indices every modality has, sorted."""
    mods = sorted(
        (p for p in folder.iterdir() if p.is_dir() and re.fullmatch(r"m\d+", p.name)),
        key=lambda p: int(p.name[1:]),
    )
    if len(mods) < 2:
        raise InputFileError(
            f"{folder}: expected modality folders m0, m1, ... (PolyMNIST layout), found {len(mods)}"
        )
    index: list[dict[int, tuple[int, Path]]] = []
    for mf in mods:
        entries = {}
        for f in sorted(mf.iterdir()):
            hit = _POLY_NAME.match(f.name)
            if hit:
                entries[int(hit.group(1))] = (int(hit.group(2)), f)
        if not entries:
            raise InputFileError(f"{mf}: no images named <index>.<label>.png")
        index.append(entries)
    common = sorted(set.intersection(*(set(e) for e in index)))
    if not common:
        raise InputError(f"{folder}: the modality folders share no tuple index")
    return index, common


def _polymnist_split(folder: Path) -> tuple[list[np.ndarray], np.ndarray]:
    from iclr24.paperkit.data.readers import load_image

    index, common = _modality_index(folder)
    labels = np.array([index[0][i][0] for i in common], dtype=np.int64)
    for m, e in enumerate(index):
        bad = [i for i in common if e[i][0] != index[0][i][0]]
        if bad:
            raise InputError(
                f"{folder}: tuple {bad[0]} has label {index[0][bad[0]][0]} in m0 but {e[bad[0]][0]} in m{m}"
            )
    xs = []
    for e in index:
        arrs = [load_image(e[i][1], "RGB").transpose(2, 0, 1).reshape(-1) for i in common]
        shapes = {a.shape for a in arrs}
        if len(shapes) != 1:
            raise InputError(f"{folder}: images of one modality differ in size: {sorted(shapes)}")
        xs.append(np.stack(arrs).astype(np.float32))
    return xs, labels


class PolyMNISTFolder(torch.utils.data.Dataset):
    """One PolyMNIST split (``<split>/m0 .. m<M-1>/<index>.<label>.png``) streamed from disk: item i is
    ``([x_0, ..., x_{M-1}], label)`` with ``x_m`` a float32 tensor [3, H, W] in [0, 1] read when asked for (a
    DataLoader's workers read in parallel; nothing is held in memory but the file index)."""

    def __init__(self, folder: str | os.PathLike) -> None:
        f = Path(folder)
        if not f.is_dir():
            raise InputFileError(
                f"PolyMNIST split folder not found: {f} (expected {f}/m0/<index>.<label>.png)"
            )
        index, common = _modality_index(f)
        self.files = [[e[i][1] for e in index] for i in common]
        self.labels = [index[0][i][0] for i in common]
        self.n_modalities = len(index)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int):
        from iclr24.paperkit.data.readers import load_image

        xs = [torch.from_numpy(load_image(p, "RGB").transpose(2, 0, 1).copy()) for p in self.files[i]]
        return xs, self.labels[i]


def load_polymnist(root: str | os.PathLike, max_per_split: int | None = None) -> MultimodalData:
    """PolyMNIST from its folders: ``<root>/train/m0 .. m4/<index>.<label>.png`` and ``<root>/test/...``
    (Sutter et al. 2021's release; download it yourself). Images become flat RGB vectors [N, 3*28*28]."""
    r = Path(root)
    if not r.is_dir():
        raise InputFileError(
            f"PolyMNIST folder not found: {r} (expected {r}/train/m0 ... and {r}/test/m0 ...)"
        )
    for split in ("train", "test"):
        if not (r / split).is_dir():
            raise InputFileError(
                f"{r / split} is missing (PolyMNIST layout: <root>/train/m0/<index>.<label>.png)"
            )
    xtr, ytr = _polymnist_split(r / "train")
    xte, yte = _polymnist_split(r / "test")
    if len(xtr) != len(xte):
        raise InputError(f"{r}: train has {len(xtr)} modalities but test has {len(xte)}")
    if max_per_split is not None:
        xtr, ytr = [x[:max_per_split] for x in xtr], ytr[:max_per_split]
        xte, yte = [x[:max_per_split] for x in xte], yte[:max_per_split]
    side = int(round((xtr[0].shape[1] / 3) ** 0.5))
    return MultimodalData(xtr, ytr, xte, yte, side=side, channels=3, name="polymnist")


def load_multimodal_npz(path: str | os.PathLike, test_fraction: float = 0.2, seed: int = 0) -> MultimodalData:
    """Your own aligned modalities: an ``.npz`` with ``x0``, ``x1``, ... (each [N, ...], values in [0, 1]) and
    optionally ``labels`` [N] (class indices >= 0; -1 marks an unlabelled tuple); split at random into train/test
    by ``test_fraction``. Values outside [0, 1] (e.g. 8-bit pixels 0-255) and labels below -1 are refused."""
    from iclr24.paperkit.data.readers import load_npz

    d = load_npz(path)
    keys = sorted((k for k in d if re.fullmatch(r"x\d+", k)), key=lambda k: int(k[1:]))
    if len(keys) < 2 or keys != [f"x{i}" for i in range(len(keys))]:
        raise InputError(f"{path}: expected arrays x0, x1, ... (at least two modalities), found {sorted(d)}")
    xs = [np.asarray(d[k], dtype=np.float32).reshape(len(d[k]), -1) for k in keys]
    n = len(xs[0])
    if any(len(x) != n for x in xs):
        raise InputError(f"{path}: modalities differ in length: {[len(x) for x in xs]}")
    if n < 2:
        raise InputError(f"{path}: need at least 2 tuples, got {n}")
    if any(not np.isfinite(x).all() for x in xs):
        raise InputError(f"{path}: non-finite values (NaN or inf) in the modalities")
    for k, x in zip(keys, xs):
        lo, hi = float(x.min()), float(x.max())
        if lo < 0.0 or hi > 1.0:
            hint = "; 8-bit pixels: divide by 255" if hi > 1.0 and hi <= 255.0 and lo >= 0.0 else ""
            raise InputError(f"{path}: {k} must hold values in [0, 1], got the range [{lo:g}, {hi:g}]{hint}")
    if "labels" in d:
        raw = np.asarray(d["labels"])
        if raw.shape != (n,):
            raise InputError(f"{path}: labels must have shape ({n},), got {raw.shape}")
        if not (
            np.issubdtype(raw.dtype, np.integer) or (raw.dtype.kind == "f" and np.all(raw == np.round(raw)))
        ):
            raise InputError(f"{path}: labels must be integer class indices, got dtype {raw.dtype}")
        labels = raw.astype(np.int64)
        if len(labels) and labels.min() < -1:
            raise InputError(
                f"{path}: labels must be class indices >= 0, or -1 for an unlabelled tuple; got values down to "
                f"{int(labels.min())}"
            )
    else:
        labels = np.full(n, -1, np.int64)
    if not 0 < test_fraction < 1:
        raise InputError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    perm = np.random.default_rng(seed).permutation(n)
    k = max(1, int(round(test_fraction * n)))
    te, tr = perm[:k], perm[k:]
    side = int(round(xs[0].shape[1] ** 0.5))
    return MultimodalData(
        [x[tr] for x in xs], labels[tr], [x[te] for x in xs], labels[te], side=side, name=Path(path).stem
    )
