"""LACE: aligned layout generation via continuous diffusion with aesthetic constraints (Chen et al., ICLR 2024)."""

from .beautify import beautify
from .constraints import alignment_loss
from .constraints import alignment_score
from .constraints import global_alignment_loss
from .constraints import overlap_loss
from .constraints import overlap_score
from .constraints import pairwise_iou
from .data import synthetic_aligned_layouts
from .diffusion import TASKS
from .diffusion import generate
from .diffusion import load_checkpoint
from .diffusion import save_checkpoint
from .diffusion import train
from .diffusion import training_loss
from .fid import FIDNetV3
from .fid import fid_features
from .fid import layout_fid
from .fid import load_fidnet
from .layout import DEFAULT_CATEGORIES
from .layout import encode_layout
from .layout import finalize
from .layout import labels_from_names
from .metrics import feature_fd
from .metrics import layout_metrics
from .metrics import max_iou
from .model import LaceConfig
from .model import LayoutDenoiser
from .model import make_model
from .official import load_any_checkpoint
from .official import load_official_checkpoint
from .real_data import CATEGORIES as REAL_CATEGORIES
from .real_data import load_official_layouts
from .real_data import real_config
from .render import layout_grid
from .schedule import constraint_weight
from .schedule import cosine_betas
from .schedule import ddim_timesteps

__all__ = [
    "DEFAULT_CATEGORIES",
    "FIDNetV3",
    "REAL_CATEGORIES",
    "TASKS",
    "LaceConfig",
    "LayoutDenoiser",
    "alignment_loss",
    "global_alignment_loss",
    "alignment_score",
    "beautify",
    "constraint_weight",
    "cosine_betas",
    "ddim_timesteps",
    "encode_layout",
    "feature_fd",
    "fid_features",
    "finalize",
    "generate",
    "labels_from_names",
    "layout_fid",
    "layout_grid",
    "layout_metrics",
    "load_any_checkpoint",
    "load_checkpoint",
    "load_fidnet",
    "load_official_checkpoint",
    "load_official_layouts",
    "make_model",
    "max_iou",
    "overlap_loss",
    "overlap_score",
    "pairwise_iou",
    "real_config",
    "save_checkpoint",
    "synthetic_aligned_layouts",
    "train",
    "training_loss",
]
