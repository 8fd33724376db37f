"""Plug-and-play solvers with an LPN as the proximal step (Sec. 4), and built-in linear operators.

A linear operator is a function pair ``(A, At)`` on batched tensors; the data term is 1/2 ||A x - y||^2.
Because an LPN is an exact prox of its learned prior R, PnP-PGD and PnP-ADMM with it are proper
proximal-gradient / ADMM schemes for min 1/2 ||Ax - y||^2 + R(x) (Sec. 4 of the paper).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field

import torch
import torch.nn.functional as F

from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe

__all__ = [
    "Operator",
    "denoising_operator",
    "inpainting_operator",
    "gaussian_blur_operator",
    "conjugate_gradient",
    "PnPResult",
    "pnp_pgd",
    "pnp_admm",
]

Linear = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Operator:
    """A linear operator as a function pair: ``A(x)`` and its adjoint ``At(y)``."""

    A: Linear
    At: Linear
    name: str = "operator"
    mask: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if not callable(self.A) or not callable(self.At):
            raise InputError(
                f"A and At must be functions of a tensor, got {describe(self.A)}, {describe(self.At)}"
            )

    def __iter__(self):  # unpack as ``A, At = op``
        return iter((self.A, self.At))


def denoising_operator() -> Operator:
    """A = I (denoising)."""
    return Operator(lambda x: x, lambda y: y, "denoising")


def inpainting_operator(
    shape: tuple[int, ...], missing: float = 0.4, seed: int = 0, mask: torch.Tensor | None = None
) -> Operator:
    """Random-pixel inpainting: A x = m * x with a fixed 0/1 mask ``m`` of ``shape`` (the sample shape, broadcast
    over the batch), ``missing`` the fraction of pixels removed. A is self-adjoint."""
    if isinstance(shape, int) or not isinstance(shape, tuple | list) or not shape:
        raise InputError(f"shape must be the sample shape, e.g. (1, 28, 28), got {describe(shape)}")
    for s in shape:
        check_int(s, "each shape entry", minimum=1, maximum=2**20)
    if math.prod(shape) > 2**31:
        raise InputError(f"a mask of shape {tuple(shape)} is too large")
    if mask is not None:
        check_tensor(mask, "mask", shape=tuple(shape), kind="any")
        if mask.is_complex():
            raise InputError(f"mask must be real 0/1 values, got {describe(mask)}")
        mask = mask.float()
    if mask is None:
        check_float(missing, "missing", minimum=0, maximum=1, open_max=True)
        if not 0.0 <= missing < 1.0:
            raise InputError(f"missing must be in [0, 1), got {missing}")
        g = torch.Generator().manual_seed(seed)
        mask = (torch.rand(shape, generator=g) >= missing).float()
    mask = mask.detach()
    return Operator(
        lambda x: x * mask.to(x), lambda y: y * mask.to(y), f"inpainting({missing:.0%} missing)", mask
    )


def gaussian_kernel(sigma: float, radius: int | None = None) -> torch.Tensor:
    """A normalised 2-D Gaussian kernel of standard deviation ``sigma`` (pixels), size 2*radius+1."""
    if not sigma > 0:
        raise InputError(f"blur sigma must be > 0, got {sigma}")
    check_float(sigma, "blur sigma", minimum=0, maximum=1e3, open_min=True)
    if radius is not None:
        check_int(radius, "radius", minimum=0, maximum=2**12)
    r = radius if radius is not None else max(1, int(round(3 * sigma)))
    t = torch.arange(-r, r + 1, dtype=torch.float64)
    k1 = torch.exp(-(t**2) / (2 * sigma**2))
    k = torch.outer(k1, k1)
    return k / k.sum()


def gaussian_blur_operator(sigma: float, radius: int | None = None) -> Operator:
    """Gaussian blur with zero padding ('same' size), applied per channel on ``(B, C, H, W)``. The kernel is
    symmetric, so A is self-adjoint."""
    k = gaussian_kernel(sigma, radius)
    r = (k.shape[0] - 1) // 2

    def blur(x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:
            raise InputError(f"blur expects (B, C, H, W), got {tuple(x.shape)}")
        c = x.shape[1]
        w = k.to(x).expand(c, 1, *k.shape)
        return F.conv2d(x, w, padding=r, groups=c)

    return Operator(blur, blur, f"gaussian_blur(sigma={sigma})")


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * b).flatten(1).sum(1).view(-1, *([1] * (a.dim() - 1)))


def conjugate_gradient(
    apply: Linear, b: torch.Tensor, x0: torch.Tensor | None = None, max_iter: int = 30, tol: float = 1e-5
) -> torch.Tensor:
    """Solve ``apply(x) = b`` for a symmetric positive definite ``apply``, per sample of the batch."""
    if not callable(apply):
        raise InputError(f"apply must be the linear map (a function of x), got {describe(apply)}")
    check_tensor(b, "b", kind="float", finite=True)
    if b.dim() < 2:
        raise InputError(f"b must be batched (B, ...), got {describe(b)}")
    if x0 is not None:
        check_tensor(x0, "x0", shape=tuple(b.shape), kind="float", finite=True)
    check_int(max_iter, "max_iter", minimum=0, maximum=10**7)
    check_float(tol, "tol", minimum=0)
    x = torch.zeros_like(b) if x0 is None else x0.clone()
    r = b - apply(x)
    p = r.clone()
    rs = _dot(r, r)
    for _ in range(max_iter):
        if float(rs.max().sqrt()) <= tol:
            break
        ap = apply(p)
        a = rs / _dot(p, ap).clamp_min(1e-30)
        x = x + a * p
        r = r - a * ap
        rs_new = _dot(r, r)
        p = r + (rs_new / rs.clamp_min(1e-30)) * p
        rs = rs_new
    return x


@dataclass
class PnPResult:
    """The reconstruction and ||x_{k+1} - x_k|| (per-image norm, max over the batch) at every iteration."""

    x: torch.Tensor
    step_norms: list[float] = field(default_factory=list)


def _denoise(denoiser: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return denoiser(x).detach()


def _check_measurement(y: torch.Tensor, num_iter: int) -> None:
    if not isinstance(y, torch.Tensor) or y.dim() < 2:
        raise InputError("y must be a batched tensor (B, ...) of measurements")
    check_tensor(y, "y", kind="float")
    if not torch.isfinite(y).all():
        raise InputError("y contains NaN or inf")
    check_int(num_iter, "num_iter", minimum=1, maximum=10**7)


def pnp_pgd(
    y: torch.Tensor,
    A: Linear,
    At: Linear,
    denoiser: Callable[[torch.Tensor], torch.Tensor],
    *,
    step: float = 1.0,
    num_iter: int = 100,
    x0: torch.Tensor | None = None,
    clip: tuple[float, float] | None = (0.0, 1.0),
    tol: float = 0.0,
    show_progress: bool = False,
    callback: Callable[[int, torch.Tensor], None] | None = None,
) -> PnPResult:
    """PnP proximal gradient: x_{k+1} = clip(f(x_k - eta A^T (A x_k - y))), the LPN f as prox of R.

    ``y``: measurements ``(B, ...)``; ``x0`` defaults to A^T y. Stops early when ||x_{k+1} - x_k|| <= ``tol``.
    (The official PGD uses eta = 2 and 20 iterations on its operators.) ``show_progress``: a progress bar over the
    iterations (``iclr24.paperkit.progress``). ``callback(k, x_k)``, when given, sees every iterate (k = 1, 2, ...),
    e.g. to record the PSNR along the iterations.
    """
    _check_measurement(y, num_iter)
    check_float(step, "step", minimum=0, maximum=1e6, open_min=True)
    check_float(tol, "tol", minimum=0)
    if clip is not None and (
        not isinstance(clip, tuple | list)
        or len(clip) != 2
        or not all(isinstance(c, int | float) for c in clip)
    ):
        raise InputError(f"clip must be (low, high) or None, got {clip!r}")
    x = At(y) if x0 is None else x0.clone()
    norms: list[float] = []
    for _ in progress(range(num_iter), desc="PnP-PGD", disable=None if show_progress else True):
        # Sec. 4 (PnP-PGD): x_{k+1} = f_theta(x_k - eta A^T (A x_k - y)), f_theta = prox_{R_theta}
        z = x - step * At(A(x) - y)
        xn = _denoise(denoiser, z)
        if clip is not None:
            xn = xn.clamp(*clip)
        norms.append(float((xn - x).flatten(1).norm(dim=1).max()))
        x = xn
        if callback is not None:
            callback(len(norms), x)
        if norms[-1] <= tol:
            break
    return PnPResult(x, norms)


def pnp_admm(
    y: torch.Tensor,
    A: Linear,
    At: Linear,
    denoiser: Callable[[torch.Tensor], torch.Tensor],
    *,
    rho: float = 0.1,
    scale: float = 0.5,
    num_iter: int = 20,
    x0: torch.Tensor | None = None,
    cg_iter: int = 30,
    cg_tol: float = 1e-5,
    tol: float = 0.0,
    show_progress: bool = False,
) -> PnPResult:
    """PnP-ADMM (the official order "132"):
        x <- argmin_x scale ||y - Ax||^2 + rho/2 ||x - z + u||^2   (CG on (2 scale A^T A + rho I) x = ...)
        u <- u + x - z
        z <- f(x + u)
    returning z. Defaults: the official CelebA deblurring (rho 0.1, scale 0.5, 20 iterations, x0 = A^T y).
    ``show_progress``: a progress bar over the iterations.
    """
    _check_measurement(y, num_iter)
    check_float(rho, "rho", minimum=0, open_min=True)
    check_float(scale, "scale", minimum=0, open_min=True)
    check_int(cg_iter, "cg_iter", minimum=1, maximum=10**6)
    if not (rho > 0 and scale > 0):
        raise InputError(f"rho and scale must be > 0, got rho={rho}, scale={scale}")
    z = At(y) if x0 is None else x0.clone()
    x = z.clone()
    u = torch.zeros_like(z)
    aty = At(y)
    norms: list[float] = []

    def normal(v: torch.Tensor) -> torch.Tensor:
        return 2 * scale * At(A(v)) + rho * v

    for _ in progress(range(num_iter), desc="PnP-ADMM", disable=None if show_progress else True):
        # Sec. 4 (PnP-ADMM): x = argmin scale ||y - Ax||^2 + rho/2 ||x - z + u||^2; u += x - z; z = f_theta(x + u)
        x = conjugate_gradient(normal, 2 * scale * aty + rho * (z - u), x0=x, max_iter=cg_iter, tol=cg_tol)
        u = u + x - z
        zn = _denoise(denoiser, x + u)
        norms.append(float((zn - z).flatten(1).norm(dim=1).max()))
        z = zn
        if norms[-1] <= tol:
            break
    return PnPResult(z, norms)
