"""On the Generalization and Approximation Capacities of Neural Controlled Differential Equations
(Bleistein & Guilloux, ICLR 2024): NCDEs on irregular time series, and the paper's sampling-dependent quantities."""

from .bounds import generalization_bound
from .bounds import gronwall_factor
from .bounds import lipschitz_upper
from .bounds import risk_decomposition
from .data import load_aeon
from .data import load_ts
from .model import NCDE
from .model import VectorField
from .model import solve_cde
from .paths import add_time_channel
from .paths import pad_series
from .paths import sampling_gap
from .paths import total_variation
from .synthetic import brownian_paths
from .synthetic import irregular_grid_indices
from .synthetic import sampling_bias_oracle
from .synthetic import smooth_paths
from .synthetic import subsample
from .synthetic import true_cde
from .synthetic import uniform_grid_indices
from .train import TrainConfig
from .train import evaluate
from .train import fit

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
