"""Sample-quality metrics used in the claims (spec §4): mode-weight TV, RBF MMD², sliced Wasserstein-2."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float

__all__ = ["mode_tv", "mode_weights", "mmd2", "sliced_w2"]


def _as_2d(x: object, name: str) -> Tensor:
    t = x.detach() if isinstance(x, Tensor) else torch.as_tensor(np.asarray(x, dtype=np.float64))
    if t.ndim != 2 or t.shape[0] < 1:
        raise InputError(f"{name} must have shape (N, d) with N >= 1, got {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise InputError(f"{name} contains NaN/inf values")
    return t.double()


def mode_weights(samples: Tensor, means: Tensor) -> Tensor:
    """The fraction of samples whose nearest mean is μ_k, ``(K,)``."""
    x, mu = _as_2d(samples, "samples"), _as_2d(means, "means")
    if x.shape[1] != mu.shape[1]:
        raise InputError(f"samples are {x.shape[1]}-D but means are {mu.shape[1]}-D")
    nearest = torch.cdist(x, mu).argmin(1)
    return torch.bincount(nearest, minlength=mu.shape[0]).double() / x.shape[0]


def mode_tv(samples: Tensor, means: Tensor, weights: Tensor) -> float:
    """mode-TV = ½ Σ_k |ŵ_k - w_k|, ŵ_k = share of samples nearest to mean μ_k (spec §4)."""
    w = torch.as_tensor(np.asarray(weights, dtype=np.float64)) if not isinstance(weights, Tensor) else weights
    if not bool(torch.isfinite(w.double()).all()) or bool((w < 0).any()):
        raise InputError("weights must be finite and non-negative (a mixture's component weights)")
    w_hat = mode_weights(samples, means)
    if w.shape != w_hat.shape:
        raise InputError(f"weights must have shape ({w_hat.shape[0]},) to match means, got {tuple(w.shape)}")
    return 0.5 * float((w_hat - w.double()).abs().sum())


def mmd2(x: Tensor, y: Tensor, bandwidth: float = 1.0) -> float:
    """Biased (V-statistic) MMD² with the RBF kernel k(a, b) = exp(-‖a-b‖² / (2 bandwidth²)); >= 0."""
    a, b = _as_2d(x, "x"), _as_2d(y, "y")
    if a.shape[1] != b.shape[1]:
        raise InputError(f"x and y must have the same dimension, got {a.shape[1]} and {b.shape[1]}")
    check_float(bandwidth, "bandwidth", minimum=1e-150, maximum=1e150)
    g = 1.0 / (2 * bandwidth**2)

    def kmean(p: Tensor, q: Tensor) -> float:
        return float(torch.exp(-g * torch.cdist(p, q).pow(2)).mean())

    return max(kmean(a, a) + kmean(b, b) - 2 * kmean(a, b), 0.0)


def sliced_w2(x: Tensor, y: Tensor, n_projections: int = 128, seed: int = 0) -> float:
    """Sliced Wasserstein-2: sqrt of the mean over random unit directions θ of W2²(θᵀx, θᵀy), the 1-D W2 computed
    from quantiles on a common grid (works for different sample sizes)."""
    a, b = _as_2d(x, "x"), _as_2d(y, "y")
    if a.shape[1] != b.shape[1]:
        raise InputError(f"x and y must have the same dimension, got {a.shape[1]} and {b.shape[1]}")
    if (
        isinstance(n_projections, bool)
        or not isinstance(n_projections, int)
        or not 1 <= n_projections <= 10**5
    ):
        raise InputError(f"n_projections must be a positive int, got {n_projections!r}")
    gen = torch.Generator().manual_seed(seed)
    theta = torch.randn(a.shape[1], n_projections, generator=gen, dtype=torch.float64)
    theta = theta / theta.norm(dim=0, keepdim=True)
    pa, pb = (a @ theta).sort(0).values, (b @ theta).sort(0).values
    q = (torch.arange(max(len(a), len(b)), dtype=torch.float64) + 0.5) / max(len(a), len(b))
    qa = torch.quantile(pa, q, dim=0, interpolation="nearest") if len(a) != len(q) else pa
    qb = torch.quantile(pb, q, dim=0, interpolation="nearest") if len(b) != len(q) else pb
    return math.sqrt(float(((qa - qb) ** 2).mean()))
