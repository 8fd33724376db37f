"""The paper's synthetic setting (its experiments, reconstructed): smooth and Brownian controls on a fine grid, a random true
CDE as teacher, coarse uniform and irregular sub-grids, and the sampling-bias oracle.

Well-specified model (the paper's risk decomposition): ``y = <alpha, z*_1> + eps`` with ``dz* = G*(z*) dx`` driven by the
*continuous* path ``x``; the fine grid (2048 steps by default) stands in for ``x``. The paper's generators are not
public, so the constants below are this package's reconstruction.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from iclr24.paperkit.errors import InputError

from .model import VectorField
from .model import solve_cde
from .paths import add_time_channel
from .paths import build_control
from .paths import sampling_gap
from .paths import total_variation

__all__ = [
    "TrueCDE",
    "brownian_paths",
    "irregular_grid_indices",
    "sampling_bias_oracle",
    "smooth_paths",
    "subsample",
    "true_cde",
    "uniform_grid_indices",
]


def _generator(seed: int) -> torch.Generator:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"seed must be an int, got {seed!r}")
    return torch.Generator().manual_seed(seed)


def _check_sizes(n: int, n_fine: int) -> None:
    for name, v in (("n", n), ("n_fine", n_fine)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10**7:
            raise InputError(f"{name} must be a positive int (at most 10**7), got {v!r}")
    if n * (n_fine + 1) > 10**9:
        raise InputError(f"{n} paths of {n_fine + 1} points are too many values (over 10**9)")


def smooth_paths(n: int, *, n_fine: int = 2048, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``x_t = 1/2 sum_{m=1..3} A_m sin(2 pi m t + phi_m)``, ``A_m ~ N(0, 1)``, ``phi_m ~ U(0, 2 pi)`` on
    ``n_fine + 1`` uniform points of [0, 1]. Returns ``(times (n_fine + 1,), values (n, n_fine + 1, 1))``, float64."""
    _check_sizes(n, n_fine)
    g = _generator(seed)
    t = torch.linspace(0, 1, n_fine + 1, dtype=torch.float64)
    amp = torch.randn(n, 3, generator=g, dtype=torch.float64)
    phase = 2 * math.pi * torch.rand(n, 3, generator=g, dtype=torch.float64)
    m = torch.arange(1, 4, dtype=torch.float64)
    x = 0.5 * (amp[:, None, :] * torch.sin(2 * math.pi * m * t[:, None] + phase[:, None, :])).sum(-1)
    return t, x.unsqueeze(-1)


def brownian_paths(n: int, *, n_fine: int = 2048, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Standard Brownian motion ``W_t`` on ``n_fine + 1`` uniform points of [0, 1], ``W_0 = 0``, float64."""
    _check_sizes(n, n_fine)
    g = _generator(seed)
    t = torch.linspace(0, 1, n_fine + 1, dtype=torch.float64)
    inc = torch.randn(n, n_fine, generator=g, dtype=torch.float64) * math.sqrt(1.0 / n_fine)
    w = torch.cat([torch.zeros(n, 1, dtype=torch.float64), inc.cumsum(1)], dim=1)
    return t, w.unsqueeze(-1)


def uniform_grid_indices(n_fine: int, k: int) -> torch.Tensor:
    """``K + 1`` uniform indices into a fine grid of ``n_fine + 1`` points (``n_fine`` divisible by ``K``)."""
    _check_sizes(1, n_fine)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1 or n_fine % k:
        raise InputError(f"K must be a positive int dividing the fine grid size {n_fine}, got {k!r}")
    return torch.arange(0, n_fine + 1, n_fine // k)


def irregular_grid_indices(n_fine: int, k: int, batch: int, *, seed: int = 0) -> torch.Tensor:
    """Per-series irregular grids: ``0``, ``n_fine`` and ``K - 1`` distinct interior indices drawn uniformly.
    Returns ``(batch, K + 1)`` sorted indices."""
    _check_sizes(1, n_fine)
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 10**7:
        raise InputError(f"batch (number of series) must be a positive int, got {batch!r}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n_fine:
        raise InputError(f"K must be an int in [1, {n_fine}], got {k!r}")
    g = _generator(seed)
    interior = torch.rand(batch, n_fine - 1, generator=g).argsort(dim=1)[:, : k - 1] + 1
    ends = torch.tensor([0, n_fine]).expand(batch, 2)
    return torch.cat([ends, interior], dim=1).sort(dim=1).values


def subsample(
    times: torch.Tensor, values: torch.Tensor, idx: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Observe fine-grid series at indices ``idx`` (``(K + 1,)`` shared or ``(B, K + 1)``): integers into the fine
    grid, increasing along each row (a grid is a set of distinct, ordered time points)."""
    if not isinstance(values, torch.Tensor) or values.dim() != 3:
        got = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values).__name__
        raise InputError(f"values must be a (batch, length, channels) tensor, got {got}")
    b, length = values.shape[:2]
    if not isinstance(times, torch.Tensor) or times.shape not in ((length,), (b, length)):
        got = tuple(times.shape) if isinstance(times, torch.Tensor) else type(times).__name__
        raise InputError(f"times must have shape ({length},) or ({b}, {length}) to match values, got {got}")
    idx = torch.as_tensor(idx)
    if idx.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise InputError(f"idx must hold integer indices into the fine grid, got dtype {idx.dtype}")
    if idx.dim() not in (1, 2) or idx.shape[-1] < 2 or (idx.dim() == 2 and idx.shape[0] != b):
        raise InputError(
            f"idx must have shape (K + 1,) or ({b}, K + 1) with K >= 1 (one row per series), got {tuple(idx.shape)}"
        )
    if int(idx.min()) < 0 or int(idx.max()) >= length:
        raise InputError(
            f"idx must index the fine grid of {length} points: expected 0 <= idx <= {length - 1}, got "
            f"[{int(idx.min())}, {int(idx.max())}]"
        )
    if bool((idx[..., 1:] <= idx[..., :-1]).any()):
        raise InputError("idx must increase strictly along each grid (sorted, distinct observation indices)")
    idx = idx.long()
    if idx.dim() == 1:
        idx = idx.unsqueeze(0).expand(b, -1)
    t = times[idx] if times.dim() == 1 else times.gather(1, idx)
    v = values.gather(1, idx.unsqueeze(-1).expand(-1, -1, values.shape[-1]))
    return t, v


