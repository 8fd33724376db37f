"""A small, offline domain shift on scikit-learn's digits: a clean source domain and a rotated + noisy target.

The 1797 digits (8x8, UCI; BSD-3 via scikit-learn) are split in two class-balanced halves so that no image is in
both domains. Source: one half, clean. Target: the other half, each image rotated by a random angle (magnitude in
``angle``, random sign) and corrupted with Gaussian noise, clipped to ``[0, 1]``; a ``test_fraction`` of the
target (class-balanced) is held out as ``target_test``. The angles, noise and split are parameters because the
packages that use it (e.g. sfda2, rlcf) need different strengths.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import numpy as np

from ..errors import InputError

__all__ = ["DigitsShift", "digits_shift"]


@dataclass(frozen=True, eq=False)
class DigitsShift:
    """Images float32 ``(N, 1, 8, 8)`` in ``[0, 1]``, labels int64 ``(N,)``; ``target_angles`` (degrees) are the
    rotations applied to ``target_x`` and ``target_test_x`` (in that order)."""

    source_x: np.ndarray
    source_y: np.ndarray
    target_x: np.ndarray
    target_y: np.ndarray
    target_test_x: np.ndarray
    target_test_y: np.ndarray
    angle: tuple[float, float]
    noise_std: float
    seed: int
    target_angles: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))

    def __repr__(self) -> str:
        return (
            f"DigitsShift(source={len(self.source_y)}, target={len(self.target_y)}, "
            f"target_test={len(self.target_test_y)}, angle={self.angle}, noise_std={self.noise_std}, "
            f"seed={self.seed})"
        )


def _angle_range(angle: float | tuple[float, float]) -> tuple[float, float]:
    if isinstance(angle, (int, float)) and not isinstance(angle, bool):
        lo = hi = float(angle)
    else:
        try:
            lo, hi = (float(a) for a in angle)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise InputError(
                f"angle must be a number or a (low, high) range in degrees, got {angle!r}"
            ) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and 0.0 <= lo <= hi <= 180.0):
        raise InputError(f"angle range must satisfy 0 <= low <= high <= 180 degrees, got ({lo}, {hi})")
    return lo, hi


def _digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits as float32 ``(1797, 8, 8)`` in ``[0, 1]`` and int64 labels.

    Importing scikit-learn costs seconds, so the CSV that ``load_digits`` parses is read directly from the
    installed package (located without importing it); any other layout falls back to ``load_digits``.
    """
    spec = importlib.util.find_spec("sklearn")
    csv = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz" if spec else None
    if csv is not None and csv.is_file():
        try:
            raw = np.loadtxt(csv, delimiter=",", dtype=np.float64)
        except ValueError:
            raw = None
        if raw is not None and raw.shape == (1797, 65):
            return (raw[:, :64] / 16.0).astype(np.float32).reshape(-1, 8, 8), raw[:, 64].astype(np.int64)
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images / 16.0).astype(np.float32), d.target.astype(np.int64)


def _balanced_split(
    y: np.ndarray, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Indices (rest, part) with ``round(fraction * n_c)`` of each class ``c`` in ``part``, both shuffled."""
    rest, part = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        k = int(round(fraction * len(idx)))
        part.append(idx[:k])
        rest.append(idx[k:])
    return rng.permutation(np.concatenate(rest)), rng.permutation(np.concatenate(part))


def digits_shift(
    angle: float | tuple[float, float] = (15.0, 45.0),
    noise_std: float = 0.1,
    test_fraction: float = 0.3,
    seed: int = 0,
) -> DigitsShift:
    """Source = clean digits (one half), target = rotated (``|angle|`` uniform in the range, random sign) and
    noisy (``N(0, noise_std^2)`` per pixel, clipped to ``[0, 1]``) digits (the other half), with a held-out
    ``target_test`` split of ``test_fraction``. Deterministic in ``seed``. Needs scikit-learn and scipy."""
    lo, hi = _angle_range(angle)
    if (
        isinstance(noise_std, bool)
        or not isinstance(noise_std, (int, float))
        or not 0.0 <= noise_std < math.inf
    ):
        raise InputError(f"noise_std must be a finite number >= 0, got {noise_std!r}")
    if (
        isinstance(test_fraction, bool)
        or not isinstance(test_fraction, (int, float))
        or not 0 < test_fraction < 1
    ):
        raise InputError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")

    from scipy.ndimage import rotate

    x, y = _digits()
    rng = np.random.default_rng(seed)
    src_idx, tgt_idx = _balanced_split(y, 0.5, rng)
    tgt_train, tgt_test = _balanced_split(y[tgt_idx], float(test_fraction), rng)
    tgt_idx = np.concatenate([tgt_idx[tgt_train], tgt_idx[tgt_test]])

    signs = rng.choice([-1.0, 1.0], size=len(tgt_idx))
    angles = signs * rng.uniform(lo, hi, size=len(tgt_idx))
    target = np.stack(
        [rotate(x[i], a, reshape=False, order=1, mode="constant", cval=0.0) for i, a in zip(tgt_idx, angles)]
    )
    target = target + rng.normal(0.0, noise_std, size=target.shape) if noise_std > 0 else target
    target = np.clip(target, 0.0, 1.0).astype(np.float32)[:, None]

    n_train = len(tgt_train)
    return DigitsShift(
        source_x=x[src_idx][:, None],
        source_y=y[src_idx],
        target_x=target[:n_train],
        target_y=y[tgt_idx[:n_train]],
        target_test_x=target[n_train:],
        target_test_y=y[tgt_idx[n_train:]],
        angle=(lo, hi),
        noise_std=float(noise_std),
        seed=int(seed),
        target_angles=angles,
    )
