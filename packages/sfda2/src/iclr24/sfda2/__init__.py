"""SF(DA)^2: Source-free Domain Adaptation Through the Lens of Data Augmentation (Hwang et al., ICLR 2024)."""

from .adapt import (
    METHODS,
    SOURCE_VISDA,
    VISDA,
    Adapter,
    AdaptResult,
    SFDA2Config,
    SourceConfig,
    accuracy,
    adapt,
    per_class_accuracy,
    predict,
    train_source,
)
from .banks import SFDA2Loss
from .data import digits_domains, image_folder_domain, mnist_to_digits, point_cloud_folder, rsut_indices
from .images import ImageFolderDataset, eval_transform, synthetic_visda_folder, train_transform
from .model import SFDAModel, digits_model, load_shot_checkpoint, pointnet_model, split_timm
from .paper_scale import PAPER_SCALE, paper_scale

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
