"""Coordinate batches for training on signals too large for one full batch (the paper's megapixel runs).

The official megapixel and video runs draw their batches from a *uniform grid sampler* (``uniform_grid_sampler``
in the official ``dataset.py``, read to check its behaviour; nothing is copied): the grid is split into equal
cells (``grid_dims: [16, 16]`` for images), and one epoch is a partition of every point into batches that each
hold the same number of points from every cell, at the same within-cell offsets in every cell. The offsets are
shuffled once, so the batches (and their order) are fixed for the whole run, and every point is visited exactly
once per epoch. :func:`uniform_grid_batches` builds that partition for any number of axes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

from .decomposition import grid_coords

__all__ = ["DEFAULT_GRID_CELLS", "uniform_grid_batches", "grid_cells_for"]

DEFAULT_GRID_CELLS = 16  # cells per axis of the official image configs (grid_dims: [16, 16])


def _ints(name: str, values: Sequence[int]) -> list[int]:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
        raise InputError(f"{name} must be a non-empty list of positive ints, got {describe(values)}")
    out = [check_int(v, f"each entry of {name}", minimum=1, maximum=2**31) for v in values]
    if math.prod(out) > 2**31:
        raise InputError(f"{name} {out} hold {math.prod(out)} points, too many (over 2**31)")
    return out


def grid_cells_for(data_shape: Sequence[int], cells: Sequence[int] | None = None) -> list[int]:
    """The cells per axis: ``cells`` as given (checked against ``data_shape``), or the official 16 per axis."""
    shape = _ints("data_shape", data_shape)
    grid = [DEFAULT_GRID_CELLS] * len(shape) if cells is None else _ints("grid cells", cells)
    if len(grid) != len(shape):
        raise InputError(f"grid cells {grid} must give one count per axis of the data shape {tuple(shape)}")
    bad = [(s, g) for s, g in zip(shape, grid) if s % g]
    if bad:
        raise InputError(
            f"each axis size must be a multiple of its cell count; {bad[0][0]} is not a multiple of {bad[0][1]} "
            f"(data shape {tuple(shape)}, cells {grid}): choose cells that divide the axes"
        )
    return grid


def uniform_grid_batches(
    data_shape: Sequence[int],
    batch_size: int,
    cells: Sequence[int] | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """One epoch of uniform-grid batches: int64 ``(n_batches, batch_size, D)`` integer coordinates.

    The grid ``data_shape`` is split into ``cells`` equal cells per axis (default 16 per axis, the official
    ``grid_dims``). The within-cell offsets are shuffled once (``generator``) and dealt into ``n_batches =
    prod(data_shape) / batch_size`` groups of ``batch_size / prod(cells)`` offsets; batch ``k`` holds group ``k``'s
    offsets in *every* cell. So the batches partition the grid (each point exactly once per epoch) and every batch
    has the same number of points in each cell. ``batch_size`` must divide the number of points and be a multiple
    of the number of cells (the official sampler asserts the same)."""
    shape = _ints("data_shape", data_shape)
    grid = grid_cells_for(shape, cells)
    batch_size = check_int(batch_size, "batch_size", minimum=1, maximum=2**31)
    n_points, n_cells = math.prod(shape), math.prod(grid)
    if n_points % batch_size:
        raise InputError(
            f"batch_size {batch_size} must divide the number of points {n_points} (data shape {tuple(shape)}) "
            "so that an epoch is a whole number of batches"
        )
    if batch_size % n_cells:
        raise InputError(
            f"batch_size {batch_size} must be a multiple of the number of grid cells {n_cells} ({grid}) so that "
            "every batch holds the same number of points from every cell"
        )
    n_batches, per_cell = n_points // batch_size, batch_size // n_cells
    cell = [s // g for s, g in zip(shape, grid)]
    offsets = grid_coords(cell)  # (cell volume, D), row-major
    offsets = offsets[torch.randperm(offsets.shape[0], generator=generator)]
    offsets = offsets.reshape(n_batches, 1, per_cell, len(shape))
    origins = (grid_coords(grid) * torch.tensor(cell)).reshape(1, n_cells, 1, len(shape))
    return (origins + offsets).reshape(n_batches, batch_size, len(shape))
