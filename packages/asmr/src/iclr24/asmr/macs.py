"""Multiply-accumulate (MAC) counts per data point: the paper's analytic formula and a forward-hook check.

ASMR (official profiler's convention; biases counted as one MAC per output):

    MAC/pt = sum_{i=0}^{L-1} (fan_in_i * fan_out_i + fan_out_i) * N_i / P
           + sum_{i=0}^{L-2} (cost(M_i) * prod_a B_{a,i+1} + h * N_i) / P

with ``N_i = prod_a C_{a,i}`` level-``i`` cells, ``P = prod_a S_a`` points, ``cost(M) = d_in * h`` for the linear
modulator and ``d_in*32 + 32 + (32*32 + 32) + 32*h + h`` for the nonlinear one. The modulation additions are
counted at ``N_i`` points, although they happen at ``N_{i+1}`` (the tiled grid): a quirk of the official
profiler that ``convention="official"`` keeps for parity with the paper's numbers; ``convention="exact"`` counts
them at ``N_{i+1}``. Since ``N_{L-2} / P = 1 / prod_a B_{a,L-1}``, MAC/pt ~ h^2 / prod_a B_{a,L-1} + h * d_out:
nearly independent of depth. An MLP/SIREN costs ``sum_i (fan_in_i * fan_out_i + fan_out_i)`` per point.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from collections.abc import Sequence

import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import describe

from .decomposition import validate_bases
from .model import ASMR
from .model import MODULATORS
from .model import SIREN

__all__ = ["asmr_macs_per_point", "mlp_macs_per_point", "macs_per_point", "count_linear_macs", "CONVENTIONS"]

CONVENTIONS = ("official", "exact")


def _modulator_cost(dim_in: int, hidden: int, modulator: str, width: int = 32) -> int:
    if modulator == "linear":
        return dim_in * hidden
    if modulator == "nonlinear":
        return dim_in * width + width + (width * width + width) + width * hidden + hidden
    raise InputError(f"modulator must be one of {MODULATORS}, got {modulator!r}")


def asmr_macs_per_point(
    bases: Sequence[Sequence[int]],
    hidden: int,
    dim_out: int = 1,
    modulator: str = "linear",
    convention: str = "official",
    modulator_width: int = 32,
) -> float:
    """The ASMR MAC formula (module docstring) for per-axis ``bases`` (the grid size is their product).

    ``asmr_macs_per_point([[4, 4, 4, 8]] * 2, 256) == 1353.75`` (512^2 grey image, L = 4, h = 256).
    """
    bases = validate_bases(bases)
    if convention not in CONVENTIONS:
        raise InputError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    for name, v in (("hidden", hidden), ("dim_out", dim_out)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be a positive int, got {v!r}")
    d_in, n_levels = len(bases), len(bases[0])
    if n_levels < 2:
        raise InputError(f"ASMR needs at least 2 levels, got bases {bases}")
    points = math.prod(math.prod(row) for row in bases)
    cells = [math.prod(math.prod(row[: i + 1]) for row in bases) for i in range(n_levels)]  # N_i
    widths = [d_in] + [hidden] * (n_levels - 1) + [dim_out]
    total = 0
    for i in range(n_levels):  # every linear layer on its N_i cells
        # MAC count (official my_profiler.py, asmr_profiler): sum_i (fan_in_i fan_out_i + fan_out_i) N_i / P
        total += (widths[i] * widths[i + 1] + widths[i + 1]) * cells[i]
    m_cost = _modulator_cost(d_in, hidden, modulator, modulator_width)
    for i in range(n_levels - 1):  # modulator i on the level-(i+1) digit grid, plus its addition
        grid = math.prod(row[i + 1] for row in bases)
        add_at = cells[i] if convention == "official" else cells[i + 1]
        # MAC count, modulators: + sum_i [cost(M_i) prod_a B_{a,i+1} + h N_i] / P (official profiler: adds counted at N_i)
        total += m_cost * grid + hidden * add_at
    return total / points


def mlp_macs_per_point(dim_in: int, hidden: int, n_layers: int, dim_out: int = 1) -> int:
    """An MLP/SIREN with ``n_layers`` linear layers: ``sum_i (fan_in_i * fan_out_i + fan_out_i)``.

    ``mlp_macs_per_point(2, 256, 7) == 329_985``."""
    for name, v in (("dim_in", dim_in), ("hidden", hidden), ("dim_out", dim_out)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be a positive int, got {v!r}")
    if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 1:
        raise InputError(f"n_layers must be a positive int, got {n_layers!r}")
    widths = [dim_in] + [hidden] * (n_layers - 1) + [dim_out]
    # the MLP baseline (official mlp_profiler): sum_i (fan_in_i fan_out_i + fan_out_i) per point
    return sum(widths[i] * widths[i + 1] + widths[i + 1] for i in range(n_layers))


def macs_per_point(model: nn.Module, convention: str = "official") -> float:
    """MACs per data point of an :class:`ASMR` (full-grid render with sharing) or :class:`SIREN`."""
    if isinstance(model, ASMR):
        return asmr_macs_per_point(
            model.bases, model.hidden, model.dim_out, model.modulator_kind, convention, model.modulator_width
        )
    if isinstance(model, SIREN):
        return float(mlp_macs_per_point(model.dim_in, model.hidden, model.n_layers, model.dim_out))
    raise InputError(f"macs_per_point expects an ASMR or SIREN model, got {type(model).__name__}")


def count_linear_macs(model: nn.Module, fn: Callable[[], object]) -> int:
    """Run ``fn()`` with forward hooks on every ``nn.Linear`` of ``model`` and return the MACs they did:
    ``rows * (in * out + out [bias])`` per call. Elementwise additions and sines are not counted."""
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be an nn.Module, got {describe(model)}")
    if not callable(fn):
        raise InputError(f"fn must be a function to run, got {describe(fn)}")
    total = 0

    def hook(mod: nn.Linear, inputs: tuple[torch.Tensor, ...], _output: torch.Tensor) -> None:
        nonlocal total
        rows = inputs[0].numel() // mod.in_features
        total += rows * (
            mod.in_features * mod.out_features + (mod.out_features if mod.bias is not None else 0)
        )

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.Linear)]
    try:
        with torch.no_grad():
            fn()
    finally:
        for h in handles:
            h.remove()
    return total
