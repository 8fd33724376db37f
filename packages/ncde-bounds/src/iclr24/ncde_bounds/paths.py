"""Irregularly sampled time series as continuous controls: validation, interpolation, total variation.

Notation (the paper's NCDE model): a series ``x = (x_{t_0}, ..., x_{t_K})`` in ``R^{d x (K+1)}`` on the grid
``D = {t_0 < ... < t_K}``; ``x~^D`` is its interpolation; ``|D| = max_j (t_{j+1} - t_j)`` is the sampling gap and
``||x~^D||_{1-var} = sum_j ||x_{t_{j+1}} - x_{t_j}||`` the total variation of the piecewise-linear interpolation.

A CDE driven by an interpolated path does not depend on how time is parametrised, so every solve here runs in
*index time* ``s in [0, K]``: interval ``j`` is ``s in [j, j + 1]`` with local coordinate ``u = s - j``. This makes a
batch of series on different grids one batched solve, and padding (repeated last values) adds zero increments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_choice
from iclr24.paperkit.errors import check_tensor

__all__ = [
    "INTERPOLATIONS",
    "Control",
    "add_time_channel",
    "build_control",
    "pad_series",
    "sampling_gap",
    "total_variation",
    "validate_series",
]

INTERPOLATIONS = ("linear", "cubic")


def _as_tensor(name: str, x: object, dtype: torch.dtype | None = None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        t = x
    else:
        try:
            t = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError) as e:
            raise InputError(f"{name} must be a tensor or array of numbers, got {type(x).__name__}") from e
    if not (
        t.is_floating_point() or t.dtype in (torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8)
    ):
        raise InputError(f"{name} must hold real numbers, got dtype {t.dtype}")
    if dtype is not None:
        t = t.to(dtype)
    elif not t.is_floating_point():
        t = t.to(torch.get_default_dtype())
    return t


def validate_series(
    times: object,
    values: object,
    *,
    lengths: object | None = None,
    mask: object | None = None,
    input_channels: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Check a batch of series and return ``(times (B, L), values (B, L, c), lengths (B,))``.

    ``values``: ``(B, L, c)`` or ``(L, c)``; ``times``: ``(L,)`` shared or ``(B, L)``. ``lengths`` marks the valid
    prefix of each series (the rest is ignored). Within it, times must not decrease, and a repeated time stamp must
    repeat the observation (that is how padding looks). NaN observations need ``mask`` (True = observed); missing
    values are then filled with the last observation (the first one before it), a channel never observed with 0.
    """
    v = _as_tensor("values", values)
    if v.dim() == 2:
        v = v.unsqueeze(0)
    if v.dim() != 3:
        raise InputError(
            f"values must have shape (batch, length, channels) or (length, channels), got {tuple(v.shape)}"
        )
    b, length, c = v.shape
    if input_channels is not None and c != input_channels:
        raise InputError(f"the model expects {input_channels} channels per observation, values have {c}")
    if length < 2:
        raise InputError(f"a series needs at least 2 observations to define a path, got length {length}")
    if b == 0 or c == 0:
        raise InputError(f"values is empty: shape {tuple(v.shape)}")
    t = _as_tensor("times", times, dtype=v.dtype).to(v.device)
    if t.dim() == 1:
        t = t.unsqueeze(0).expand(b, -1)
    if t.dim() != 2 or t.shape != (b, length):
        raise InputError(
            f"times must have shape ({length},) or ({b}, {length}) to match values, got {tuple(t.shape)}"
        )
    if lengths is None:
        n = torch.full((b,), length, dtype=torch.long, device=v.device)
    else:
        n = torch.as_tensor(lengths).reshape(-1)
        if n.is_floating_point() or n.shape != (b,):
            raise InputError(f"lengths must be {b} integers, got {tuple(n.shape)} of dtype {n.dtype}")
        n = n.long().to(v.device)
        if (n < 2).any() or (n > length).any():
            raise InputError(
                f"every length must be in [2, {length}], got min {int(n.min())}, max {int(n.max())}"
            )
    valid_obs = torch.arange(length, device=v.device).unsqueeze(0) < n.unsqueeze(1)  # (B, L)
    if not torch.isfinite(t[valid_obs]).all():
        raise InputError("times must be finite numbers (found NaN or inf)")
    if mask is None:
        if torch.isnan(v[valid_obs]).any():
            raise InputError(
                "values contain NaN; pass mask= (True where observed) to mark missing observations"
            )
    else:
        m = torch.as_tensor(mask, device=v.device)
        if m.shape != v.shape:
            raise InputError(f"mask must have the shape of values {tuple(v.shape)}, got {tuple(m.shape)}")
        v = _fill_missing(v, m.bool() & ~torch.isnan(v))
    if not torch.isfinite(v[valid_obs]).all():
        raise InputError("values must be finite (found inf)")
    dt = t[:, 1:] - t[:, :-1]
    valid_int = torch.arange(length - 1, device=v.device).unsqueeze(0) < (n - 1).unsqueeze(1)
    if (dt[valid_int] < 0).any():
        bad = int(torch.nonzero((dt < 0) & valid_int)[0, 0])
        raise InputError(f"time stamps must increase within each series; series {bad} has a decreasing step")
    repeat = (dt == 0) & valid_int
    dx = v[:, 1:] - v[:, :-1]
    if (repeat & (dx.abs().amax(-1) > 0)).any():
        bad = int(torch.nonzero(repeat & (dx.abs().amax(-1) > 0))[0, 0])
        raise InputError(
            f"time stamps must increase within each series; series {bad} repeats a time stamp with a different "
            "observation (only padding may repeat, and it repeats the last value)"
        )
    if ((dt > 0) & valid_int).sum(-1).min() < 1:
        raise InputError("every series needs at least 2 distinct time stamps")
    # past each length, repeat the last valid observation: padding then adds exactly zero increments
    last = (n - 1).clamp(max=length - 1)
    idx = torch.minimum(torch.arange(length, device=v.device).unsqueeze(0), last.unsqueeze(1))  # (B, L)
    t = t.gather(1, idx)
    v = v.gather(1, idx.unsqueeze(-1).expand(-1, -1, c))
    return t, v, n


