"""Free-form injective flows (FIF): "Lifting Architectural Constraints of Injective Flows" (ICLR 2024)."""

from .data import load_array, load_image_folder, load_tabular, toy_dataset, toy_splits
from .estimator import exact_log_prob, sample_v, volume_change_surrogate
from .metrics import mmd_rbf, sliced_wasserstein
from .model import FIFModel, FreeFormInjectiveFlow, fif_loss
from .nets import conv_pair, resnet_pair
from .train import NonFiniteLossError, TrainConfig, fit, load_checkpoint, save_checkpoint

__all__ = [
    "FIFModel",
    "FreeFormInjectiveFlow",
    "NonFiniteLossError",
    "TrainConfig",
    "conv_pair",
    "exact_log_prob",
    "fif_loss",
    "fit",
    "load_array",
    "load_checkpoint",
    "load_image_folder",
    "load_tabular",
    "mmd_rbf",
    "resnet_pair",
    "sample_v",
    "save_checkpoint",
    "sliced_wasserstein",
    "toy_dataset",
    "toy_splits",
    "volume_change_surrogate",
]
