"""Built-in targets (synthetic Gaussian mixtures of the spec §4), and a loader for a user's mixture file."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from .targets import GaussianMixture

__all__ = ["gmm2d", "gmm10d", "TARGETS", "get_target", "load_gaussian_mixture"]


def gmm2d() -> GaussianMixture:
    """The spec's 2-D four-mode mixture: means (±4, ±4), Σ = 0.5 I, unequal weights (.1, .2, .3, .4) for the
    means (-4,-4), (-4,4), (4,-4), (4,4)."""
    means = torch.tensor([[-4.0, -4.0], [-4.0, 4.0], [4.0, -4.0], [4.0, 4.0]], dtype=torch.float64)
    return GaussianMixture(
        means,
        torch.full((4,), 0.5, dtype=torch.float64),
        torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64),
    )


def gmm10d() -> GaussianMixture:
    """The 10-D stretch target: the four modes of :func:`gmm2d` in the first two coordinates, zero means in the
    other eight, Σ = 0.5 I."""
    base = gmm2d()
    means = torch.cat([base.means, torch.zeros(4, 8, dtype=torch.float64)], 1)
    return GaussianMixture(means, torch.full((4,), 0.5, dtype=torch.float64), base.weights)


TARGETS = {"gmm2d": gmm2d, "gmm10d": gmm10d}


def get_target(name: str) -> GaussianMixture:
    """A built-in target by name (``gmm2d``, ``gmm10d``), or a mixture saved as ``.npz`` (see
    :func:`load_gaussian_mixture`) when ``name`` is a path ending in .npz."""
    if isinstance(name, str | os.PathLike) and str(name).endswith(".npz"):
        return load_gaussian_mixture(name)
    if name not in TARGETS:
        raise ValueError(
            f"unknown target {name!r}; choose one of {', '.join(TARGETS)} or give a mixture .npz file"
        )
    return TARGETS[name]()


def load_gaussian_mixture(path: str | os.PathLike) -> GaussianMixture:
    """Load a mixture from an ``.npz`` holding arrays ``means`` (K, d), ``covs`` ((K, d, d), (K, d) or (K,)) and
    ``weights`` (K,)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(
            f"mixture file {p} not found; save one with np.savez(path, means=..., covs=..., weights=...)"
        )
    with np.load(p) as f:
        missing = [k for k in ("means", "covs", "weights") if k not in f.files]
        if missing:
            raise ValueError(
                f"{p} lacks array(s) {', '.join(missing)}; it has {', '.join(f.files) or 'none'}"
            )
        return GaussianMixture(f["means"], f["covs"], f["weights"])
