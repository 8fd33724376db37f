"""Sample-quality metrics: RBF-kernel MMD^2 and sliced Wasserstein-1 between two point sets."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int

__all__ = ["mmd_rbf", "sliced_wasserstein"]


def _check_pair(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise InputError(
            f"expected two (n, D) point sets with the same D, got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    if a.shape[0] < 2 or b.shape[0] < 2:
        raise InputError(f"need at least 2 points in each set, got {a.shape[0]} and {b.shape[0]}")
    a, b = a.detach().double(), b.detach().double()
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        raise InputError("point sets contain NaN or inf")
    return a, b


def mmd_rbf(
    a: torch.Tensor, b: torch.Tensor, scales: Sequence[float] = (0.1, 0.5, 1.0, 2.0), max_points: int = 2000
) -> float:
    """Unbiased MMD^2 with a sum of RBF kernels ``exp(-||x-y||^2 / (2 (s m)^2))``, ``m`` = median pairwise
    distance of the pooled sets, ``s`` in ``scales``. Sets larger than ``max_points`` use their first rows."""
    a, b = _check_pair(a, b)
    check_int(max_points, "max_points", minimum=2)
    if isinstance(scales, str | bytes) or not isinstance(scales, Sequence) or not scales:
        raise InputError(f"scales must be a non-empty sequence of kernel scales, got {scales!r}")
    for s in scales:
        check_float(s, "each scale", minimum=0, open_min=True)
    a, b = a[:max_points], b[:max_points]
    pooled = torch.cat([a, b])
    d2 = torch.cdist(pooled, pooled) ** 2
    n, m = a.shape[0], b.shape[0]
    med2 = d2[torch.triu_indices(n + m, n + m, 1).unbind()].median()
    k = sum(torch.exp(-d2 / (2 * (s**2) * med2)) for s in scales)
    kaa, kbb, kab = k[:n, :n], k[n:, n:], k[:n, n:]
    mmd2 = (kaa.sum() - kaa.diagonal().sum()) / (n * (n - 1))
    mmd2 = mmd2 + (kbb.sum() - kbb.diagonal().sum()) / (m * (m - 1)) - 2 * kab.mean()
    return float(mmd2)


def sliced_wasserstein(a: torch.Tensor, b: torch.Tensor, n_projections: int = 128, seed: int = 0) -> float:
    """Sliced W1: the mean over random unit directions of the 1-D W1 between projections (quantile matching)."""
    a, b = _check_pair(a, b)
    check_int(n_projections, "n_projections", minimum=1, maximum=10**5)
    g = torch.Generator().manual_seed(seed)
    dirs = torch.randn(a.shape[1], n_projections, generator=g, dtype=torch.float64)
    dirs = dirs / dirs.norm(dim=0, keepdim=True)
    pa, pb = (a @ dirs).sort(0).values, (b @ dirs).sort(0).values
    q = torch.linspace(0, 1, max(a.shape[0], b.shape[0]), dtype=torch.float64)
    qa = torch.quantile(pa, q, dim=0)
    qb = torch.quantile(pb, q, dim=0)
    return float((qa - qb).abs().mean())
