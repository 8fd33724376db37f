"""Reverse Diffusion Monte Carlo (Huang, Dong, Hao, Ma, Zhang; ICLR 2024)."""

from .data import breast_cancer_logreg, funnel, get_target, gmm2d, gmm10d, load_gaussian_mixture
from .diffusion import (
    GRIDS,
    exponential_integrator_step,
    posterior_gaussian_params,
    posterior_grad_log_prob,
    reverse_time_grid,
    score_from_posterior_mean,
    tweedie_mean,
)
from .langevin import langevin_steps_for_budget, mala, stream_seed, ula
from .metrics import mmd2, mode_tv, mode_weights, sliced_w2
from .recipes import METHOD_NAMES, BudgetSettings, budget_settings, sample_with_budget
from .sampler import ESTIMATORS, SampleInfo, rdmc_sample
from .schedule import SCHEDULES, inner_sample_sizes, schedule_weights
from .score import METHODS, inner_step_size, posterior_mean_estimate, score_estimate
from .targets import (
    BayesianLogisticRegression,
    CountedTarget,
    FunctionTarget,
    GaussianMixture,
    NealFunnel,
    Target,
)

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
