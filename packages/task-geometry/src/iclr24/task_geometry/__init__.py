"""Task structure and nonlinearity jointly determine learned representational geometry (Alleman, Lindsey, Fusi;
ICLR 2024): task generators with a prescribed input-label alignment, Tanh/ReLU students, geometry metrics."""

from .cnn import SmallCNN
from .cnn import digit_dichotomies
from .cnn import measure_cnn
from .cnn import train_cnn
from .experiments import SweepConfig
from .experiments import run_sweep
from .experiments import summarise
from .measure import Geometry
from .measure import activations
from .measure import measure
from .metrics import balanced_dichotomies
from .metrics import ccgp
from .metrics import cka
from .metrics import condition_means
from .metrics import decodability
from .metrics import kernel
from .metrics import kernel_alignment
from .metrics import parallelism_score
from .metrics import participation_ratio
from .metrics import shattering_dim
from .plots import plot_alignment_sweep
from .plots import plot_condition_means
from .students import ACTIVATIONS
from .students import AUTHORS
from .students import MLP
from .students import Student
from .students import TrainConfig
from .students import balanced_readout
from .students import train_student
from .students import train_students
from .tasks import Task
from .tasks import a_of_alignment
from .tasks import alignment_of_a
from .tasks import cube_dichotomy_classes
from .tasks import random_kernel
from .tasks import walsh_cube

__all__ = [
    "ACTIVATIONS",
    "AUTHORS",
    "MLP",
    "Geometry",
    "SmallCNN",
    "Student",
    "SweepConfig",
    "Task",
    "TrainConfig",
    "a_of_alignment",
    "activations",
    "alignment_of_a",
    "balanced_dichotomies",
    "balanced_readout",
    "ccgp",
    "cka",
    "condition_means",
    "cube_dichotomy_classes",
    "decodability",
    "digit_dichotomies",
    "kernel",
    "kernel_alignment",
    "measure",
    "measure_cnn",
    "parallelism_score",
    "participation_ratio",
    "plot_alignment_sweep",
    "plot_condition_means",
    "random_kernel",
    "run_sweep",
    "shattering_dim",
    "summarise",
    "train_cnn",
    "train_student",
    "train_students",
    "walsh_cube",
]
