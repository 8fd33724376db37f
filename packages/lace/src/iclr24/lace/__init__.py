"""LACE: aligned layout generation via continuous diffusion with aesthetic constraints (Chen et al., ICLR 2024)."""

from .beautify import beautify
from .constraints import alignment_loss, alignment_score, overlap_loss, overlap_score, pairwise_iou
from .data import synthetic_aligned_layouts
from .diffusion import (
    TASKS,
    LaceConfig,
    generate,
    load_checkpoint,
    make_model,
    save_checkpoint,
    train,
    training_loss,
)
from .layout import DEFAULT_CATEGORIES, encode_layout, finalize, labels_from_names
from .metrics import feature_fd, max_iou
from .render import layout_grid
from .schedule import constraint_weight, cosine_betas, ddim_timesteps

__all__ = [
    "DEFAULT_CATEGORIES",
    "TASKS",
    "LaceConfig",
    "alignment_loss",
    "alignment_score",
    "beautify",
    "constraint_weight",
    "cosine_betas",
    "ddim_timesteps",
    "encode_layout",
    "feature_fd",
    "finalize",
    "generate",
    "labels_from_names",
    "layout_grid",
    "load_checkpoint",
    "make_model",
    "max_iou",
    "overlap_loss",
    "overlap_score",
    "pairwise_iou",
    "save_checkpoint",
    "synthetic_aligned_layouts",
    "train",
    "training_loss",
]
