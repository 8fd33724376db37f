"""Task structure and nonlinearity jointly determine learned representational geometry (Alleman, Lindsey, Fusi;
ICLR 2024): task generators with a prescribed input-label alignment, Tanh/ReLU students, geometry metrics."""

from .cnn import SmallCNN, digit_dichotomies, measure_cnn, train_cnn
from .experiments import SweepConfig, run_sweep, summarise
from .measure import Geometry, activations, measure
from .metrics import (
    balanced_dichotomies,
    ccgp,
    cka,
    condition_means,
    decodability,
    kernel,
    kernel_alignment,
    parallelism_score,
    participation_ratio,
    shattering_dim,
)
from .plots import plot_alignment_sweep, plot_condition_means
from .students import (
    ACTIVATIONS,
    AUTHORS,
    MLP,
    Student,
    TrainConfig,
    balanced_readout,
    train_student,
    train_students,
)
from .tasks import Task, a_of_alignment, alignment_of_a, cube_dichotomy_classes, random_kernel, walsh_cube

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
