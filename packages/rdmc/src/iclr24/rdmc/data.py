"""Built-in targets (synthetic Gaussian mixtures of the spec §4), and a loader for a user's mixture file."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit.data.readers import load_npz
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from .targets import BayesianLogisticRegression
from .targets import GaussianMixture
from .targets import NealFunnel

__all__ = [
    "gmm2d",
    "gmm10d",
    "funnel",
    "breast_cancer_logreg",
    "TARGETS",
    "get_target",
    "load_gaussian_mixture",
]


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


def funnel(dim: int = 2) -> NealFunnel:
    """Neal's funnel, v ~ N(0, 3²), x | v ~ N(0, e^v I_{dim-1})."""
    return NealFunnel(dim=dim, scale=3.0)


def breast_cancer_logreg(prior_std: float = 1.0, n_features: int = 10) -> BayesianLogisticRegression:
    """Bayesian logistic regression on scikit-learn's breast-cancer data (569 tumours; shipped inside scikit-learn,
    no download): the first ``n_features`` of its 30 features (default the 10 "mean" ones), standardised, plus an
    intercept column (d = n_features + 1), prior N(0, prior_std² I). Needs scikit-learn
    (``pip install iclr24-rdmc[real]``)."""
    if isinstance(n_features, bool) or not isinstance(n_features, int) or not 1 <= n_features <= 30:
        raise InputError(f"n_features must be an int in [1, 30], got {n_features!r}")
    try:
        from sklearn.datasets import load_breast_cancer
    except ImportError:
        raise ImportError(
            "the breast-cancer target needs scikit-learn, which ships the data set: pip install iclr24-rdmc[real]"
        ) from None
    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :n_features]
    X = (X - X.mean(0)) / X.std(0)
    X = np.concatenate([np.ones((len(X), 1)), X], 1)
    return BayesianLogisticRegression(X, y.astype(np.float64), prior_std=prior_std)


TARGETS = {"gmm2d": gmm2d, "gmm10d": gmm10d}


def get_target(name: str) -> GaussianMixture:
    """A built-in target by name (``gmm2d``, ``gmm10d``), or a mixture saved as ``.npz`` (see
    :func:`load_gaussian_mixture`) when ``name`` is a path ending in .npz."""
    if isinstance(name, str | os.PathLike) and str(name).endswith(".npz"):
        return load_gaussian_mixture(name)
    if name not in TARGETS:
        raise InputError(
            f"unknown target {name!r}; choose one of {', '.join(TARGETS)} or give a mixture .npz file"
        )
    return TARGETS[name]()


def load_gaussian_mixture(path: str | os.PathLike) -> GaussianMixture:
    """Load a mixture from an ``.npz`` holding arrays ``means`` (K, d), ``covs`` ((K, d, d), (K, d) or (K,)) and
    ``weights`` (K,)."""
    p = Path(path)
    if not p.is_file():
        raise InputFileError(
            f"mixture file {p} not found; save one with np.savez(path, means=..., covs=..., weights=...)"
        )
    f = load_npz(
        p, keys=("means", "covs", "weights")
    )  # damaged/truncated/foreign files: one clear ValueError
    return GaussianMixture(f["means"], f["covs"], f["weights"])
