"""Maximum Entropy Model Correction in Reinforcement Learning (Rakhsha, Kemertas, Ghavamzadeh, Farahmand; ICLR 2024).

``correct`` is MoCo (the I-projection of a model onto moment constraints); ``MoCoVI`` and ``MoCoDyna`` plan with the
corrected model; VI, model-based planning, OS-VI, Q-learning/TD, Dyna and OS-Dyna are the baselines.
"""

from .algorithms import OSVI, MoCoVI, ModelBasedPlanning, Trace, ValueIteration
from .envs import (
    MODEL_KINDS,
    TabularMDP,
    adversarial_smoothed,
    cliffwalk,
    garnet,
    identity_smoothed,
    locally_smoothed,
    make_model,
    maze33,
)
from .moco import (
    Correction,
    CorrectionInfo,
    beta_from_paper,
    correct,
    correct_bfgs,
    kl_divergence,
    moment_residual,
)
from .planning import (
    error_scale,
    evaluate_policy,
    greedy_policy,
    normalized_error,
    policy_error,
    policy_kernel,
    q_values,
    solve_control,
)
from .sample import (
    COUNT_MODELS,
    OS_DYNA_VARIANTS,
    PAPER_BETA,
    Dyna,
    MoCoDyna,
    OSDyna,
    QLearning,
    TDLearning,
)
from .stream import SampleTrace, sample_stream, user_samples

__all__ = [
    "COUNT_MODELS",
    "MODEL_KINDS",
    "OSVI",
    "OS_DYNA_VARIANTS",
    "PAPER_BETA",
    "Correction",
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
    "adversarial_smoothed",
    "beta_from_paper",
    "cliffwalk",
    "correct",
    "correct_bfgs",
    "error_scale",
    "evaluate_policy",
    "garnet",
    "greedy_policy",
    "identity_smoothed",
    "kl_divergence",
    "locally_smoothed",
    "make_model",
    "maze33",
    "moment_residual",
    "normalized_error",
    "policy_error",
    "policy_kernel",
    "q_values",
    "sample_stream",
    "solve_control",
    "user_samples",
]
