"""On the Generalization and Approximation Capacities of Neural Controlled Differential Equations
(Bleistein & Guilloux, ICLR 2024): NCDEs on irregular time series, and the paper's sampling-dependent quantities."""

from .bounds import generalization_bound, gronwall_factor, lipschitz_upper, risk_decomposition
from .data import load_aeon, load_ts
from .model import NCDE, VectorField, solve_cde
from .paths import add_time_channel, pad_series, sampling_gap, total_variation
from .synthetic import (
    brownian_paths,
    irregular_grid_indices,
    sampling_bias_oracle,
    smooth_paths,
    subsample,
    true_cde,
    uniform_grid_indices,
)
from .train import TrainConfig, evaluate, fit

__all__ = [
    "NCDE",
    "TrainConfig",
    "VectorField",
    "add_time_channel",
    "brownian_paths",
    "evaluate",
    "fit",
    "generalization_bound",
    "gronwall_factor",
    "irregular_grid_indices",
    "lipschitz_upper",
    "load_aeon",
    "load_ts",
    "pad_series",
    "risk_decomposition",
    "sampling_bias_oracle",
    "sampling_gap",
    "smooth_paths",
    "solve_cde",
    "subsample",
    "total_variation",
    "true_cde",
    "uniform_grid_indices",
]
