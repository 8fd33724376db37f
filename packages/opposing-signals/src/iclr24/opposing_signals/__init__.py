"""Outliers with Opposing Signals Have an Outsized Effect on Neural Network Optimization (Rosenfeld & Risteski,
ICLR 2024): per-example loss tracking, opposing-group discovery, sharpness and edge-of-stability tools."""

from .data import OpposingDigits
from .data import cifar10_subset
from .data import make_opposing_digits
from .data import mnist_subset
from .eos import EoSReport
from .eos import edge_of_stability_report
from .eos import loss_increase_steps
from .experiments import ExperimentConfig
from .experiments import run_experiment
from .groups import OpposingGroups
from .groups import find_opposing_groups
from .groups import group_gradient_cosine
from .groups import pearson
from .hessian import sharpness
from .hessian import stability_threshold
from .linear import make_toy_linear
from .linear import scalar_net_hessian
from .tracking import LossTracker
from .tracking import mean_loss
from .tracking import per_example_loss
from .train import MLP
from .train import History
from .train import TrainConfig
from .train import make_mlp
from .train import train

__all__ = [
    "LossTracker",
    "per_example_loss",
    "mean_loss",
    "find_opposing_groups",
    "OpposingGroups",
    "group_gradient_cosine",
    "pearson",
    "sharpness",
    "stability_threshold",
    "edge_of_stability_report",
    "EoSReport",
    "loss_increase_steps",
    "train",
    "TrainConfig",
    "History",
    "make_mlp",
    "MLP",
    "make_opposing_digits",
    "OpposingDigits",
    "mnist_subset",
    "cifar10_subset",
    "make_toy_linear",
    "scalar_net_hessian",
    "run_experiment",
    "ExperimentConfig",
]
