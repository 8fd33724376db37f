"""ASMR: Activation-Sharing Multi-Resolution Coordinate Networks for Efficient Inference (ICLR 2024)."""

from .data import Signal
from .data import camera_image
from .data import load_audio
from .data import load_image
from .data import load_signal
from .data import load_video
from .data import sample_image
from .data import save_signal
from .decomposition import compose_digits
from .decomposition import decompose_coords
from .decomposition import grid_coords
from .decomposition import level_strides
from .decomposition import normalize_digits
from .decomposition import parse_bases
from .decomposition import suggest_bases
from .decomposition import validate_bases
from .macs import asmr_macs_per_point
from .macs import count_linear_macs
from .macs import macs_per_point
from .macs import mlp_macs_per_point
from .model import ASMR
from .model import SIREN
from .model import build_model
from .sampling import uniform_grid_batches
from .train import FitResult
from .train import fit
from .train import psnr
from .train import signal_from_points
from .train import ssim

__all__ = [
    "ASMR",
    "SIREN",
    "FitResult",
    "Signal",
    "asmr_macs_per_point",
    "build_model",
    "camera_image",
    "compose_digits",
    "count_linear_macs",
    "decompose_coords",
    "fit",
    "grid_coords",
    "level_strides",
    "load_audio",
    "load_image",
    "load_signal",
    "load_video",
    "macs_per_point",
    "mlp_macs_per_point",
    "normalize_digits",
    "parse_bases",
    "psnr",
    "sample_image",
    "save_signal",
    "signal_from_points",
    "ssim",
    "suggest_bases",
    "uniform_grid_batches",
    "validate_bases",
]
