"""Built-in offline data (sklearn digits as temporal tasks, real MNIST through paperkit's data folder), and loaders
for the paper's datasets from a path the user gives (CIFAR-10/100 python pickles, DVS-CIFAR10 frames/events)."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe
from iclr24.paperkit.io import input_file_errors

__all__ = [
    "TemporalData",
    "events_to_frames",
    "load_cifar",
    "load_dvs_cifar10",
    "seq_digits",
    "seq_mnist",
    "static_digits",
]


@dataclass
class TemporalData:
    """A classification task as tensors: ``x`` ``[N, T, features...]`` (or static ``[N, ...]``), ``y`` ``[N]``."""

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    T: int
    # per-channel value of a raw zero pixel after normalisation: what the official loaders' RandomCrop(padding=4),
    # applied before Normalize, pads with (None: pad with 0, as for unnormalised inputs such as DVS event counts)
    pad_fill: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise InputError(f"TemporalData name must be a string, got {describe(self.name)}")
        self.num_classes = check_int(self.num_classes, "num_classes", minimum=1, maximum=10**6)
        self.T = check_int(self.T, "T", minimum=1, maximum=4096)
        for split in ("train", "test"):
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
                raise InputError(
                    f"TemporalData x_{split}/y_{split} must be tensors, got {describe(x)}, {describe(y)}"
                )
            if not x.is_floating_point() or x.dim() < 2 or x.numel() == 0:
                raise InputError(
                    f"TemporalData x_{split} must be a non-empty floating tensor [N, features...], got {describe(x)}"
                )
            if (
                y.is_floating_point()
                or y.is_complex()
                or y.dtype == torch.bool
                or y.dim() != 1
                or len(y) != len(x)
            ):
                raise InputError(
                    f"TemporalData y_{split} must be a 1-D integer tensor of {len(x)} labels, got {describe(y)}"
                )
            if len(y) and (int(y.min()) < 0 or int(y.max()) >= self.num_classes):
                raise InputError(
                    f"TemporalData y_{split} must lie in [0, {self.num_classes}), got "
                    f"[{int(y.min())}, {int(y.max())}]"
                )
            if not bool(torch.isfinite(x).all()):
                raise InputError(f"TemporalData x_{split} contains NaN or inf values")
        if self.x_train.shape[1:] != self.x_test.shape[1:]:
            raise InputError(
                f"TemporalData x_train and x_test must share their per-sample shape, got "
                f"{tuple(self.x_train.shape[1:])} and {tuple(self.x_test.shape[1:])}"
            )

    @property
    def in_features(self) -> int:
        return int(self.x_train.shape[-1])


def seq_digits(split_seed: int = 0, test_fraction: float = 0.2) -> TemporalData:
    """sklearn digits fed row by row: step t sees row t of the 8x8 image (8 features), T = 8; X/16, stratified split.

    Row statistics differ from row to row, so the inputs drift over time (temporal covariate shift).
    """
    from iclr24.paperkit.data.samples import digits_tensors
    from iclr24.paperkit.data.samples import train_test_split_tensors

    check_float(test_fraction, "test_fraction", minimum=0, maximum=1, open_min=True, open_max=True)
    x, y = digits_tensors()
    x = x[:, 0]  # [N, 8, 8] = [N, T, features]
    xtr, ytr, xte, yte = train_test_split_tensors(x, y, test_fraction=test_fraction, seed=split_seed)
    return TemporalData("seq-digits", xtr, ytr, xte, yte, 10, 8)


def static_digits(T: int = 4, split_seed: int = 0, test_fraction: float = 0.2) -> TemporalData:
    """sklearn digits as a static 64-vector, direct-encoded (repeated) over ``T`` steps by the model."""
    from iclr24.paperkit.data.samples import digits_tensors
    from iclr24.paperkit.data.samples import train_test_split_tensors

    check_float(test_fraction, "test_fraction", minimum=0, maximum=1, open_min=True, open_max=True)
    if isinstance(T, bool) or not isinstance(T, int) or not 1 <= T <= 4096:
        raise InputError(f"T must be an int >= 1 (at most 4096), got {T!r}")
    x, y = digits_tensors(flatten=True)
    xtr, ytr, xte, yte = train_test_split_tensors(x, y, test_fraction=test_fraction, seed=split_seed)
    return TemporalData("static-digits", xtr, ytr, xte, yte, 10, T)


def seq_mnist(
    data_dir: str | Path | None = None, n_train: int | None = None, n_test: int | None = None
) -> TemporalData:
    """Real MNIST fed row by row: T = 28 steps of 28 pixels in [0, 1] (``iclr24 data get mnist``: the 50k train
    and 10k test splits; the 10k validation split is not used). ``n_train``/``n_test`` keep the first samples.

    Raises :class:`iclr24.paperkit.data.folder.DataMissing` (a ``FileNotFoundError``) naming the command to run.
    """
    from iclr24.paperkit.data import load_mnist

    d = load_mnist(data_dir)
    (xtr, ytr), (xte, yte) = d["train"], d["test"]
    xtr, ytr, xte, yte = xtr[:n_train], ytr[:n_train], xte[:n_test], yte[:n_test]
    t = torch.from_numpy
    return TemporalData(
        "seq-mnist", t(xtr).reshape(-1, 28, 28), t(ytr), t(xte).reshape(-1, 28, 28), t(yte), 10, 28
    )


# ---- CIFAR-10 / CIFAR-100 (python version) ---------------------------------------------------------------------

_CIFAR_FILES = {
    10: (["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"], ["test_batch"]),
    100: (["train"], ["test"]),
}


def _read_cifar_batch(path: Path, label_key: str) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR python batch through paperkit's restricted unpickler (numpy arrays and containers only)."""
    from iclr24.paperkit.data._unpickle import load_restricted

    try:
        with path.open("rb") as f:
            d = load_restricted(f)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as e:
        raise InputFileError(f"{path} is not a CIFAR python batch (a pickled dict of arrays): {e}") from e
    if isinstance(d, dict):
        d = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in d.items()}
    if not isinstance(d, dict) or "data" not in d or label_key not in d:
        keys = sorted(d) if isinstance(d, dict) else type(d).__name__
        raise InputFileError(f"{path}: expected a dict with 'data' and {label_key!r}, got {keys}")
    data = np.asarray(d["data"], dtype=np.uint8)
    labels = np.asarray(d[label_key], dtype=np.int64)
    if data.ndim != 2 or data.shape[1] != 3072 or len(data) != len(labels):
        raise InputFileError(
            f"{path}: expected data [n, 3072] and n labels, got {data.shape} and {labels.shape}"
        )
    return data, labels


