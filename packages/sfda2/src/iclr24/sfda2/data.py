"""Data: the built-in digits domain shift, MNIST -> digits (a real shift), and loaders for the paper's own
datasets from a user path (ImageFolder-style Office-31/Office-Home domains, PointDA-10 style point-cloud folders),
plus the imbalanced VisDA-RSUT protocol (class-imbalanced subsampling; per-class and mean-class accuracy).

Every function returns torch tensors: images ``(N, C, H, W)`` float32 in ``[0, 1]``, labels ``(N,)`` int64.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputNotAFolderError
from iclr24.paperkit.io import input_file_errors

__all__ = [
    "Domains",
    "digits_domains",
    "mnist_to_digits",
    "mnist_as_digits",
    "image_folder_domain",
    "point_cloud_folder",
    "imbalanced_indices",
    "rsut_indices",
]


@dataclass
class Domains:
    """A source-free pair: labelled source (``source_x``, ``source_y``) to train the source model, unlabelled
    target ``target_x`` (``target_y`` only for evaluation), optional held-out target split ``test_x/test_y``."""

    source_x: torch.Tensor
    source_y: torch.Tensor
    target_x: torch.Tensor
    target_y: torch.Tensor
    test_x: torch.Tensor | None = None
    test_y: torch.Tensor | None = None
    name: str = ""

    @property
    def num_classes(self) -> int:
        return int(max(int(self.source_y.max()), int(self.target_y.max())) + 1)


def digits_domains(
    seed: int = 0,
    angle: tuple[float, float] = (20.0, 35.0),
    noise_std: float = 0.1,
    test_fraction: float = 0.3,
) -> Domains:
    """The built-in shift (paperkit's ``digits_shift``): source = clean sklearn digits (half), target = the other
    half rotated by +-U(20, 35) degrees plus N(0, 0.1^2) noise, with ``test_fraction`` held out."""
    from iclr24.paperkit.data import digits_shift

    try:
        d = digits_shift(angle=angle, noise_std=noise_std, test_fraction=test_fraction, seed=seed)
    except InputError:
        raise
    except (ValueError, TypeError) as e:  # paperkit's own argument checks
        raise InputError(str(e)) from None
    t = torch.from_numpy
    return Domains(
        t(d.source_x),
        t(d.source_y),
        t(d.target_x),
        t(d.target_y),
        t(d.target_test_x),
        t(d.target_test_y),
        name=f"digits: clean -> rotated {angle[0]:g}-{angle[1]:g} deg + noise {noise_std:g}",
    )


def mnist_as_digits(x: np.ndarray | torch.Tensor) -> torch.Tensor:
    """MNIST rows ``(N, 784)`` in ``[0, 1]`` -> sklearn-digits-like ``(N, 1, 8, 8)``: crop the 20x20 box MNIST
    centres digits in, area-downsample to 8x8 and rescale each image to a maximum of 1 (sklearn digits are 8x8
    block counts of 32x32 bitmaps, scaled to [0, 1])."""
    x = torch.as_tensor(np.asarray(x), dtype=torch.float32)
    if x.ndim != 2 or x.shape[1] != 784:
        raise InputError(f"expected MNIST rows of shape (N, 784), got {tuple(x.shape)}")
    img = x.reshape(-1, 1, 28, 28)[:, :, 4:24, 4:24]
    small = F.adaptive_avg_pool2d(img, 8)
    peak = small.amax(dim=(1, 2, 3), keepdim=True).clamp_min(1e-6)
    return (small / peak).clamp(0, 1)


def mnist_to_digits(
    data_dir: str | os.PathLike | None = None, n_source: int = 5000, seed: int = 0
) -> Domains:
    """A real shift: source = ``n_source`` MNIST training digits (class-balanced, downsampled to 8x8 by
    :func:`mnist_as_digits`), target = all 1797 scikit-learn digits (a different scanner, writers and
    pre-processing). MNIST comes from the data folder (``iclr24 data get mnist``); a missing file raises
    ``DataMissing`` (a ``FileNotFoundError``) naming that command."""
    from iclr24.paperkit.data import load_mnist
    from iclr24.paperkit.data.samples import digits_tensors

    if isinstance(n_source, bool) or not isinstance(n_source, int) or n_source < 10:
        raise InputError(f"n_source must be an int >= 10, got {n_source!r}")
    xs, ys = load_mnist(data_dir)["train"]
    rng = np.random.default_rng(seed)
    per = n_source // 10
    idx = np.concatenate([rng.permutation(np.flatnonzero(ys == c))[:per] for c in range(10)])
    idx = rng.permutation(idx)
    xt, yt = digits_tensors()
    return Domains(
        mnist_as_digits(xs[idx]),
        torch.as_tensor(ys[idx], dtype=torch.long),
        xt.float(),
        yt.long(),
        name="MNIST (8x8) -> sklearn digits",
    )


def image_folder_domain(
    path: str | os.PathLike, size: int = 224, class_names: list[str] | None = None
) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """One domain in the Office-31 / Office-Home layout (``path/<class>/<image>``): images ``(N, 3, size, size)``
    in [0, 1], labels, class names. ``class_names`` (the source domain's) checks that the target has the same
    classes in the same order; a mismatch is a ``ValueError`` naming the difference."""
    from iclr24.paperkit.data import image_folder

    root = Path(path)
    if not root.exists():
        raise InputFileError(
            f"target folder not found: {root}; expected {root}/<class name>/<image files> (Office-31/Office-Home)"
        )
    if root.is_dir() and not any(p.is_dir() for p in root.iterdir()):
        raise InputError(
            f"the target folder {root} is empty (no class subfolders); expected {root}/<class>/<images>"
        )
    if root.exists() and not root.is_dir():
        raise InputNotAFolderError(f"target folder {root} is a file; expected {root}/<class>/<images>", root)
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 2**14:
        raise InputError(f"size must be a positive int (at most 2**14 pixels), got {size!r}")
    with input_file_errors(root):
        images, labels, names = image_folder(root, size=size)
    if class_names is not None and list(class_names) != list(names):
        missing = sorted(set(class_names) - set(names))
        extra = sorted(set(names) - set(class_names))
        raise InputError(
            f"{root} has {len(names)} classes but the source model has {len(class_names)}; "
            f"missing {missing[:5]}, extra {extra[:5]}"
        )
    return torch.from_numpy(images).permute(0, 3, 1, 2).contiguous(), torch.from_numpy(labels), names


def point_cloud_folder(
    path: str | os.PathLike, num_points: int = 1024, split: str | None = None, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """Point clouds in the PointDA-10 layout: ``path/<class>/[<split>/]<name>.npy``, each an ``(P, 3)`` float array
    (read with ``allow_pickle=False``). Each cloud is centred, scaled into the unit ball and resampled to
    ``num_points`` points. Returns ``(clouds (N, 3, num_points), labels, class_names)``."""
    root = Path(path)
    if not root.is_dir():
        raise InputFileError(
            f"point-cloud folder not found: {root}; expected {root}/<class>/[<split>/]<name>.npy"
        )
    if isinstance(num_points, bool) or not isinstance(num_points, int) or num_points < 1:
        raise InputError(f"num_points must be a positive int, got {num_points!r}")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not classes:
        raise InputError(f"the point-cloud folder {root} is empty (no class subfolders)")
    rng = np.random.default_rng(seed)
    clouds, labels = [], []
    for label, name in enumerate(classes):
        folder = root / name / split if split else root / name
        files = sorted(folder.glob("*.npy")) if folder.is_dir() else []
        if not files:
            raise InputError(f"no .npy point clouds in {folder}")
        for f in files:
            try:
                pts = np.load(f, allow_pickle=False)
            except (ValueError, OSError) as e:
                raise InputError(f"cannot read point cloud {f}: {e}") from None
            if pts.ndim != 2 or pts.shape[1] < 3 or len(pts) == 0 or not np.isfinite(pts[:, :3]).all():
                raise InputError(f"{f}: expected a finite (P, 3) array of points, got shape {pts.shape}")
            pts = pts[:, :3].astype(np.float32)
            pts = pts - pts.mean(0)
            pts = pts / max(float(np.linalg.norm(pts, axis=1).max()), 1e-8)
            pick = rng.choice(len(pts), num_points, replace=len(pts) < num_points)
            clouds.append(pts[pick].T)
            labels.append(label)
    return torch.from_numpy(np.stack(clouds)), torch.tensor(labels, dtype=torch.long), classes


def imbalanced_indices(
    labels: torch.Tensor | np.ndarray, imbalance_ratio: float = 100.0, reverse: bool = False, seed: int = 0
) -> torch.Tensor:
    """A long-tailed subsample: class ``c`` (of ``C``, in label order; reversed with ``reverse``) keeps
    ``n_max * ratio^(-c / (C - 1))`` samples, ``n_max`` the smallest class size, so the head/tail ratio is ``ratio``."""
    y = np.asarray(labels)
    if y.ndim != 1 or len(y) == 0:
        raise InputError(f"labels must be a non-empty 1-D array, got shape {y.shape}")
    if not np.isfinite(imbalance_ratio) or imbalance_ratio < 1:
        raise InputError(f"imbalance_ratio must be >= 1, got {imbalance_ratio}")
    classes = np.unique(y)
    C = len(classes)
    n_max = min(int((y == c).sum()) for c in classes)
    rng = np.random.default_rng(seed)
    keep = []
    for rank, c in enumerate(classes[::-1] if reverse else classes):
        n = max(1, int(round(n_max * imbalance_ratio ** (-rank / max(C - 1, 1)))))
        keep.append(rng.permutation(np.flatnonzero(y == c))[:n])
    return torch.as_tensor(np.sort(np.concatenate(keep)), dtype=torch.long)


def rsut_indices(
    source_labels, target_labels, imbalance_ratio: float = 100.0, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """VisDA-RSUT (Tan et al. 2020): a Reversely-unbalanced Source and an Unbalanced Target, both long-tailed with
    ``imbalance_ratio`` but with opposite head classes. Evaluate with per-class and mean-class accuracy
    (:func:`iclr24.sfda2.per_class_accuracy`)."""
    return (
        imbalanced_indices(source_labels, imbalance_ratio, reverse=True, seed=seed),
        imbalanced_indices(target_labels, imbalance_ratio, reverse=False, seed=seed + 1),
    )
