"""FasterViT: Fast Vision Transformers with Hierarchical Attention (Hatamizadeh et al., ICLR 2024).

Importing this package registers every official variant with timm::

    import timm, iclr24.fastervit
    model = timm.create_model("faster_vit_0_224", num_classes=10)

Trained models are folders: ``model.save_pretrained(dir)`` / ``FasterViT.from_pretrained(dir)``;
``iclr24.fastervit.train.train`` writes one (``OUT/model``) beside the timm-format ``OUT/checkpoint.pth``.
"""

from .blocks import HAT
from .blocks import ConvBlock
from .blocks import Downsample
from .blocks import FasterViTLayer
from .blocks import PatchEmbed
from .blocks import RelativePositionBias
from .blocks import TokenInitializer
from .blocks import TokenPositionEmbedding
from .blocks import WindowAttention
from .model import FasterViT
from .ops import carrier_token_geometry
from .ops import ct_dewindow
from .ops import ct_window
from .ops import log_spaced_relative_coords
from .ops import relative_position_index
from .ops import window_partition
from .ops import window_reverse
from .registry import OFFICIAL_PARAMS
from .registry import VARIANTS
from .registry import create_model
from .registry import list_variants
from .registry import load_checkpoint
from .registry import read_state_dict

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