def load_cifar(path: str | Path, num_classes: int = 10, max_per_split: int | None = None) -> TemporalData:
    """CIFAR-10 (``cifar-10-batches-py``, read by paperkit's ``load_cifar10``) or CIFAR-100 (``cifar-100-python``:
    ``train`` and ``test`` with ``fine_labels``) from a folder in the python format.

    Images come as float32 ``[N, 3, 32, 32]`` normalised with the official loader's per-channel constants
    (:data:`CIFAR_MEAN`, :data:`CIFAR_STD`); ``pad_fill`` makes the crop augmentation pad as the official loader
    does (before normalising). The models direct-encode them over T. Get the data from https://www.cs.toronto.edu/~kriz/cifar.html.
    """
    if num_classes not in _CIFAR_FILES:
        raise InputError(f"num_classes must be 10 or 100 (CIFAR-10/CIFAR-100), got {num_classes}")
    if max_per_split is not None:
        check_int(max_per_split, "max_per_split", minimum=1)
    root = Path(path)
    if num_classes == 10:
        from iclr24.paperkit.data import load_cifar10

        with input_file_errors(root):
            d = load_cifar10(root)  # uint8 HWC
        splits = [
            (x.transpose(0, 3, 1, 2).reshape(len(x), -1)[:max_per_split], y[:max_per_split])
            for x, y in (d["train"], d["test"])
        ]
        return _cifar_tensors(splits, num_classes)
    if not root.is_dir():
        raise InputFileError(
            f"CIFAR-{num_classes} folder {root} not found; download the python version from "
            "https://www.cs.toronto.edu/~kriz/cifar.html and pass the extracted folder"
        )
    label_key = "labels" if num_classes == 10 else "fine_labels"
    splits = []
    for names in _CIFAR_FILES[num_classes]:
        xs, ys = [], []
        for n in names:
            f = root / n
            if not f.is_file():
                raise InputFileError(
                    f"missing {f} (CIFAR-{num_classes} python format expects {', '.join(names)} in {root}); "
                    "download it from https://www.cs.toronto.edu/~kriz/cifar.html"
                )
            x, y = _read_cifar_batch(f, label_key)
            xs.append(x)
            ys.append(y)
        x, y = np.concatenate(xs), np.concatenate(ys)
        if max_per_split is not None:
            x, y = x[:max_per_split], y[:max_per_split]
        splits.append((x, y))
    return _cifar_tensors(splits, num_classes)


# The official dataloader.py normalises CIFAR-10 and CIFAR-100 alike with these constants (pixel units / 255)
CIFAR_MEAN = (129.3 / 255, 124.1 / 255, 112.4 / 255)
CIFAR_STD = (68.2 / 255, 65.4 / 255, 70.4 / 255)


