"""Outliers with Opposing Signals Have an Outsized Effect on Neural Network Optimization (Rosenfeld & Risteski,
ICLR 2024): per-example loss tracking, opposing-group discovery, sharpness and edge-of-stability tools."""

from .data import OpposingDigits, cifar10_subset, make_opposing_digits, mnist_subset
from .eos import EoSReport, edge_of_stability_report, loss_increase_steps
from .experiments import ExperimentConfig, run_experiment
from .groups import OpposingGroups, find_opposing_groups, group_gradient_cosine, pearson
from .hessian import sharpness, stability_threshold
from .linear import make_toy_linear, scalar_net_hessian
from .tracking import LossTracker, mean_loss, per_example_loss
from .training import MLP, History, TrainConfig, make_mlp, train

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
