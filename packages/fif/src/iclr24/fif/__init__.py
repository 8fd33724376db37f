"""Free-form injective flows (FIF): "Lifting Architectural Constraints of Injective Flows" (ICLR 2024)."""

from .data import load_array
from .data import load_image_folder
from .data import load_tabular
from .data import toy_dataset
from .data import toy_splits
from .estimator import exact_log_prob
from .estimator import sample_v
from .estimator import volume_change_surrogate
from .metrics import mmd_rbf
from .metrics import sliced_wasserstein
from .model import FIFModel
from .model import FreeFormInjectiveFlow
from .model import fif_loss
from .nets import conv_pair
from .nets import resnet_pair
from .train import NonFiniteLossError
from .train import TrainConfig
from .train import fit
from .train import load_checkpoint
from .train import save_checkpoint

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
