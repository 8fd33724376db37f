"""The two-layer linear network of the paper's theory (its analysis of opposing signals) and its closed forms.

Model: ``f(x) = v^T W x`` (``W: h x d``, ``v: h``), square loss ``L = (1/2n) sum_i (f(x_i) - y_i)^2``.
Toy data with an opposing signal (``make_toy_linear``): a small "core" feature ``z`` carrying the label and, in a
fraction ``p`` of the examples, a large-magnitude outlier feature ``+-alpha`` on one coordinate that is shared by
examples of both labels (so its gradients from the two groups point in opposite directions).

Scalar case (``h = d = 1``, data ``x = y = 1``), used to make the mechanism exact:

    L(v, w)           = 1/2 (v w - 1)^2
    nabla^2 L(v, w)   = [[w^2, 2 v w - 1], [2 v w - 1, v^2]]
    on the minimum manifold v w = 1:   lambda_max = v^2 + w^2                  (grows with norm and imbalance)
    GD step:          v' = v - eta r w,  w' = w - eta r v,  r = v w - 1
                      v'^2 - w'^2 = (1 - eta^2 r^2) (v^2 - w^2)                 (imbalance shrinks, exactly)
                      r' = r (1 - eta (v^2 + w^2) + eta^2 r v w)                (stable iff v^2 + w^2 < 2/eta near r = 0)

At a zero-residual minimum of the general model the Hessian equals the Gauss-Newton matrix ``J^T J / n``
(``J`` the Jacobian of the outputs in the parameters), so its top eigenvalue is at least ``||v||^2 lambda_max(X^T X/n)``,
and ``lambda_max(X^T X / n) >= p alpha^2`` with the outlier feature present: sharpness scales with the outlier's
``alpha^2`` mass.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int

__all__ = [
    "ToyLinearData",
    "make_toy_linear",
    "two_layer_linear_loss",
    "scalar_net_hessian",
    "scalar_net_manifold_sharpness",
    "scalar_net_gd_step",
    "scalar_net_predicted_step",
    "gauss_newton_sharpness",
    "outlier_sharpness_bound",
]


@dataclass
class ToyLinearData:
    """Toy opposing-signal data: ``x`` (n, d) = [core z, outlier o, noise...], ``y`` in {-1, +1}, outlier mask."""

    x: Tensor
    y: Tensor
    outlier: Tensor
    alpha: float
    p: float


def make_toy_linear(
    alpha: float = 8.0,
    p: float = 0.05,
    d: int = 8,
    n: int = 400,
    core: float = 1.0,
    noise: float = 0.1,
    seed: int = 0,
) -> ToyLinearData:
    """``n`` examples: ``x_0 = core * y`` (the signal that generalises), ``x_1 = +-alpha`` (random sign,
    independent of ``y``) on a fraction ``p`` of the examples and 0 elsewhere, coordinates ``2..d-1`` Gaussian
    noise of scale ``noise``. Both labels see the outlier feature, so it is an opposing signal."""
    if not alpha >= 0 or not 0 < p <= 1 or d < 2 or n < 2:
        raise InputError(
            f"need alpha >= 0, 0 < p <= 1, d >= 2, n >= 2; got alpha={alpha}, p={p}, d={d}, n={n}"
        )
    check_float(alpha, "alpha", minimum=0)
    check_float(p, "p", minimum=0, maximum=1, open_min=True)
    check_float(core, "core")
    check_float(noise, "noise", minimum=0)
    check_int(d, "d", minimum=2, maximum=10**5)
    check_int(n, "n", minimum=2, maximum=10**7)
    g = torch.Generator().manual_seed(seed)
    y = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).to(torch.float64)
    x = noise * torch.randn(n, d, generator=g, dtype=torch.float64)
    x[:, 0] = core * y
    m = max(1, round(p * n))
    out = torch.zeros(n, dtype=torch.bool)
    out[torch.randperm(n, generator=g)[:m]] = True
    sign = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).to(torch.float64)
    x[:, 1] = torch.where(out, alpha * sign, torch.zeros_like(sign))
    return ToyLinearData(x, y, out, float(alpha), m / n)


def two_layer_linear_loss(v: Tensor, w: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """``L = (1/2n) sum_i (v^T W x_i - y_i)^2`` for ``W`` (h, d), ``v`` (h,)."""
    # L = (1/2n) sum_i (v^T W x_i - y_i)^2
    return 0.5 * ((x @ w.T @ v) - y).pow(2).mean()


def scalar_net_hessian(v: float, w: float) -> Tensor:
    """``nabla^2 L`` of ``L = 1/2 (v w - 1)^2`` in ``(v, w)``: ``[[w^2, 2vw - 1], [2vw - 1, v^2]]``."""
    # Hessian: [[w^2, 2 v w - 1], [2 v w - 1, v^2]]
    c = 2.0 * v * w - 1.0
    return torch.tensor([[w * w, c], [c, v * v]], dtype=torch.float64)


def scalar_net_manifold_sharpness(v: float, w: float) -> float:
    """Sharpness on the minimum manifold ``v w = 1``: ``v^2 + w^2``."""
    if abs(v * w - 1.0) > 1e-9:
        raise InputError(f"(v, w) = ({v}, {w}) is not on the minimum manifold v w = 1 (v w = {v * w})")
    # lambda_max = v^2 + w^2 on v w = 1
    return v * v + w * w


def scalar_net_gd_step(v: float, w: float, lr: float) -> tuple[float, float]:
    """One GD step on ``L = 1/2 (v w - 1)^2``: ``v' = v - eta r w``, ``w' = w - eta r v``."""
    r = v * w - 1.0
    # v' = v - eta r w, w' = w - eta r v
    return v - lr * r * w, w - lr * r * v


def scalar_net_predicted_step(v: float, w: float, lr: float) -> tuple[float, float]:
    """The closed-form predictions for one GD step: ``(v'^2 - w'^2, r')`` from the current ``(v, w)``."""
    r = v * w - 1.0
    # v'^2 - w'^2 = (1 - eta^2 r^2) (v^2 - w^2)
    imbalance = (1.0 - lr * lr * r * r) * (v * v - w * w)
    # r' = r (1 - eta (v^2 + w^2) + eta^2 r v w)
    residual = r * (1.0 - lr * (v * v + w * w) + lr * lr * r * v * w)
    return imbalance, residual


def gauss_newton_sharpness(v: Tensor, w: Tensor, x: Tensor) -> float:
    """``lambda_max(J^T J / n)`` for ``f(x) = v^T W x``: the Hessian's top eigenvalue at any zero-residual point."""
    # J_i = [d f/d W = v x_i^T (flattened), d f/d v = W x_i]
    jw = (v[None, :, None] * x[:, None, :]).reshape(x.shape[0], -1)
    jv = x @ w.T
    j = torch.cat([jw, jv], dim=1)
    return float(torch.linalg.eigvalsh(j.T @ j / x.shape[0])[-1])


def outlier_sharpness_bound(v: Tensor, x: Tensor) -> float:
    """``||v||^2 lambda_max(X^T X / n)``: a lower bound on the sharpness of a zero-residual minimum."""
    # lambda_max(H) >= ||v||^2 lambda_max(X^T X / n)
    return float(v.pow(2).sum() * torch.linalg.eigvalsh(x.T @ x / x.shape[0])[-1])