@dataclass
class TrueCDE:
    """Teacher ``y = <alpha, z*_1>``, ``dz* = G*(z*) dx``, ``G*(z) = tanh(W z + b)``, ``z*_0 = z0`` (float64).
    The control is ``(t, x_t)``: time is channel 0."""

    vector_field: VectorField
    z0: torch.Tensor
    alpha: torch.Tensor

    @torch.no_grad()
    def __call__(
        self,
        times: torch.Tensor,
        values: torch.Tensor,
        *,
        solver: str = "rk4",
        substeps: int = 4,
        on_interval: Callable[[int], None] | None = None,
    ) -> torch.Tensor:
        """Outputs ``(B,)`` for series ``values (B, L, c)`` observed at ``times`` (piecewise-linear path);
        ``on_interval`` as :func:`~.model.solve_cde`."""
        v = values.to(torch.float64)
        t = times.to(torch.float64)
        x = add_time_channel(t, v)
        ctrl = build_control(t if t.dim() == 2 else t.expand(v.shape[0], -1), x)
        z0 = self.z0.expand(v.shape[0], -1)
        z1 = solve_cde(self.vector_field, z0, ctrl, solver=solver, substeps=substeps, on_interval=on_interval)
        # well-specified model (risk decomposition): y = <alpha, z*_1>
        return z1 @ self.alpha


def true_cde(
    hidden: int = 3, control_dim: int = 2, *, weight_scale: float = 1.5, bias_std: float = 0.5, seed: int = 0
) -> TrueCDE:
    """Random teacher: ``W ~ N(0, weight_scale^2 / p)``, ``b ~ N(0, bias_std^2)``, ``z0 = 0.5 * 1``,
    ``alpha ~ N(0, I)``; ``p = hidden``, ``d = control_dim``."""
    g = _generator(seed)
    vf = VectorField(hidden, control_dim, depth=0).double()
    with torch.no_grad():
        lin = vf.layers[0]
        lin.weight.copy_(
            torch.randn(lin.weight.shape, generator=g, dtype=torch.float64) * weight_scale / hidden**0.5
        )
        lin.bias.copy_(torch.randn(lin.bias.shape, generator=g, dtype=torch.float64) * bias_std)
    vf.requires_grad_(False)
    z0 = torch.full((1, hidden), 0.5, dtype=torch.float64)
    alpha = torch.randn(hidden, generator=g, dtype=torch.float64)
    return TrueCDE(vf, z0, alpha)


@torch.no_grad()
def sampling_bias_oracle(
    teacher: TrueCDE,
    times: torch.Tensor,
    values: torch.Tensor,
    grids: dict[str, torch.Tensor],
    *,
    substeps: int = 4,
    reference_substeps: int = 1,
    show_progress: bool = False,
) -> dict[str, dict[str, torch.Tensor]]:
    """The sampling-induced bias with no learning: the same CDE on the fine path vs on ``x~^D``.

    ``grids`` maps a name to indices into the fine grid (``(K + 1,)`` shared or ``(B, K + 1)`` per series). For
    each returns per-series tensors ``(B,)``: ``sq_err = (y(x~^D) - y(x))^2``, ``tv`` (total variation of
    ``x~^D``, time channel included) and ``gap`` (``|D|``). All grids run as one padded batch (zero increments).
    ``show_progress``: a progress bar over the intervals of the two solves (paperkit's, silenced by ``--quiet``)."""
    if not isinstance(grids, dict) or not grids:
        raise InputError("grids must name at least one sub-grid")
    for name, v in (("substeps", substeps), ("reference_substeps", reference_substeps)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 2**12:
            raise InputError(f"{name} must be an int in [1, 4096], got {v!r}")
    ts, vs, lens = [], [], []
    for name, idx in grids.items():
        try:
            t, v = subsample(times, values, idx)
        except ValueError as e:
            raise InputError(f"grid {name!r}: {e}") from None
        ts.append(t)
        vs.append(v)
        lens.append(t.shape[1])
    b = values.shape[0]
    length = max(lens)
    from iclr24.paperkit import progress

    with progress(
        total=values.shape[1] - 1 + length - 1,
        desc="oracle: CDE solves (intervals)",
        disable=None if show_progress else True,
    ) as bar:
        step = lambda _j: bar.update(1)  # noqa: E731
        y_ref = teacher(times, values, substeps=reference_substeps, on_interval=step)
        tp = torch.cat([torch.cat([t, t[:, -1:].expand(-1, length - t.shape[1])], 1) for t in ts])
        vp = torch.cat([torch.cat([v, v[:, -1:].expand(-1, length - v.shape[1], -1)], 1) for v in vs])
        y = teacher(tp, vp, substeps=substeps, on_interval=step).view(len(grids), b)
    out: dict[str, dict[str, torch.Tensor]] = {}
    for i, (key, t, v) in enumerate(zip(grids, ts, vs, strict=True)):
        out[key] = {
            "sq_err": (y[i] - y_ref) ** 2,
            "tv": total_variation(add_time_channel(t, v)),
            "gap": sampling_gap(t),
            "y_ref": y_ref,
        }
    return out
