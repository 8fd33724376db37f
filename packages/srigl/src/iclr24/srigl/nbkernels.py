"""The condensed matmul as numba kernels: the fast path that needs no C++ compiler (numba ships LLVM in its wheel).

Two loop orders of ``y[r, i] = sum_j values[i, j] * x[r, indices[i, j]] + bias[i]`` (Sec. 4.3, condensed form):

* ``rows`` (few input rows, online inference): for each input row and each output neuron, gather its ``k`` inputs
  into an L1-resident scratch vector, then one contiguous dot product with the neuron's values (the gather is a
  scalar loop, the dot product vectorises; hardware gathers were slower here).
* ``cols`` (many rows: a ViT's tokens, a batch, a convolution's output pixels): on the transposed input
  ``xt [in, R]`` every non-zero is an AXPY over the ``R`` rows, ``yt[i, :] += values[i, j] * xt[indices[i, j], :]``,
  contiguous and vectorised, no gather at all. A convolution's ``unfold`` output ``[B, in, L]`` already has this
  layout, and ``yt [B, n, L]`` is the convolution's output layout.

Indices may be int16 (half the index bytes; any layer with ``in <= 32767``) or int32. Kernels compile on first use
(about a second per signature; cached on disk by numba) and run on one thread: torch's intra-op threads are not
used (the speed claim is at one thread).
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import torch

from iclr24.paperkit.errors import InputError

__all__ = [
    "numba_available",
    "numba_condensed_linear",
    "numba_condensed_cols",
    "prepare",
    "Prepared",
    "COLS_MIN_ROWS",
]

COLS_MIN_ROWS = 8  # from this many input rows on, the gather-free ``cols`` loop order (measured: bench.py)

_lock = threading.Lock()
_kernels: dict | None = None
_failed: str | None = None


def _rows(x, v, idx, bias, y, g):  # compiled by numba (_compile)
    n, k = v.shape
    for b in range(x.shape[0]):
        xb = x[b]
        for i in range(n):
            ii = idx[i]
            for j in range(k):  # gather: scalar loads into an L1 scratch vector
                g[j] = xb[ii[j]]
            vi = v[i]
            acc = np.float32(0.0)
            for j in range(k):  # Sec. 4.3: y_i = sum_j W_c[i, j] * x[idx[i, j]] (vectorised dot)
                acc += vi[j] * g[j]
            y[b, i] = acc + bias[i]


def _cols(xt, v, idx, bias, yt):  # compiled by numba (_compile)
    # (blocking the rows into L1-sized chunks measured 4-5x slower at 197 rows: the loop no longer vectorised)
    n, k = v.shape
    for b in range(xt.shape[0]):
        xb = xt[b]
        yb = yt[b]
        for i in range(n):
            yi = yb[i]
            bi = bias[i]
            for r in range(yi.shape[0]):
                yi[r] = bi
            k4 = k - k % 4
            for j in range(0, k4, 4):  # Sec. 4.3, four non-zeros per pass over the rows (one load/store of y)
                w0, w1, w2, w3 = v[i, j], v[i, j + 1], v[i, j + 2], v[i, j + 3]
                x0, x1, x2, x3 = xb[idx[i, j]], xb[idx[i, j + 1]], xb[idx[i, j + 2]], xb[idx[i, j + 3]]
                for r in range(yi.shape[0]):
                    yi[r] += (w0 * x0[r] + w1 * x1[r]) + (w2 * x2[r] + w3 * x3[r])
            for j in range(k4, k):
                w = v[i, j]
                xr = xb[idx[i, j]]
                for r in range(yi.shape[0]):
                    yi[r] += w * xr[r]


def _compile() -> dict | None:
    global _kernels, _failed
    with _lock:
        if _kernels is not None or _failed is not None:
            return _kernels
        try:
            from numba import njit
        except ImportError as e:
            _failed = f"numba is not installed ({e})"
            return None
        opts = {"fastmath": True, "boundscheck": False, "nogil": True, "cache": True}
        _kernels = {"rows": njit(**opts)(_rows), "cols": njit(**opts)(_cols)}
    return _kernels


def numba_available() -> bool:
    """True when numba imports (the kernels compile lazily on their first call). ``SRIGL_NO_NUMBA=1`` disables."""
    import os

    if os.environ.get("SRIGL_NO_NUMBA"):
        return False
    return _compile() is not None


def _check(values: torch.Tensor, indices: torch.Tensor) -> None:
    if values.dtype != torch.float32 or values.dim() != 2:
        raise InputError(f"values must be float32 [n, k], got {values.dtype} {tuple(values.shape)}")
    if indices.shape != values.shape or indices.dtype not in (torch.int16, torch.int32):
        raise InputError(
            f"indices must be int16 or int32 of values' shape {tuple(values.shape)}, "
            f"got {indices.dtype} {tuple(indices.shape)}"
        )


def _checked_kernels(values: torch.Tensor, indices: torch.Tensor) -> dict:
    """The compiled kernels, once ``values`` and ``indices`` are a layer's; RuntimeError when numba is unavailable."""
    k = _compile()
    if k is None or not numba_available():
        raise RuntimeError(f"the numba kernels are unavailable ({_failed or 'disabled by SRIGL_NO_NUMBA'})")
    _check(values, indices)
    return k


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().contiguous().numpy()


