import math

import numpy as np
import pytest
import torch

from iclr24.asmr import ASMR
from iclr24.asmr import fit
from iclr24.asmr import grid_coords
from iclr24.asmr.sampling import DEFAULT_GRID_CELLS
from iclr24.asmr.sampling import grid_cells_for
from iclr24.asmr.sampling import uniform_grid_batches


def _flat(coords: torch.Tensor, shape) -> torch.Tensor:
    strides = torch.tensor([math.prod(shape[a + 1 :]) for a in range(len(shape))])
    return (coords * strides).sum(-1)


@pytest.mark.parametrize(
    ("shape", "cells", "batch"),
    [
        ((64, 64), (16, 16), 1024),
        ((32, 48), (4, 8), 64),
        ((1024, 1024), (16, 16), 1 << 14),
        ((8, 12, 6), (2, 3, 3), 36),
    ],
)
def test_an_epoch_partitions_the_grid_with_equal_points_per_cell(shape, cells, batch):
    batches = uniform_grid_batches(shape, batch, cells, generator=torch.Generator().manual_seed(3))
    n_points, n_cells = math.prod(shape), math.prod(cells)
    # closed forms: n_batches = N / batch; every point exactly once per epoch; batch / n_cells points per cell
    assert batches.shape == (n_points // batch, batch, len(shape)) and batches.dtype == torch.int64
    flat = _flat(batches.reshape(-1, len(shape)), shape)
    assert torch.equal(torch.sort(flat).values, torch.arange(n_points))  # a partition of the whole grid
    cell = torch.tensor([s // g for s, g in zip(shape, cells)])
    cell_id = _flat(batches // cell, cells)  # (n_batches, batch) index of each point's cell
    counts = torch.stack([torch.bincount(row, minlength=n_cells) for row in cell_id])
    assert torch.all(counts == batch // n_cells)
    # the same within-cell offsets in every cell of a batch
    offsets = (batches % cell).reshape(batches.shape[0], n_cells, batch // n_cells, len(shape))
    assert torch.equal(offsets, offsets[:, :1].expand_as(offsets))


def test_batches_are_fixed_by_the_generator_and_differ_across_seeds():
    a = uniform_grid_batches((32, 32), 256, generator=torch.Generator().manual_seed(0))
    b = uniform_grid_batches((32, 32), 256, generator=torch.Generator().manual_seed(0))
    c = uniform_grid_batches((32, 32), 256, generator=torch.Generator().manual_seed(1))
    assert torch.equal(a, b) and not torch.equal(a, c)
    # default: 16 cells per axis (the official grid_dims), 4 points per cell in a batch of 1024 on 64^2
    assert grid_cells_for((64, 64)) == [DEFAULT_GRID_CELLS] * 2
    d = uniform_grid_batches((64, 64), 1024)
    assert d.shape == (4, 1024, 2) and torch.equal(
        torch.sort(_flat(d.reshape(-1, 2), (64, 64))).values, torch.arange(64 * 64)
    )


def test_bad_sampler_arguments_are_refused_in_one_line():
    with pytest.raises(ValueError, match="must divide the number of points"):
        uniform_grid_batches((64, 64), 1000)
    with pytest.raises(ValueError, match="multiple of the number of grid cells"):
        uniform_grid_batches((64, 64), 128)  # 256 cells
    with pytest.raises(ValueError, match="multiple of its cell count"):
        uniform_grid_batches((60, 64), 256)
    with pytest.raises(ValueError, match="one count per axis"):
        uniform_grid_batches((64, 64), 256, (16,))
    with pytest.raises(ValueError, match="batch_size"):
        uniform_grid_batches((64, 64), 0)


def test_fit_with_the_grid_sampler_trains_whole_epochs():
    img = np.asarray(torch.rand(32, 32, generator=torch.Generator().manual_seed(0)))
    torch.manual_seed(0)
    model = ASMR(2, 1, (32, 32), [[2, 4, 4], [2, 4, 4]], hidden=16)
    r = fit(model, img, steps=8, lr=1e-3, batch_size=256, sampler="grid", grid_cells=(8, 8), seed=0)
    assert r.steps == 8 and math.isfinite(r.psnr)  # two epochs of 4 batches
    with pytest.raises(ValueError, match="whole number of epochs"):
        fit(model, img, steps=6, batch_size=256, sampler="grid", grid_cells=(8, 8))
    with pytest.raises(ValueError, match="needs a batch_size"):
        fit(model, img, steps=4, sampler="grid")
    with pytest.raises(ValueError, match="sampler must be"):
        fit(model, img, steps=4, batch_size=256, sampler="sobol")
    with pytest.raises(ValueError, match="grid_cells applies"):
        fit(model, img, steps=4, batch_size=256, grid_cells=(8, 8))


def test_grid_fit_steps_every_batch_of_the_partition_once_per_epoch(monkeypatch):
    # the model sees exactly the partition's batches, in order, every epoch
    seen = []
    torch.manual_seed(0)
    model = ASMR(2, 1, (16, 16), [[2, 2, 4], [2, 2, 4]], hidden=8)
    real = model.forward
    monkeypatch.setattr(model, "forward", lambda c: seen.append(c.clone()) or real(c))
    img = np.zeros((16, 16), dtype=np.float32)
    fit(model, img, steps=8, lr=1e-3, batch_size=64, sampler="grid", grid_cells=(4, 4), seed=5)
    want = uniform_grid_batches((16, 16), 64, (4, 4), generator=torch.Generator().manual_seed(5))
    assert len(seen) == 8
    for k, c in enumerate(seen):
        assert torch.equal(c, want[k % 4])
    assert grid_coords((16, 16)).shape == (256, 2)
