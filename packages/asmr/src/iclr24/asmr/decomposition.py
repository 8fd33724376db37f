"""Multi-resolution coordinate decomposition (paper Sec. 3.1): pure functions on integer coordinates.

An axis of size ``S_a`` is split into ``L`` levels with bases ``B_{a,0..L-1}`` (coarse to fine), whose product
is ``S_a``. With the cumulative products ``C_{a,l} = prod_{j<=l} B_{a,j}`` and strides ``s_{a,l} = S_a / C_{a,l}``,
an integer index ``p`` has the mixed-radix digits ``c_{a,l} = floor(p / s_{a,l}) mod B_{a,l}`` and
``p = sum_l c_{a,l} s_{a,l}``. The network sees the digits scaled to [0, 1]: ``c / (B - 1)`` (0 when ``B = 1``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe

__all__ = [
    "validate_bases",
    "cumulative_products",
    "level_strides",
    "decompose_coords",
    "normalize_digits",
    "compose_digits",
    "grid_coords",
    "suggest_bases",
    "parse_bases",
    "format_bases",
]


def validate_bases(
    bases: Sequence[Sequence[int]], data_shape: Sequence[int] | None = None
) -> list[list[int]]:
    """Check the per-axis bases and return them as ``list[list[int]]``.

    ``bases[a][l]`` is the base of axis ``a`` at level ``l``. Every axis must have the same number of levels
    (>= 1), every base must be a positive int, and (when ``data_shape`` is given) ``prod_l bases[a][l]`` must
    equal ``data_shape[a]``. Raises ``ValueError`` saying which axis is wrong and what to do.
    """
    if isinstance(bases, str | bytes) or not isinstance(bases, Sequence) or len(bases) == 0:
        raise InputError(
            f"bases must be a non-empty list of per-axis lists of ints, e.g. [[4, 4, 4, 8], "
            f"[4, 4, 6, 8]], got {bases!r}"
        )
    out: list[list[int]] = []
    for a, axis in enumerate(bases):
        if isinstance(axis, str | bytes) or not isinstance(axis, Sequence) or len(axis) == 0:
            raise InputError(
                f"bases[{a}] must be a non-empty list of ints (one base per level), got {axis!r}"
            )
        row = []
        for b in axis:
            if isinstance(b, bool) or not isinstance(b, int) or b < 1:
                raise InputError(f"bases[{a}] must hold positive ints, got {list(axis)!r}")
            row.append(int(b))
        out.append(row)
    levels = {len(r) for r in out}
    if len(levels) != 1:
        raise InputError(
            "every axis needs the same number of levels; got level counts "
            f"{[len(r) for r in out]} for bases {out} (pad an axis with 1s, e.g. [1, 4, 8, 16])"
        )
    if data_shape is not None:
        shape = list(data_shape)
        if len(shape) != len(out):
            raise InputError(
                f"bases have {len(out)} axes but data_shape {tuple(shape)} has {len(shape)}; give "
                "one list of bases per axis"
            )
        for a, (row, s) in enumerate(zip(out, shape)):
            if math.prod(row) != s:
                raise InputError(
                    f"axis {a}: the bases {row} multiply to {math.prod(row)} but the axis has size "
                    f"{s}; choose bases whose product is {s} (see suggest_bases({s}, {len(row)}))"
                )
    return out


def cumulative_products(bases: Sequence[Sequence[int]]) -> torch.Tensor:
    """``C[a, l] = prod_{j<=l} B[a, j]`` as an int64 tensor of shape ``(D, L)``."""
    b = torch.tensor(validate_bases(bases), dtype=torch.int64)
    return torch.cumprod(b, dim=1)


def level_strides(bases: Sequence[Sequence[int]]) -> torch.Tensor:
    """Strides ``s[a, l] = S_a / C[a, l]`` (shape ``(D, L)``, int64): e.g. [4, 4, 4, 8] -> [128, 32, 8, 1]."""
    c = cumulative_products(bases)
    return c[:, -1:] // c


def decompose_coords(coords: torch.Tensor, bases: Sequence[Sequence[int]]) -> torch.Tensor:
    """Digits ``c[n, l, a] = floor(p[n, a] / s[a, l]) mod B[a, l]`` (Sec. 3.1).

    ``coords``: integer tensor ``(N, D)`` with ``0 <= p[:, a] < S_a``. Returns int64 ``(N, L, D)``.
    """
    bases = validate_bases(bases)
    if coords.dtype.is_floating_point or coords.dtype == torch.bool or coords.dtype.is_complex:
        raise InputError(
            f"coords must be an integer tensor of pixel indices, got dtype {coords.dtype}; use "
            "grid_coords(shape) or torch.long indices"
        )
    if coords.ndim != 2 or coords.shape[1] != len(bases):
        raise InputError(f"coords must have shape (N, {len(bases)}), got {tuple(coords.shape)}")
    b = torch.tensor(bases, dtype=torch.int64, device=coords.device).T  # (L, D)
    s = level_strides(bases).to(coords.device).T  # (L, D)
    sizes = b.prod(dim=0)
    p = coords.to(torch.int64)
    if p.numel() and (bool((p < 0).any()) or bool((p >= sizes).any())):
        bad = ((p < 0) | (p >= sizes)).any(dim=0).nonzero().flatten().tolist()
        raise InputError(
            f"coords out of range on axis {bad}: each axis a needs 0 <= p < S_a with S = "
            f"{tuple(sizes.tolist())}, got min {p.min(0).values.tolist()} max {p.max(0).values.tolist()}"
        )
    # Sec. 3.1 (multi-resolution coordinates): c_{a,l} = floor(p_a / s_{a,l}) mod B_{a,l}
    return torch.div(p[:, None, :], s[None], rounding_mode="floor") % b[None]


def _check_digits(digits: object, bases: Sequence[Sequence[int]]) -> None:
    b = validate_bases(bases)
    check_tensor(digits, "digits", shape=(None, len(b[0]), len(b)), kind="any", allow_empty=True)
    if digits.is_complex():
        raise InputError(f"digits must be real, got {describe(digits)}")


def normalize_digits(
    digits: torch.Tensor, bases: Sequence[Sequence[int]], dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """``c_hat = c / (B - 1)`` in [0, 1]; levels with ``B = 1`` give 0. ``digits``: ``(N, L, D)``."""
    _check_digits(digits, bases)
    b = torch.tensor(validate_bases(bases), dtype=dtype, device=digits.device).T  # (L, D)
    denom = torch.where(b > 1, b - 1, torch.ones_like(b))
    # Sec. 3.1: c_hat_{a,l} = c_{a,l} / (B_{a,l} - 1), and 0 where B_{a,l} = 1
    return torch.where(b > 1, digits.to(dtype) / denom, torch.zeros((), dtype=dtype, device=digits.device))


def compose_digits(digits: torch.Tensor, bases: Sequence[Sequence[int]]) -> torch.Tensor:
    """Inverse of :func:`decompose_coords`: ``p[n, a] = sum_l c[n, l, a] * s[a, l]``. Returns ``(N, D)``."""
    _check_digits(digits, bases)
    s = level_strides(bases).to(digits.device).T  # (L, D)
    # Sec. 3.1: p_a = sum_l c_{a,l} s_{a,l}
    return (digits.to(torch.int64) * s[None]).sum(dim=1)


def grid_coords(shape: Sequence[int], device: torch.device | str | None = None) -> torch.Tensor:
    """All integer coordinates of a grid in row-major order: int64 ``(prod(shape), len(shape))``."""
    if isinstance(shape, str | bytes) or not isinstance(shape, Sequence) or not shape:
        raise InputError(f"shape must be a non-empty list of positive sizes, got {describe(shape)}")
    shape = [check_int(s, "each grid size", minimum=1, maximum=2**31) for s in shape]
    if math.prod(shape) > 2**31:
        raise InputError(f"a grid of {math.prod(shape)} points is too large (over 2**31)")
    axes = [torch.arange(s, device=device) for s in shape]
    return torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1).reshape(-1, len(shape))


def _prime_factors(n: int) -> list[int]:
    out, d = [], 2
    while d * d <= n:
        while n % d == 0:
            out.append(d)
            n //= d
        d += 1
    if n > 1:
        out.append(n)
    return out


def suggest_bases(size: int, n_levels: int) -> list[int]:
    """Split ``size`` into ``n_levels`` bases (coarse to fine) whose product is ``size``.

    Prime factors are dealt, largest first, to the level with the smallest product so far; the result is sorted
    ascending so the finest level gets the largest base (the MAC cost ~ h^2 / prod_a B_{a,L-1}, Sec. 3.3).
    ``suggest_bases(512, 4) == [4, 4, 4, 8]``, ``suggest_bases(768, 4) == [4, 4, 6, 8]``. A large prime factor
    makes one big level: crop or pad the signal to a size with small factors instead.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InputError(f"size must be a positive int, got {size!r}")
    if isinstance(n_levels, bool) or not isinstance(n_levels, int) or not 1 <= n_levels <= 64:
        raise InputError(f"n_levels must be a positive int, got {n_levels!r}")
    bins = [1] * n_levels
    for f in sorted(_prime_factors(size), reverse=True):
        i = min(range(n_levels), key=lambda k: (bins[k], k))
        bins[i] *= f
    return sorted(bins)


def parse_bases(text: str) -> list[list[int]]:
    """Parse ``"4,4,4,8;4,4,6,8"`` (axes separated by ``;`` or ``/``, levels by ``,``) into lists of ints."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"bases must look like '4,4,4,8;4,4,6,8' (one comma list per axis), got {text!r}")
    rows = []
    for part in text.replace("/", ";").split(";"):
        try:
            rows.append([int(x) for x in part.split(",") if x.strip()])
        except ValueError:
            raise InputError(f"bases must look like '4,4,4,8;4,4,6,8' (ints only), got {text!r}") from None
    return validate_bases(rows)


def format_bases(bases: Sequence[Sequence[int]]) -> str:
    """The inverse of :func:`parse_bases`."""
    return ";".join(",".join(str(b) for b in row) for row in validate_bases(bases))
