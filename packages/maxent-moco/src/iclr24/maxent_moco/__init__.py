"""Maximum Entropy Model Correction in Reinforcement Learning (Rakhsha, Kemertas, Ghavamzadeh, Farahmand; ICLR 2024).

``correct`` is MoCo (the I-projection of a model onto moment constraints); ``MoCoVI`` and ``MoCoDyna`` plan with the
corrected model; VI, model-based planning, OS-VI, Q-learning/TD, Dyna and OS-Dyna are the baselines.
"""

from .algorithms import OSVI
from .algorithms import MoCoVI
from .algorithms import ModelBasedPlanning
from .algorithms import Trace
from .algorithms import ValueIteration
from .envs import MODEL_KINDS
from .envs import TabularMDP
from .envs import adversarial_smoothed
from .envs import cliffwalk
from .envs import garnet
from .envs import identity_smoothed
from .envs import locally_smoothed
from .envs import make_model
from .envs import maze33
from .moco import Correction
from .moco import CorrectionInfo
from .moco import beta_from_paper
from .moco import correct
from .moco import correct_bfgs
from .moco import kl_divergence
from .moco import moment_residual
from .planning import error_scale
from .planning import evaluate_policy
from .planning import greedy_policy
from .planning import normalized_error
from .planning import policy_error
from .planning import policy_kernel
from .planning import q_values
from .planning import solve_control
from .sample import COUNT_MODELS
from .sample import OS_DYNA_VARIANTS
from .sample import PAPER_BETA
from .sample import Dyna
from .sample import MoCoDyna
from .sample import OSDyna
from .sample import QLearning
from .sample import TDLearning
from .stream import SampleTrace
from .stream import sample_stream
from .stream import user_samples

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
