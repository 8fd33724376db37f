"""Neuron-Enhanced Autoencoder Matrix Completion and Collaborative Filtering (Fan, Chen, Zhang, Ding; ICLR 2024)."""

from .checkpoint import load_model
from .completion import AEMC
from .completion import AEMCNE
from .completion import AutoRec
from .completion import MatrixFactorization
from .completion import relative_rmse
from .completion import rmse
from .config import FitConfig
from .data import Ratings
from .data import load_monti
from .data import load_movielens
from .data import load_movielens_split
from .data import make_synthetic
from .data import movielens_100k_split
from .data import movielens_100k_u1
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
