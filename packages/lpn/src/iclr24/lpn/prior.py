"""Evaluating the learned prior (Sec. 3.1): invert f, then R(x) = <x, y> - 1/2 ||x||^2 - psi(y).

Both functions work for any ``nn.Module`` that exposes ``potential(y) -> (B,)`` (a convex psi per sample); f is
taken as the autograd gradient of that potential, so a user can plug in their own convex potential.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe

__all__ = ["invert", "evaluate_prior", "potential_gradient", "INVERSION_METHODS"]

INVERSION_METHODS = ("cvx_cg", "cvx_gd", "ls")


def _check_model(model: Any) -> None:
    if not callable(getattr(model, "potential", None)):
        raise InputError(
            f"model must expose potential(y) -> (B,) (psi per sample), got {type(model).__name__} "
            "without it; wrap your convex function in an nn.Module with a potential method"
        )


def _potential(model: Any, y: torch.Tensor) -> torch.Tensor:
    try:
        p = model.potential(y)
    except RuntimeError as e:  # a shape or dtype torch meets inside the user's model
        if isinstance(e, torch.OutOfMemoryError):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"the model's potential cannot take y of shape {tuple(y.shape)} ({first})") from None
    if p.shape != (y.shape[0],):
        raise InputError(f"model.potential must return shape (B,) = ({y.shape[0]},), got {tuple(p.shape)}")
    return p


def potential_gradient(model: Any, y: torch.Tensor, create_graph: bool = False) -> torch.Tensor:
    """f(y) = grad psi(y) by autograd (the LPN), without touching ``y``."""
    _check_model(model)
    check_tensor(y, "y", kind="float")
    if y.dim() < 2:
        raise InputError(f"y must have a batch dimension (B, ...), got {describe(y)}")
    with torch.enable_grad():
        yy = y if (create_graph and y.requires_grad) else y.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(_potential(model, yy).sum(), yy, create_graph=create_graph)
    return g


def _in_dtype(model: Any, dtype: torch.dtype) -> Any:
    """The model with float parameters in ``dtype`` (a copy when they differ; the caller's model is untouched)."""
    params = list(model.parameters()) if isinstance(model, nn.Module) else []
    if isinstance(model, nn.Module) and any(p.dtype != dtype for p in params):
        model = copy.deepcopy(model).to(dtype)
    if isinstance(model, nn.Module):
        model.eval()
    return model


def _check_x(x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor):
        raise InputError(f"x must be a torch.Tensor of shape (B, ...), got {type(x).__name__}")
    if x.dim() < 2:
        raise InputError(f"x must have a batch dimension (B, ...), got shape {tuple(x.shape)}")
    check_tensor(x, "x", kind="float")
    if not torch.isfinite(x).all():
        raise InputError("x contains NaN or inf values")


def _bar(show: bool, total: int | None, desc: str):
    from iclr24.paperkit import progress

    return progress(total=total, desc=desc, disable=None if show else True)


def _iters(n: int, show: bool, desc: str):
    from iclr24.paperkit import progress

    return progress(range(n), desc=desc, disable=None if show else True)


def _invert_cg_scipy(
    model: Any, x: torch.Tensor, y0: torch.Tensor, gtol: float, max_iter: int, show_progress: bool = False
) -> torch.Tensor:
    """min_y sum_i psi(y_i) - <x_i, y_i> with scipy's nonlinear CG on the whole (separable) batch."""
    from scipy.optimize import minimize

    shape = x.shape

    def fun(v: np.ndarray) -> tuple[float, np.ndarray]:
        y = torch.from_numpy(v).view(shape).to(x.dtype).requires_grad_(True)
        with torch.enable_grad():
            obj = _potential(model, y).sum() - (x * y).sum()  # psi(y) - <x, y>
            (g,) = torch.autograd.grad(obj, y)
        return float(obj.detach()), g.detach().numpy().ravel().astype(np.float64)

    with _bar(show_progress, max_iter, f"invert f (CG, {shape[0]} samples)") as bar:
        res = minimize(
            fun,
            y0.detach().numpy().ravel().astype(np.float64),
            jac=True,
            method="CG",
            options={"gtol": gtol, "maxiter": max_iter},
            callback=lambda _v: bar.update(1),
        )
    return torch.from_numpy(res.x).view(shape).to(x.dtype)


def invert(
    model: Any,
    x: torch.Tensor,
    method: str = "cvx_cg",
    *,
    dtype: torch.dtype = torch.float64,
    gtol: float = 1e-7,
    max_iter: int = 2000,
    per_sample: bool = False,
    lr: float | None = None,
    num_iter: int | None = None,
    show_progress: bool = False,
) -> torch.Tensor:
    """y = f^{-1}(x): a point with f(y) = x (Sec. 3.1).

    Methods (official ``invert_model``):
      - ``cvx_cg`` (default): y = argmin_y psi(y) - <x, y> (convex; its gradient is f(y) - x) by nonlinear CG from
        y0 = x, on the whole batch at once (the problem is separable); ``per_sample=True`` runs one CG per sample
        as the official code does (slower). Stops when ||f(y) - x||_inf <= ``gtol``.
      - ``cvx_gd``: the same objective by Adam (lr 1e-2, 2000 iterations, from 0).
      - ``ls``: min_y ||f(y) - x||^2 by Adam (lr 1e-2, 1000 iterations, from x).
    ``x``: ``(B, ...)`` in the model's input shape. Computed in ``dtype`` (float64 by default); returned in
    ``x.dtype``. ``show_progress``: a progress bar over the iterations (``iclr24.paperkit.progress``).
    """
    _check_model(model)
    _check_x(x)
    if method not in INVERSION_METHODS:
        raise InputError(f"method must be one of {', '.join(INVERSION_METHODS)}, got {method!r}")
    check_int(max_iter, "max_iter", minimum=1, maximum=10**7)
    check_float(gtol, "gtol", minimum=0, open_min=True)
    if num_iter is not None:
        check_int(num_iter, "num_iter", minimum=1, maximum=10**7)
    if lr is not None:
        check_float(lr, "lr", minimum=0, open_min=True)
    shape = getattr(model, "input_shape", None)
    if shape is not None and tuple(x.shape[1:]) != tuple(shape):
        raise InputError(f"the model takes x of shape (B, {', '.join(map(str, shape))}), got {describe(x)}")
    m = _in_dtype(model, dtype)
    xd = x.detach().to(dtype)
    if method == "cvx_cg":
        if per_sample:
            with _bar(show_progress, len(xd), "invert f (CG per sample)") as bar:
                ys = []
                for i in range(len(xd)):
                    ys.append(_invert_cg_scipy(m, xd[i : i + 1], xd[i : i + 1], gtol, max_iter))
                    bar.update(1)
            y = torch.cat(ys)
        else:
            y = _invert_cg_scipy(m, xd, xd, gtol, max_iter, show_progress)
        return y.to(x.dtype)
    if method == "cvx_gd":
        y = torch.zeros_like(xd, requires_grad=True)
        opt = torch.optim.Adam([y], lr=lr or 1e-2)
        for _ in _iters(num_iter or 2000, show_progress, "invert f (cvx_gd)"):
            opt.zero_grad()
            with torch.enable_grad():
                y.grad = potential_gradient(m, y) - xd  # grad of psi(y) - <x, y>
            opt.step()
        return y.detach().to(x.dtype)
    y = xd.clone().requires_grad_(True)
    opt = torch.optim.Adam([y], lr=lr or 1e-2)
    for _ in _iters(num_iter or 1000, show_progress, "invert f (ls)"):
        opt.zero_grad()
        with torch.enable_grad():
            fy = potential_gradient(m, y, create_graph=True)
            (fy - xd).pow(2).sum().backward()
        opt.step()
    return y.detach().to(x.dtype)


def evaluate_prior(
    model: Any, x: torch.Tensor, method: str = "cvx_cg", *, return_inverse: bool = False, **invert_kwargs: Any
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The learned prior at x, Sec. 3.1: R(x) = <x, y> - 1/2 ||x||^2 - psi(y) with y = f^{-1}(x).

    ``x``: ``(B, ...)``. Returns R ``(B,)`` (float64 by default), or ``(R, y, f(y))`` with ``return_inverse``.
    Unlike the official ``evaluate_prior`` (which returns f(x) as "fy"), f is evaluated at the inverse y, so
    ``f(y) - x`` measures how well the inversion went (R is only defined on the range of f).
    """
    dtype = invert_kwargs.get("dtype", torch.float64)
    y = invert(model, x, method, **invert_kwargs).to(dtype)
    m = _in_dtype(model, dtype)
    xd = x.detach().to(dtype)
    with torch.no_grad():
        psi = _potential(m, y)
    fy = potential_gradient(m, y)  # f(y), not f(x)
    b = x.shape[0]
    # Sec. 3 (LPN): R_theta(x) = <x, y> - 1/2 ||x||^2 - psi_theta(y), y = f_theta^{-1}(x)
    r = (xd * y).reshape(b, -1).sum(1) - 0.5 * xd.pow(2).reshape(b, -1).sum(1) - psi
    return (r, y, fy) if return_inverse else r
