"""Sharpness: the top eigenvalue of the training-loss Hessian, from Hessian-vector products.

Notation (following Cohen et al. 2021, whose protocol the paper uses): parameters ``theta`` (flattened to a ``P``-vector),
training loss ``L(theta)``, Hessian ``H = nabla^2 L(theta)``, sharpness ``S(theta) = lambda_max(H)``.

    Hv            = d/de nabla L(theta + e v) |_{e=0}          forward-over-reverse (``torch.func.jvp`` of ``grad``)
    v_{k+1}       = H v_k / ||H v_k||,   S ~ v_k^T H v_k       power iteration (largest |eigenvalue|)
    H Q_m = Q_m T_m + r e_m^T                                   Lanczos: ``S ~ lambda_max(T_m)`` (largest algebraic)
    H v           = sum_c (n_c / N) H_c v                      physical batches c of n_c examples (mean losses)

Cohen et al. (``src/utilities.py``: ``compute_hvp``, ``get_hessian_eigenvalues``) accumulate the HVP over physical
batches of 1000 examples and take the top eigenvalue by Lanczos (``scipy.sparse.linalg.eigsh``) on a fixed 5k
subset (``gd.py``: ``abridged_size``); Lanczos is the default here too.

Under full-batch GD with step size ``eta`` the loss along the top eigenvector is stable only while
``S < 2 / eta``; with heavy-ball momentum ``beta`` the threshold is ``(2 + 2 beta) / eta`` (Cohen et al. 2021).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch import nn
from torch.func import functional_call
from torch.func import grad
from torch.func import jvp

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe

__all__ = [
    "HVP_METHODS",
    "SHARPNESS_METHODS",
    "trainable_parameters",
    "make_hvp",
    "power_iteration",
    "lanczos",
    "top_eigenvalue",
    "sharpness",
    "stability_threshold",
]

SHARPNESS_METHODS = ("power", "lanczos")
HVP_METHODS = ("func", "double_backward")


def check_physical_batch_size(pb: object) -> int | None:
    """``None`` (one pass) or an int >= 1; a clear error otherwise."""
    if pb is not None and (isinstance(pb, bool) or not isinstance(pb, int) or pb < 1):
        raise InputError(f"physical_batch_size must be None (one pass) or an int >= 1, got {pb!r}")
    return pb


def trainable_parameters(model: nn.Module) -> dict[str, Tensor]:
    """The parameters of ``model`` that require grad, by name; a clear error if there are none."""
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    if not params:
        raise InputError(
            f"{type(model).__name__} has no parameters that require grad; sharpness and tracking need at least "
            "one trainable parameter (did you call requires_grad_(False) on the whole model?)"
        )
    return params


def _check_data(data: object) -> tuple[Tensor, Tensor]:
    if not (isinstance(data, tuple | list) and len(data) == 2):
        raise InputError(f"data must be a pair (X, y) of tensors, got {type(data).__name__}")
    x, y = data
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        raise InputError(f"data must be a pair of tensors, got ({type(x).__name__}, {type(y).__name__})")
    if x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise InputError(f"X and y must have the same non-zero length, got {x.shape[0]} and {y.shape[0]}")
    return x, y


def make_hvp(
    model: nn.Module,
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    data: tuple[Tensor, Tensor],
    method: str = "func",
    physical_batch_size: int | None = None,
) -> tuple[Callable[[Tensor], Tensor], int]:
    """``(hvp, P)``: ``hvp(v)`` = ``H v`` for a flat ``P``-vector ``v``, ``H`` the Hessian of
    ``loss_fn(model(X), y)`` in the trainable parameters at their current values.

    ``method="func"`` is forward-over-reverse through ``torch.func`` (``jvp`` of ``grad`` of a
    ``functional_call``); ``"double_backward"`` is ``autograd.grad(create_graph=True)`` twice.
    ``physical_batch_size``: the product is accumulated over batches of that many examples, each weighted by its
    share ``n_c / N`` (as Cohen et al.'s ``compute_hvp``); this equals the one-pass product when ``loss_fn`` is a
    mean over examples (as :func:`~.tracking.mean_loss` is), and bounds the memory by one batch's graph.
    """
    if method not in HVP_METHODS:
        raise InputError(f"method must be one of {HVP_METHODS}, got {method!r}")
    check_physical_batch_size(physical_batch_size)
    x, y = _check_data(data)
    n = x.shape[0]
    pb = n if physical_batch_size is None else min(physical_batch_size, n)
    chunks = [(x[s : s + pb], y[s : s + pb], min(pb, n - s) / n) for s in range(0, n, pb)]
    params = trainable_parameters(model)
    names = list(params)
    primals = {n: p.detach() for n, p in params.items()}
    shapes = [p.shape for p in primals.values()]
    sizes = [p.numel() for p in primals.values()]
    dim = sum(sizes)

    def unflatten(v: Tensor) -> dict[str, Tensor]:
        return {n: c.view(s) for n, c, s in zip(names, torch.split(v, sizes), shapes, strict=True)}

    if method == "func":
        buffers = dict(model.named_buffers())
        frozen = {n: p.detach() for n, p in model.named_parameters() if not p.requires_grad}

        def loss_of(ps: dict[str, Tensor], xc: Tensor, yc: Tensor) -> Tensor:
            return loss_fn(functional_call(model, {**frozen, **buffers, **ps}, (xc,)), yc)

        grad_fn = grad(loss_of)

        def hvp(v: Tensor) -> Tensor:
            tangent = unflatten(v.to(x.dtype))
            total = None
            for xc, yc, share in chunks:
                _, t_out = jvp(lambda ps, xc=xc, yc=yc: grad_fn(ps, xc, yc), (primals,), (tangent,))
                flat = torch.cat([t_out[k].reshape(-1) for k in names])
                # H v = sum_c (n_c / N) H_c v
                total = (
                    flat if len(chunks) == 1 else (flat * share if total is None else total + flat * share)
                )
            return total

        return hvp, dim

    plist = [params[n] for n in names]

    def hvp_db(v: Tensor) -> Tensor:
        total = None
        for xc, yc, share in chunks:
            with torch.enable_grad():
                loss = loss_fn(model(xc), yc)
                g = torch.autograd.grad(loss, plist, create_graph=True)
                flat = torch.cat([gi.reshape(-1) for gi in g])
                hv = torch.autograd.grad(flat @ v.to(flat.dtype), plist)
            out = torch.cat([h.reshape(-1) for h in hv]).detach()
            # H v = sum_c (n_c / N) H_c v
            total = out if len(chunks) == 1 else (out * share if total is None else total + out * share)
        return total

    return hvp_db, dim


def _start_vector(dim: int, seed: int, dtype: torch.dtype, device=None) -> Tensor:
    g = torch.Generator().manual_seed(int(seed))
    v = torch.randn(dim, generator=g, dtype=torch.float64).to(dtype=dtype, device=device)
    return v / v.norm()


def power_iteration(
    hvp: Callable[[Tensor], Tensor],
    dim: int,
    iters: int = 20,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> tuple[float, Tensor]:
    """Largest-magnitude eigenvalue of a symmetric operator by power iteration: ``(lambda, v)``."""
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
        raise InputError(f"iters must be an int >= 1, got {iters!r}")
    v = _start_vector(dim, seed, dtype, device)
    lam = 0.0
    for _ in range(iters):
        hv = hvp(v)
        # Rayleigh quotient: lambda ~ v^T H v with ||v|| = 1
        lam = float(v @ hv)
        nrm = hv.norm()
        if not torch.isfinite(nrm):
            raise InputError(
                "Hessian-vector product is not finite; the loss or the parameters contain NaN/inf"
            )
        if nrm == 0:
            return 0.0, v
        # v_{k+1} = H v_k / ||H v_k||
        v = hv / nrm
    return lam, v


def lanczos(
    hvp: Callable[[Tensor], Tensor],
    dim: int,
    iters: int = 20,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> tuple[float, Tensor]:
    """Largest algebraic eigenvalue by ``iters`` Lanczos steps with full re-orthogonalisation: ``(lambda, v)``."""
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
        raise InputError(f"iters must be an int >= 1, got {iters!r}")
    m = min(iters, dim)
    q = _start_vector(dim, seed, dtype, device)
    qs = [q]
    alphas: list[float] = []
    betas: list[float] = []
    for j in range(m):
        w = hvp(qs[j]).to(dtype)
        if not torch.isfinite(w).all():
            raise InputError(
                "Hessian-vector product is not finite; the loss or the parameters contain NaN/inf"
            )
        a = float(qs[j] @ w)
        alphas.append(a)
        Q = torch.stack(qs)
        # H Q_m = Q_m T_m + r e_m^T: remove the components along every previous Lanczos vector (twice, for stability)
        w = w - Q.T @ (Q @ w)
        w = w - Q.T @ (Q @ w)
        b = float(w.norm())
        if j == m - 1 or b < 1e-10:
            break
        betas.append(b)
        qs.append(w / b)
    k = len(alphas)
    T = torch.diag(torch.tensor(alphas, dtype=torch.float64))
    if k > 1:
        off = torch.tensor(betas[: k - 1], dtype=torch.float64)
        T = T + torch.diag(off, 1) + torch.diag(off, -1)
    evals, evecs = torch.linalg.eigh(T)
    v = (torch.stack(qs[:k]).to(torch.float64).T @ evecs[:, -1].to(qs[0].device)).to(dtype)
    return float(evals[-1]), v / v.norm()


def top_eigenvalue(
    hvp: Callable[[Tensor], Tensor],
    dim: int,
    iters: int = 20,
    method: str = "lanczos",
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> float:
    """``lambda_max`` of a symmetric operator given by ``hvp``, by ``"lanczos"`` or ``"power"`` iteration."""
    if method not in SHARPNESS_METHODS:
        raise InputError(f"method must be one of {SHARPNESS_METHODS}, got {method!r}")
    fn = power_iteration if method == "power" else lanczos
    return fn(hvp, dim, iters=iters, seed=seed, dtype=dtype, device=device)[0]


def sharpness(
    model: nn.Module,
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    data: tuple[Tensor, Tensor],
    iters: int = 20,
    method: str = "lanczos",
    seed: int = 0,
    hvp_method: str = "func",
    physical_batch_size: int | None = None,
) -> float:
    """Sharpness ``lambda_max(nabla^2 L(theta))`` of ``L = loss_fn(model(X), y)`` at the model's current parameters.

    ``iters`` Hessian-vector products (each about two backward passes). ``method="lanczos"`` (the default, as
    Cohen et al.) returns the largest algebraic eigenvalue; ``"power"`` the largest-magnitude one (the sharpness
    whenever it dominates the most negative one; it converges more slowly and reads low after few steps).
    ``physical_batch_size``: see :func:`make_hvp` (``loss_fn`` must then be a mean over examples).
    """
    if method not in SHARPNESS_METHODS:
        raise InputError(f"method must be one of {SHARPNESS_METHODS}, got {method!r}")
    check_int(iters, "iters", minimum=1, maximum=10**5)
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be an nn.Module, got {describe(model)}")
    if not isinstance(data, tuple | list) or len(data) != 2:
        raise InputError(f"data must be an (x, y) pair, got {describe(data)}")
    x, y = data
    check_tensor(x, "data x", kind="float", finite=True)
    check_tensor(y, "data y", kind="any")
    if len(x) != len(y):
        raise InputError(
            f"data x and y must have the same non-zero length, got {describe(x)} and {describe(y)}"
        )
    w = next(iter(model.parameters()), None)
    if w is not None and w.dtype != x.dtype:
        raise InputError(f"data x is {x.dtype} but the model's weights are {w.dtype}: convert one")
    hvp, dim = make_hvp(model, loss_fn, data, method=hvp_method, physical_batch_size=physical_batch_size)
    p0 = next(iter(trainable_parameters(model).values()))
    lam = top_eigenvalue(hvp, dim, iters=iters, method=method, seed=seed, dtype=p0.dtype, device=p0.device)
    if lam != lam or abs(lam) == float("inf"):
        raise InputError("the sharpness is not finite: the loss overflows at these inputs or parameters")
    return lam


def stability_threshold(lr: float, momentum: float = 0.0) -> float:
    """The edge of stability: ``2 / eta`` for GD, ``(2 + 2 beta) / eta`` for heavy-ball momentum ``beta``."""
    if isinstance(lr, bool) or not isinstance(lr, int | float) or not lr > 0:
        raise InputError(f"lr must be a positive number, got {lr!r}")
    if isinstance(momentum, bool) or not isinstance(momentum, int | float) or not 0 <= momentum < 1:
        raise InputError(f"momentum must be in [0, 1), got {momentum!r}")
    # 2/eta (GD), (2 + 2 beta)/eta (heavy ball)
    return (2.0 + 2.0 * momentum) / lr
