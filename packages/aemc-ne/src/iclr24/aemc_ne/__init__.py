"""Neuron-Enhanced Autoencoder Matrix Completion and Collaborative Filtering (Fan, Chen, Zhang, Ding; ICLR 2024)."""

from .checkpoint import load_model
from .completion import AEMC, AEMCNE, AutoRec, MatrixFactorization, relative_rmse, rmse
from .config import FitConfig
from .data import (
    Ratings,
    load_monti,
    load_movielens,
    load_movielens_split,
    make_synthetic,
    movielens_100k_split,
    movielens_100k_u1,
)
from .theory import bound_terms

__all__ = [
    "AEMC",
    "AEMCNE",
    "AutoRec",
    "MatrixFactorization",
    "FitConfig",
    "Ratings",
    "make_synthetic",
    "load_movielens",
    "load_movielens_split",
    "load_monti",
    "movielens_100k_split",
    "movielens_100k_u1",
    "load_model",
    "rmse",
    "relative_rmse",
    "bound_terms",
]
