"""ASMR: Activation-Sharing Multi-Resolution Coordinate Networks for Efficient Inference (ICLR 2024)."""

from .data import (
    Signal,
    camera_image,
    load_audio,
    load_image,
    load_signal,
    load_video,
    sample_image,
    save_signal,
)
from .decomposition import (
    compose_digits,
    decompose_coords,
    grid_coords,
    level_strides,
    normalize_digits,
    parse_bases,
    suggest_bases,
    validate_bases,
)
from .macs import asmr_macs_per_point, count_linear_macs, macs_per_point, mlp_macs_per_point
from .model import ASMR, SIREN, build_model
from .sampling import uniform_grid_batches
from .train import FitResult, fit, psnr, signal_from_points, ssim

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
