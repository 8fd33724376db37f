"""What's in a Prior? Learned Proximal Networks for Inverse Problems (Fang, Buchanan, Sulam; ICLR 2024).

An LPN is f = grad psi of an input-convex network psi: an exact proximal operator of a learned prior R that can be
evaluated (``evaluate_prior``) and used inside plug-and-play solvers (``pnp_pgd``, ``pnp_admm``).
"""

from .data import (
    digits_split,
    laplace_sampler,
    load_celeba,
    load_image,
    load_image_folder,
    load_mayoct,
    psnr,
    save_image,
    soft_threshold,
    ssim,
)
from .icnn import (
    ARCHITECTURES,
    ICNN,
    MLPLPN,
    ConvLPN28,
    PatchLPN128,
    as_image_denoiser,
    build_model,
    denoise_patchwise,
)
from .loss import (
    LAPLACIAN_SEGMENTS,
    ScheduleStep,
    Segment,
    gamma_min_for,
    l1_loss,
    l2_loss,
    official_schedule,
    piecewise_schedule,
    proximal_matching_loss,
)
from .pnp import (
    Operator,
    PnPResult,
    conjugate_gradient,
    denoising_operator,
    gaussian_blur_operator,
    inpainting_operator,
    pnp_admm,
    pnp_pgd,
)
from .prior import evaluate_prior, invert, potential_gradient
from .train import (
    NonFiniteLossError,
    TrainConfig,
    TrainResult,
    load_checkpoint,
    load_model,
    save_checkpoint,
    train,
)

LPN = MLPLPN  # the 1-D / fully connected LPN under the paper's name

__all__ = [
    "ARCHITECTURES",
    "ICNN",
    "LAPLACIAN_SEGMENTS",
    "LPN",
    "MLPLPN",
    "ConvLPN28",
    "NonFiniteLossError",
    "Operator",
    "PatchLPN128",
    "PnPResult",
    "ScheduleStep",
    "Segment",
    "TrainConfig",
    "TrainResult",
    "as_image_denoiser",
    "build_model",
    "conjugate_gradient",
    "denoise_patchwise",
    "denoising_operator",
    "digits_split",
    "evaluate_prior",
    "gamma_min_for",
    "gaussian_blur_operator",
    "inpainting_operator",
    "load_celeba",
    "load_mayoct",
    "ssim",
    "invert",
    "l1_loss",
    "l2_loss",
    "laplace_sampler",
    "load_checkpoint",
    "load_image",
    "load_image_folder",
    "load_model",
    "official_schedule",
    "piecewise_schedule",
    "pnp_admm",
    "pnp_pgd",
    "potential_gradient",
    "proximal_matching_loss",
    "psnr",
    "save_checkpoint",
    "save_image",
    "soft_threshold",
    "train",
]
