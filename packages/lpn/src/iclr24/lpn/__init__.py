"""What's in a Prior? Learned Proximal Networks for Inverse Problems (Fang, Buchanan, Sulam; ICLR 2024).

An LPN is f = grad psi of an input-convex network psi: an exact proximal operator of a learned prior R that can be
evaluated (``evaluate_prior``) and used inside plug-and-play solvers (``pnp_pgd``, ``pnp_admm``).
"""

from .data import digits_split
from .data import laplace_sampler
from .data import load_celeba
from .data import load_image
from .data import load_image_folder
from .data import load_mayoct
from .data import psnr
from .data import save_image
from .data import soft_threshold
from .data import ssim
from .icnn import ARCHITECTURES
from .icnn import ICNN
from .icnn import MLPLPN
from .icnn import ConvLPN28
from .icnn import PatchLPN128
from .icnn import as_image_denoiser
from .icnn import build_model
from .icnn import denoise_patchwise
from .loss import LAPLACIAN_SEGMENTS
from .loss import ScheduleStep
from .loss import Segment
from .loss import gamma_min_for
from .loss import l1_loss
from .loss import l2_loss
from .loss import official_schedule
from .loss import piecewise_schedule
from .loss import proximal_matching_loss
from .pnp import Operator
from .pnp import PnPResult
from .pnp import conjugate_gradient
from .pnp import denoising_operator
from .pnp import gaussian_blur_operator
from .pnp import inpainting_operator
from .pnp import pnp_admm
from .pnp import pnp_pgd
from .prior import evaluate_prior
from .prior import invert
from .prior import potential_gradient
from .train import NonFiniteLossError
from .train import TrainConfig
from .train import TrainResult
from .train import load_checkpoint
from .train import load_model
from .train import save_checkpoint
from .train import train

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
