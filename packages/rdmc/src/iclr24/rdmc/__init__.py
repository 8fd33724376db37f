"""Reverse Diffusion Monte Carlo (Huang, Dong, Hao, Ma, Zhang; ICLR 2024)."""

from .data import breast_cancer_logreg
from .data import funnel
from .data import get_target
from .data import gmm2d
from .data import gmm10d
from .data import load_gaussian_mixture
from .diffusion import GRIDS
from .diffusion import exponential_integrator_step
from .diffusion import posterior_gaussian_params
from .diffusion import posterior_grad_log_prob
from .diffusion import reverse_time_grid
from .diffusion import score_from_posterior_mean
from .diffusion import tweedie_mean
from .langevin import langevin_steps_for_budget
from .langevin import mala
from .langevin import stream_seed
from .langevin import ula
from .metrics import mmd2
from .metrics import mode_tv
from .metrics import mode_weights
from .metrics import sliced_w2
from .recipes import METHOD_NAMES
from .recipes import BudgetSettings
from .recipes import budget_settings
from .recipes import sample_with_budget
from .sampler import ESTIMATORS
from .sampler import SampleInfo
from .sampler import rdmc_sample
from .schedule import SCHEDULES
from .schedule import inner_sample_sizes
from .schedule import schedule_weights
from .score import METHODS
from .score import inner_step_size
from .score import posterior_mean_estimate
from .score import score_estimate
from .targets import BayesianLogisticRegression
from .targets import CountedTarget
from .targets import FunctionTarget
from .targets import GaussianMixture
from .targets import NealFunnel
from .targets import Target

__all__ = [
    "BayesianLogisticRegression",
    "ESTIMATORS",
    "GRIDS",
    "NealFunnel",
    "SCHEDULES",
    "breast_cancer_logreg",
    "funnel",
    "inner_sample_sizes",
    "schedule_weights",
    "stream_seed",
    "METHODS",
    "METHOD_NAMES",
    "BudgetSettings",
    "CountedTarget",
    "FunctionTarget",
    "GaussianMixture",
    "SampleInfo",
    "Target",
    "budget_settings",
    "exponential_integrator_step",
    "get_target",
    "gmm10d",
    "gmm2d",
    "inner_step_size",
    "langevin_steps_for_budget",
    "load_gaussian_mixture",
    "mala",
    "mmd2",
    "mode_tv",
    "mode_weights",
    "posterior_gaussian_params",
    "posterior_grad_log_prob",
    "posterior_mean_estimate",
    "rdmc_sample",
    "reverse_time_grid",
    "sample_with_budget",
    "score_estimate",
    "score_from_posterior_mean",
    "sliced_w2",
    "tweedie_mean",
    "ula",
]