def _fill_missing(v: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
    """Last observation carried forward (batched, per channel); leading gaps take the first observation."""
    length = v.shape[1]
    idx = torch.arange(length, device=v.device).view(1, length, 1).expand_as(v)
    fwd = torch.where(observed, idx, torch.zeros_like(idx)).cummax(dim=1).values
    first = torch.where(observed, idx, torch.full_like(idx, length)).amin(dim=1, keepdim=True)  # (B, 1, c)
    fwd = torch.where(fwd < first, first.clamp(max=length - 1).expand_as(fwd), fwd)
    vz = torch.where(observed, v, torch.zeros_like(v))
    out = vz.gather(1, fwd)
    never = (first >= length).expand_as(v)
    return torch.where(never, torch.zeros_like(out), out)


def add_time_channel(times: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Prepend time as channel 0: ``(B, L, c) -> (B, L, c + 1)`` (the paper's NCDE model: time is one of the ``d`` channels)."""
    check_tensor(values, "values", ndim=3, kind="float", allow_empty=True)
    check_tensor(times, "times", ndim=(1, 2), kind="float", allow_empty=True)
    want = (values.shape[1],) if times.dim() == 1 else tuple(values.shape[:2])
    if tuple(times.shape) != want:
        raise InputError(
            f"times must be (L,) or (B, L) for values {tuple(values.shape)}, got {tuple(times.shape)}"
        )
    if times.dim() == 1:
        times = times.unsqueeze(0).expand(values.shape[0], -1)
    return torch.cat([times.unsqueeze(-1).to(values.dtype), values], dim=-1)


def _interval_mask(lengths: torch.Tensor, n_intervals: int) -> torch.Tensor:
    return torch.arange(n_intervals, device=lengths.device).unsqueeze(0) < (lengths - 1).unsqueeze(1)


def total_variation(values: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
    """``||x~^D||_{1-var} = sum_j ||x_{t_{j+1}} - x_{t_j}||_2`` per series; ``values (B, L, d) -> (B,)``.

    Exact for the piecewise-linear interpolation; it never decreases when the grid is refined (triangle inequality).
    Include the time channel (:func:`add_time_channel`) to match the paper's path. NaN (a missing observation) is
    refused: fill it first (:func:`validate_series` with ``mask=``)."""
    values = _series("total_variation", "values", values, 3)
    inc = (values[:, 1:] - values[:, :-1]).norm(dim=-1)
    if lengths is not None:
        inc = inc * _interval_mask(_lengths("total_variation", lengths, values.shape[:2]), inc.shape[1])
    return inc.sum(-1)


def sampling_gap(times: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
    """``|D| = max_j (t_{j+1} - t_j)`` per series; ``times (B, L)`` or ``(L,)`` -> ``(B,)``."""
    times = _series("sampling_gap", "times", times, 2)
    dt = times[:, 1:] - times[:, :-1]
    if lengths is not None:
        dt = dt * _interval_mask(_lengths("sampling_gap", lengths, times.shape[:2]), dt.shape[1])
    return dt.amax(-1)


def _series(fn: str, name: str, x: object, dims: int) -> torch.Tensor:
    """A batch of series as a float tensor with ``dims`` dimensions (one fewer adds the batch dimension); finite."""
    t = _as_tensor(name, x)
    if t.dim() == dims - 1:
        t = t.unsqueeze(0)
    shape = "(batch, length, channels) or (length, channels)" if dims == 3 else "(batch, length) or (length,)"
    if t.dim() != dims or t.shape[1] < 2:
        raise InputError(f"{fn}: {name} must have shape {shape} with length >= 2, got {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        bad = "NaN" if bool(torch.isnan(t).any()) else "inf"
        raise InputError(
            f"{fn}: {name} contain {bad}; fill missing observations first (validate_series(..., mask=...))"
        )
    return t


def _lengths(fn: str, lengths: object, shape: tuple[int, int]) -> torch.Tensor:
    b, length = shape
    n = torch.as_tensor(lengths).reshape(-1)
    if n.is_floating_point() or n.shape != (b,) or int(n.min()) < 2 or int(n.max()) > length:
        raise InputError(f"{fn}: lengths must be {b} integers in [2, {length}], got {n.tolist()[:8]}")
    return n.long()


def pad_series(
    times: Sequence[object], values: Sequence[object]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Stack series of different lengths by repeating each one's last time stamp and value (zero increments).

    Returns ``(times (B, L), values (B, L, c), lengths (B,))``."""
    if len(times) != len(values) or len(times) == 0:
        raise InputError(
            f"need as many time vectors as value arrays (>= 1), got {len(times)} and {len(values)}"
        )
    ts = [_as_tensor("times[i]", t).reshape(-1) for t in times]
    vs = []
    for i, v in enumerate(values):
        v = _as_tensor(f"values[{i}]", v)
        v = v.unsqueeze(-1) if v.dim() == 1 else v
        if v.dim() != 2 or v.shape[0] != ts[i].shape[0]:
            raise InputError(
                f"values[{i}] must be (length, channels) with length {ts[i].shape[0]}, got {tuple(v.shape)}"
            )
        vs.append(v)
    if len({v.shape[1] for v in vs}) != 1:
        raise InputError(f"all series need the same channel count, got {sorted({v.shape[1] for v in vs})}")
    length = max(t.shape[0] for t in ts)
    tp = torch.stack([torch.cat([t, t[-1:].expand(length - t.shape[0])]) for t in ts])
    vp = torch.stack([torch.cat([v, v[-1:].expand(length - v.shape[0], -1)]) for v in vs])
    return tp, vp.to(tp.dtype), torch.tensor([t.shape[0] for t in ts])


@dataclass
class Control:
    """An interpolated control ``x~^D`` in index time: ``x0 (B, d)``, increments ``dx (B, K, d)`` (zero on
    padding) and, for the cubic Hermite path, the left-end derivatives ``m0 (B, K, d)`` in local coordinates."""

    x0: torch.Tensor
    dx: torch.Tensor
    m0: torch.Tensor | None = None

    @property
    def n_intervals(self) -> int:
        return self.dx.shape[1]

    def derivative(self, j: int, u: float) -> torch.Tensor:
        """``d x~ / du`` on interval ``j`` at local ``u in [0, 1]``: ``(B, d)``."""
        if self.m0 is None:
            # piecewise-linear path: dx~/du = Delta x_j on the whole interval
            return self.dx[:, j]
        # Hermite cubic with m1 = Delta x_j: dx/du = Delta x (4u - 3u^2) + m0 (1 - u)(1 - 3u)
        return self.dx[:, j] * (4 * u - 3 * u * u) + self.m0[:, j] * ((1 - u) * (1 - 3 * u))

    def evaluate(self, s: float) -> torch.Tensor:
        """``x~`` at index time ``s in [0, K]``: ``(B, d)``; equals the observation at every integer ``s``."""
        k = self.n_intervals
        if not 0 <= s <= k:
            raise InputError(f"index time must be in [0, {k}], got {s}")
        j = min(int(s), k - 1)
        u = s - j
        base = self.x0 + self.dx[:, :j].sum(1)
        if self.m0 is None:
            return base + u * self.dx[:, j]
        return base + self.dx[:, j] * (2 * u * u - u**3) + self.m0[:, j] * (u - 2 * u * u + u**3)


def build_control(
    times: torch.Tensor,
    values: torch.Tensor,
    lengths: torch.Tensor | None = None,
    interpolation: str = "linear",
) -> Control:
    """Interpolate (already validated) series: ``"linear"`` or ``"cubic"`` (Hermite with backward differences, as
    torchcde's ``hermite_cubic_coefficients_with_backward_differences``). ``values`` are the control's channels."""
    check_choice(interpolation, "interpolation", INTERPOLATIONS)
    if times.dim() == 1:
        times = times.unsqueeze(0).expand(values.shape[0], -1)
    dx = values[:, 1:] - values[:, :-1]
    dt = times[:, 1:] - times[:, :-1]
    if lengths is not None:
        keep = _interval_mask(lengths, dx.shape[1])
        dx = torch.where(keep.unsqueeze(-1), dx, torch.zeros_like(dx))
        dt = torch.where(keep, dt, torch.zeros_like(dt))
    if interpolation == "linear":
        return Control(values[:, 0], dx)
    # left derivative of interval j in local coordinates: dt_j * (x_j - x_{j-1}) / dt_{j-1}; interval 0 uses its own
    # slope; a zero-length (padding) previous interval gives 0.
    safe = torch.where(dt > 0, dt, torch.ones_like(dt))
    slope = torch.where((dt > 0).unsqueeze(-1), dx / safe.unsqueeze(-1), torch.zeros_like(dx))
    prev = torch.cat([slope[:, :1], slope[:, :-1]], dim=1)
    m0 = dt.unsqueeze(-1) * prev
    return Control(values[:, 0], dx, m0)
