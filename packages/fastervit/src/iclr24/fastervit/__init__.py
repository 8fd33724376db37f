"""FasterViT: Fast Vision Transformers with Hierarchical Attention (Hatamizadeh et al., ICLR 2024).

Importing this package registers every official variant with timm::

    import timm, iclr24.fastervit
    model = timm.create_model("faster_vit_0_224", num_classes=10)

Trained models are folders: ``model.save_pretrained(dir)`` / ``FasterViT.from_pretrained(dir)``;
``iclr24.fastervit.train.train`` writes one (``OUT/model``) beside the timm-format ``OUT/checkpoint.pth``.
"""

from .blocks import (
    HAT,
    ConvBlock,
    Downsample,
    FasterViTLayer,
    PatchEmbed,
    RelativePositionBias,
    TokenInitializer,
    TokenPositionEmbedding,
    WindowAttention,
)
from .model import FasterViT
from .ops import (
    carrier_token_geometry,
    ct_dewindow,
    ct_window,
    log_spaced_relative_coords,
    relative_position_index,
    window_partition,
    window_reverse,
)
from .registry import OFFICIAL_PARAMS, VARIANTS, create_model, list_variants, load_checkpoint, read_state_dict

__all__ = [
    "HAT",
    "OFFICIAL_PARAMS",
    "VARIANTS",
    "ConvBlock",
    "Downsample",
    "FasterViT",
    "FasterViTLayer",
    "PatchEmbed",
    "RelativePositionBias",
    "TokenInitializer",
    "TokenPositionEmbedding",
    "WindowAttention",
    "carrier_token_geometry",
    "create_model",
    "ct_dewindow",
    "ct_window",
    "list_variants",
    "load_checkpoint",
    "log_spaced_relative_coords",
    "read_state_dict",
    "relative_position_index",
    "window_partition",
    "window_reverse",
]
