"""Noise schedule and DDIM timesteps of LACE (Chen et al., ICLR 2024), as the official ``util/diffusion_utils.py``.

Notation: T diffusion steps, t in 0..T-1; beta_t the noise rate; alpha_bar_t = prod_{s<=t} (1 - beta_s);
x_t = sqrt(alpha_bar_t) x_0 + sqrt(1 - alpha_bar_t) eps.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_finite
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

__all__ = ["cosine_betas", "alphas_cumprod", "ddim_timesteps", "refinement_timesteps", "constraint_weight"]


def cosine_betas(num_timesteps: int = 1000, s: float = 0.008, max_beta: float = 0.999) -> np.ndarray:
    """The cosine beta schedule (Nichol & Dhariwal), clipped at ``max_beta``; float64 array of length T."""
    check_int(num_timesteps, "num_timesteps", minimum=2, maximum=10**6)
    check_float(s, "s", minimum=0, open_min=True)
    check_float(max_beta, "max_beta", minimum=0, maximum=1, open_min=True, open_max=True)
    steps = np.arange(num_timesteps + 1, dtype=np.float64) / num_timesteps
    # f(t) = cos^2(((t/T + s)/(1 + s)) * pi/2), normalised so that f(0) = 1
    f = np.cos((steps + s) / (1 + s) * math.pi / 2) ** 2
    f = f / f[0]
    # beta_t = 1 - f(t+1)/f(t), clipped
    return np.clip(1.0 - f[1:] / f[:-1], 0.0, max_beta)


def alphas_cumprod(betas: np.ndarray) -> np.ndarray:
    """alpha_bar_t = prod_{s<=t} (1 - beta_s)."""
    return np.cumprod(1.0 - np.asarray(betas, dtype=np.float64))


def ddim_timesteps(num_steps: int, num_timesteps: int = 1000) -> np.ndarray:
    """The official 'uniform' DDIM timesteps: range(0, T, T // n) + 1, e.g. 1, 11, ..., 991 for n = 100."""
    check_int(num_timesteps, "num_timesteps", minimum=1, maximum=10**6)
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or not 1 <= num_steps <= num_timesteps:
        raise InputError(f"num_steps must be an int in [1, {num_timesteps}], got {num_steps!r}")
    c = num_timesteps // num_steps
    return np.arange(0, num_timesteps, c)[:num_steps] + 1


def refinement_timesteps(num_steps: int, num_timesteps: int = 1000, t_max: int = 201) -> np.ndarray:
    """Refinement runs only the DDIM steps with t <= 201 (21 of them for 100 steps)."""
    ts = ddim_timesteps(num_steps, num_timesteps)
    return ts[ts <= t_max]


def constraint_weight(t, decay: float = 0.96):
    """Time weight of the constraint losses, w(t) = 0.96^(t+1) (official ``constraint_temporal_weight('const')``).

    Works on ints, numpy arrays and torch tensors (timesteps t >= 0)."""
    check_float(decay, "decay", minimum=0, maximum=1, open_min=True)
    if isinstance(t, bool) or not isinstance(t, numbers.Real | np.ndarray | torch.Tensor):
        raise InputError(f"t must be a timestep (a number, array or tensor), got {describe(t)}")
    if isinstance(t, torch.Tensor):
        if t.is_floating_point():  # timesteps are ints in training: no check (and no device sync) there
            check_finite(t, "t", allow_empty=True)
    else:
        arr = np.asarray(t, dtype=np.float64)
        check_finite(arr, "t", allow_empty=True)
        if (arr < 0).any():
            raise InputError(f"t must be timesteps >= 0, got {describe(t)}")
    # Eq. (w(t)): w(t) = prod_{s<=t} (1 - 4 * 0.01) = 0.96^(t+1)
    return decay ** (t + 1)