def _cifar_tensors(splits, num_classes: int) -> TemporalData:
    mean = torch.tensor(CIFAR_MEAN).reshape(1, 3, 1, 1)
    std = torch.tensor(CIFAR_STD).reshape(1, 3, 1, 1)
    out = []
    for x, y in splits:
        xt = torch.from_numpy(x.reshape(-1, 3, 32, 32).astype(np.float32) / 255.0)
        out += [(xt - mean) / std, torch.from_numpy(y)]
    # ToTensor -> Normalize: a zero-padded pixel of RandomCrop(32, padding=4) ends up at -mean / std
    fill = tuple(-m / s for m, s in zip(CIFAR_MEAN, CIFAR_STD, strict=True))
    return TemporalData(f"cifar{num_classes}", *out, num_classes=num_classes, T=4, pad_fill=fill)


# ---- DVS-CIFAR10 -----------------------------------------------------------------------------------------------


def events_to_frames(
    t: np.ndarray, x: np.ndarray, y: np.ndarray, p: np.ndarray, T: int, H: int = 128, W: int = 128
) -> np.ndarray:
    """Integrate an event stream into ``T`` frames ``[T, 2, H, W]`` of event counts, splitting by event number
    (SpikingJelly's ``split_by='number'``): frame j holds events ``[j*n//T, (j+1)*n//T)`` in time order."""
    n = len(t)
    if not (len(x) == len(y) == len(p) == n):
        raise InputError(
            f"event arrays must have equal lengths, got t={n}, x={len(x)}, y={len(y)}, p={len(p)}"
        )
    if T < 1:
        raise InputError(f"T must be >= 1, got {T}")
    frames = np.zeros((T, 2, H, W), dtype=np.float32)
    if n == 0:
        return frames
    order = np.argsort(t, kind="stable")
    x, y, p = (np.asarray(a)[order].astype(np.int64) for a in (x, y, p))
    if x.min() < 0 or x.max() >= W or y.min() < 0 or y.max() >= H:
        raise InputError(f"event coordinates out of range for a {H}x{W} sensor")
    p = (p > 0).astype(np.int64)
    j = np.minimum(np.arange(n) * T // n, T - 1)
    np.add.at(frames, (j, p, y, x), 1.0)
    return frames


def load_dvs_cifar10(
    path: str | Path, T: int = 10, size: int = 48, test_fraction: float = 0.1, split_seed: int = 0
) -> TemporalData:
    """DVS-CIFAR10 from a folder ``path/<class_name>/*.npz``, one sample per file: either SpikingJelly's
    integrated frames (key ``frames``, ``[T, 2, H, W]``) or its event arrays (keys ``t, x, y, p``, 128x128 sensor),
    which are integrated into ``T`` frames here. Frames are resized to ``size`` x ``size`` (48 in the paper).
    """
    import torch.nn.functional as F

    root = Path(path)
    if not root.is_dir():
        raise InputFileError(
            f"DVS-CIFAR10 folder {root} not found; expected {root}/<class>/*.npz (SpikingJelly's frames or events)"
        )
    classes = sorted(d.name for d in root.iterdir() if d.is_dir())
    if not classes:
        raise InputFileError(f"no class folders in {root}; expected {root}/<class>/*.npz")
    xs, ys = [], []
    for k, c in enumerate(classes):
        for f in sorted((root / c).glob("*.npz")):
            try:
                with np.load(f, allow_pickle=False) as z:
                    if "frames" in z:
                        fr = np.asarray(z["frames"], dtype=np.float32)
                    elif all(key in z for key in ("t", "x", "y", "p")):
                        fr = events_to_frames(z["t"], z["x"], z["y"], z["p"], T)
                    else:
                        raise InputError(f"keys {sorted(z.keys())}")
            except (OSError, ValueError, EOFError) as e:
                raise InputError(f"{f}: expected an npz with 'frames' or 't, x, y, p' ({e})") from e
            if fr.ndim != 4 or fr.shape[0] != T or fr.shape[1] != 2:
                raise InputError(f"{f}: expected frames [T={T}, 2, H, W], got {fr.shape}")
            xs.append(F.interpolate(torch.from_numpy(fr), size=(size, size), mode="area"))
            ys.append(k)
    if not xs:
        raise InputFileError(f"no .npz samples under {root}/<class>/")
    x, y = torch.stack(xs), torch.tensor(ys)
    g = torch.Generator().manual_seed(split_seed)
    perm = torch.randperm(len(x), generator=g)
    n_test = max(1, int(round(test_fraction * len(x))))
    te, tr = perm[:n_test], perm[n_test:]
    return TemporalData("dvs-cifar10", x[tr], y[tr], x[te], y[te], len(classes), T)
