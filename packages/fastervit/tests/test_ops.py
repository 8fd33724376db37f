import pytest
import torch

from iclr24.fastervit.ops import carrier_token_geometry
from iclr24.fastervit.ops import centered_grid_coords
from iclr24.fastervit.ops import ct_dewindow
from iclr24.fastervit.ops import ct_window
from iclr24.fastervit.ops import log_spaced_relative_coords
from iclr24.fastervit.ops import pad_to_multiple
from iclr24.fastervit.ops import relative_position_index
from iclr24.fastervit.ops import window_partition
from iclr24.fastervit.ops import window_reverse


@pytest.mark.parametrize("shape,k", [((2, 3, 14, 14), 7), ((1, 5, 8, 12), 4), ((3, 2, 6, 6), 1)])
def test_window_partition_reverse_are_exact_inverses(shape, k):
    x = torch.randn(*shape)
    w = window_partition(x, k)
    assert w.shape == (shape[0] * (shape[2] // k) * (shape[3] // k), k * k, shape[1])
    assert torch.equal(window_reverse(w, k, shape[2], shape[3], shape[0]), x)


def test_window_partition_order_is_row_major_windows_then_tokens():
    x = torch.arange(16.0).view(1, 1, 4, 4)
    w = window_partition(x, 2)[..., 0]
    assert w.tolist() == [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]]


@pytest.mark.parametrize("grid,s", [((2, 2), 2), ((3, 5), 2), ((2, 3), 1), ((1, 1), 3)])
def test_ct_window_dewindow_are_exact_inverses(grid, s):
    ct = torch.randn(2, grid[0] * grid[1] * s * s, 6)
    assert torch.equal(ct_window(ct_dewindow(ct, grid, s), grid, s), ct)
    raster = torch.randn(2, grid[0] * s * grid[1] * s, 6)
    assert torch.equal(ct_dewindow(ct_window(raster, grid, s), grid, s), raster)


def test_ct_window_groups_each_windows_tokens_like_window_partition():
    # raster carrier-token image 4x6 (2x3 windows of 2x2 tokens): grouping must equal window_partition
    img = torch.arange(24.0).view(1, 1, 4, 6)
    raster = img.flatten(2).transpose(1, 2)
    grouped = ct_window(raster, (2, 3), 2).view(6, 4)
    assert torch.equal(grouped, window_partition(img, 2)[..., 0])


def test_carrier_token_geometry_fastervit0_stage3_and_tiling():
    assert carrier_token_geometry(14, 7, 2) == (4, 3, 5)
    for r, k, s in [(14, 7, 2), (28, 7, 2), (21, 7, 2), (8, 4, 1), (24, 24, 2)]:
        o, stride, kernel = carrier_token_geometry(r, k, s)
        assert o == s * r // k and (o - 1) * stride + kernel == r  # the pooling windows tile the map exactly
    with pytest.raises(ValueError):
        carrier_token_geometry(0, 7, 2)


def test_relative_position_index_matches_brute_force():
    h, w = 3, 4
    idx = relative_position_index((h, w))
    coords = [(i, j) for i in range(h) for j in range(w)]
    for a, (i1, j1) in enumerate(coords):
        for b, (i2, j2) in enumerate(coords):
            assert idx[a, b] == (i1 - i2 + h - 1) * (2 * w - 1) + (j1 - j2 + w - 1)


def test_log_spaced_coords_closed_form():
    t = log_spaced_relative_coords((7, 7), (7, 7))
    assert t.shape == (1, 13, 13, 2)
    top = torch.log2(torch.tensor(9.0)) / 3  # the largest offset 6 is normalised to 8: log2(1 + 8) / log2(8)
    assert torch.allclose(t[0, 12, 12], torch.stack([top, top]))
    assert torch.allclose(t[0, 0, 0], -torch.stack([top, top]))
    assert torch.allclose(t[0, 6, 6], torch.zeros(2))
    d = 2 / 6 * 8
    assert torch.allclose(t[0, 8, 6, 0], torch.log2(torch.tensor(d + 1)) / 3)


def test_centered_grid_coords_and_padding():
    c = centered_grid_coords((3, 3))
    assert c.shape == (9, 2) and c[0].tolist() == [-1.0, -1.0] and c[4].tolist() == [0.0, 0.0]
    x, ph, pw = pad_to_multiple(torch.ones(1, 1, 5, 7), 7)
    assert x.shape[-2:] == (7, 7) and (ph, pw) == (2, 0) and x[..., 5:, :].abs().sum() == 0
