"""Maximum Entropy Model Correction in Reinforcement Learning (Rakhsha, Kemertas, Ghavamzadeh, Farahmand; ICLR 2024).

``correct`` is MoCo (the I-projection of a model onto moment constraints); ``MoCoVI`` and ``MoCoDyna`` plan with the
corrected model; VI, model-based planning, OS-VI, Q-learning/TD, Dyna and OS-Dyna are the baselines.
"""

from .algorithms import OSVI, MoCoVI, ModelBasedPlanning, Trace, ValueIteration
from .envs import TabularMDP, cliffwalk, garnet, identity_smoothed, locally_smoothed, make_model
from .moco import CorrectionInfo, beta_from_paper, correct, correct_bfgs, kl_divergence, moment_residual
from .planning import (
    evaluate_policy,
    greedy_policy,
    normalized_error,
    policy_error,
    policy_kernel,
    q_values,
    solve_control,
)
from .sample import PAPER_BETA, Dyna, MoCoDyna, OSDyna, QLearning, SampleTrace, TDLearning, sample_stream

__all__ = [
    "OSVI",
    "PAPER_BETA",
    "CorrectionInfo",
    "Dyna",
    "ModelBasedPlanning",
    "MoCoDyna",
    "MoCoVI",
    "OSDyna",
    "QLearning",
    "SampleTrace",
    "TDLearning",
    "TabularMDP",
    "Trace",
    "ValueIteration",
    "beta_from_paper",
    "cliffwalk",
    "correct",
    "correct_bfgs",
    "evaluate_policy",
    "garnet",
    "greedy_policy",
    "identity_smoothed",
    "kl_divergence",
    "locally_smoothed",
    "make_model",
    "moment_residual",
    "normalized_error",
    "policy_error",
    "policy_kernel",
    "q_values",
    "sample_stream",
    "solve_control",
]
