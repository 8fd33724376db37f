"""SF(DA)^2: Source-free Domain Adaptation Through the Lens of Data Augmentation (Hwang et al., ICLR 2024)."""

from .adapt import METHODS
from .adapt import SOURCE_VISDA
from .adapt import VISDA
from .adapt import Adapter
from .adapt import AdaptResult
from .adapt import SFDA2Config
from .adapt import SourceConfig
from .adapt import accuracy
from .adapt import adapt
from .adapt import per_class_accuracy
from .adapt import predict
from .adapt import train_source
from .banks import SFDA2Loss
from .data import digits_domains
from .data import image_folder_domain
from .data import mnist_to_digits
from .data import point_cloud_folder
from .data import rsut_indices
from .images import ImageFolderDataset
from .images import eval_transform
from .images import synthetic_visda_folder
from .images import train_transform
from .model import SFDAModel
from .model import digits_model
from .model import load_shot_checkpoint
from .model import pointnet_model
from .model import split_timm
from .paper_scale import PAPER_SCALE
from .paper_scale import paper_scale

__all__ = [
    "METHODS",
    "SOURCE_VISDA",
    "VISDA",
    "AdaptResult",
    "Adapter",
    "ImageFolderDataset",
    "PAPER_SCALE",
    "SFDA2Config",
    "SFDA2Loss",
    "SFDAModel",
    "SourceConfig",
    "accuracy",
    "adapt",
    "digits_domains",
    "digits_model",
    "image_folder_domain",
    "load_shot_checkpoint",
    "mnist_to_digits",
    "per_class_accuracy",
    "point_cloud_folder",
    "pointnet_model",
    "paper_scale",
    "predict",
    "rsut_indices",
    "split_timm",
    "synthetic_visda_folder",
    "eval_transform",
    "train_source",
    "train_transform",
]