def _bias(bias: torch.Tensor | None, n: int) -> np.ndarray:
    return np.zeros(n, np.float32) if bias is None else _np(bias)


def numba_condensed_linear(
    x: torch.Tensor,
    values: torch.Tensor,
    indices: torch.Tensor,
    bias: torch.Tensor | None = None,
    order: str | None = None,
) -> torch.Tensor:
    """``[R, in] -> [R, n]``: the condensed matmul by the numba kernels (float32, CPU, inference: no autograd).

    ``order``: ``"rows"`` or ``"cols"`` (see the module doc); default ``cols`` from :data:`COLS_MIN_ROWS` rows on.
    Raises ``RuntimeError`` when numba is unavailable."""
    k = _checked_kernels(values, indices)
    if x.dim() != 2 or x.dtype != torch.float32:
        raise InputError(f"x must be float32 [R, in], got {x.dtype} {tuple(x.shape)}")
    n = values.shape[0]
    order = order or ("cols" if x.shape[0] >= COLS_MIN_ROWS else "rows")
    v, i, b = _np(values), _np(indices), _bias(bias, n)
    if order == "rows":
        y = np.empty((x.shape[0], n), np.float32)
        k["rows"](_np(x), v, i, b, y, np.empty(values.shape[1], np.float32))
        return torch.from_numpy(y)
    if order != "cols":
        raise InputError(f"order must be 'rows' or 'cols', got {order!r}")
    xt = x.detach().t().contiguous().unsqueeze(0).numpy()  # [1, in, R]
    yt = np.empty((1, n, x.shape[0]), np.float32)
    k["cols"](xt, v, i, b, yt)
    # contiguous: a transposed view downstream sends e.g. attention to its slow non-fused path
    return torch.from_numpy(yt[0]).t().contiguous()


class Prepared:
    """A layer's weights as numpy views (sharing the tensors' memory), checked once: :func:`run_prepared` then
    costs only the kernel call. Built by :func:`prepare`; rebuild it when a tensor is replaced or changed."""

    __slots__ = ("values", "indices", "bias", "kernels", "key")

    def __init__(self, values: torch.Tensor, indices: torch.Tensor, bias: torch.Tensor | None, key) -> None:
        self.kernels = _checked_kernels(values, indices)
        self.values, self.indices = _np(values), _np(indices)
        self.bias = _bias(bias, values.shape[0])
        self.key = key

    def __reduce__(
        self,
    ):  # copies and pickles of a layer drop the views (they point at the original's memory)
        return (_nothing, ())

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """``[R, in] -> [R, n]`` (float32, inference), ``rows`` or ``cols`` order by the row count."""
        if x.dim() != 2 or x.dtype != torch.float32:
            raise InputError(f"x must be float32 [R, in], got {x.dtype} {tuple(x.shape)}")
        n, k = self.values.shape
        x = x.detach()
        if x.shape[0] < COLS_MIN_ROWS:
            y = np.empty((x.shape[0], n), np.float32)
            self.kernels["rows"](
                x.contiguous().numpy(), self.values, self.indices, self.bias, y, np.empty(k, np.float32)
            )
            return torch.from_numpy(y)
        yt = np.empty((1, n, x.shape[0]), np.float32)
        self.kernels["cols"](
            x.t().contiguous().unsqueeze(0).numpy(), self.values, self.indices, self.bias, yt
        )
        return torch.from_numpy(yt[0]).t().contiguous()


def _nothing() -> None:
    return None


def prepare(
    values: torch.Tensor, indices: torch.Tensor, bias: torch.Tensor | None = None, key=None
) -> Prepared:
    """Check a layer's tensors once and keep numpy views of them (``key``: what the caller compares to decide
    that the views are still current, e.g. the tensors' versions)."""
    return Prepared(values, indices, bias, key)


def numba_condensed_cols(
    xt: torch.Tensor, values: torch.Tensor, indices: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """``[B, in, L] -> [B, n, L]`` by the ``cols`` kernel: a convolution's ``unfold`` output in, its output layout
    out."""
    k = _checked_kernels(values, indices)
    if xt.dim() != 3 or xt.dtype != torch.float32:
        raise InputError(f"xt must be float32 [B, in, L], got {xt.dtype} {tuple(xt.shape)}")
    yt = np.empty((xt.shape[0], values.shape[0], xt.shape[2]), np.float32)
    k["cols"](_np(xt), _np(values), _np(indices), _bias(bias, values.shape[0]), yt)
    return torch.from_numpy(yt)


def warn_unavailable(variant: str) -> None:
    """The one warning a process gets when ``auto`` runs without any compiled kernel."""
    warnings.warn(
        f"srigl: neither numba nor a built C++ kernel is available ({_failed or 'disabled'}); condensed layers run "
        f"the slower pure-torch variant {variant!r} (`pip install numba` for the fast path)",
        stacklevel=3,
    )
