import math

import pytest
import torch

from iclr24.asmr import compose_digits
from iclr24.asmr import decompose_coords
from iclr24.asmr import grid_coords
from iclr24.asmr import level_strides
from iclr24.asmr import normalize_digits
from iclr24.asmr import parse_bases
from iclr24.asmr import suggest_bases
from iclr24.asmr import validate_bases


def test_strides_and_digits_of_the_spec_example():
    assert level_strides([[4, 4, 4, 8]]).tolist() == [[128, 32, 8, 1]]
    d = decompose_coords(torch.tensor([[300]]), [[4, 4, 4, 8]])
    assert d[0, :, 0].tolist() == [2, 1, 1, 4]


def test_decomposition_is_a_bijection_on_every_index():
    bases = [[4, 4, 4, 8]]
    p = torch.arange(512)[:, None]
    d = decompose_coords(p, bases)
    assert torch.equal(compose_digits(d, bases), p)  # sum_l c_l s_l = p
    assert len({tuple(r) for r in d[:, :, 0].tolist()}) == 512  # injective on 512 points -> bijective
    assert (d[:, :, 0] < torch.tensor([4, 4, 4, 8])).all()


def test_multi_axis_digits_against_brute_force():
    bases = [[2, 3, 2], [4, 1, 4], [1, 5, 1]]
    coords = grid_coords([12, 16, 5])
    d = decompose_coords(coords, bases)
    for n in torch.randperm(len(coords))[:50].tolist():
        for a, row in enumerate(bases):
            p, rem = coords[n, a].item(), []
            for l in range(len(row)):  # mixed radix, most significant first
                stride = math.prod(row[l + 1 :])
                rem.append(p // stride % row[l])
            assert d[n, :, a].tolist() == rem
    assert torch.equal(compose_digits(d, bases), coords)


def test_normalized_digits_in_unit_interval_and_zero_for_base_one():
    bases = [[2, 3, 2], [4, 1, 4]]
    d = decompose_coords(grid_coords([12, 16]), bases)
    c = normalize_digits(d, bases)
    assert c.min() == 0 and c.max() == 1
    assert (c[:, 1, 1] == 0).all()  # B = 1
    assert torch.allclose(c[:, 1, 0], d[:, 1, 0] / 2.0)


def test_grid_coords_row_major():
    g = grid_coords([2, 3])
    assert g.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]


def test_bad_bases_and_coords():
    with pytest.raises(ValueError, match=r"axis 1: the bases \[4, 4, 4, 4\] multiply to 256 .* size 512"):
        validate_bases([[4, 4, 4, 8], [4, 4, 4, 4]], (512, 512))
    with pytest.raises(ValueError, match="same number of levels"):
        validate_bases([[4, 4, 4, 8], [8, 8, 8]])
    with pytest.raises(ValueError, match="positive ints"):
        validate_bases([[4, 0]])
    with pytest.raises(ValueError, match="out of range on axis"):
        decompose_coords(torch.tensor([[0, 512]]), [[4, 4, 4, 8]] * 2)
    with pytest.raises(ValueError, match="out of range"):
        decompose_coords(torch.tensor([[-1, 0]]), [[4, 4, 4, 8]] * 2)
    with pytest.raises(ValueError, match="integer"):
        decompose_coords(torch.tensor([[0.5, 0.0]]), [[4, 4, 4, 8]] * 2)


@pytest.mark.parametrize(
    "size,levels,expected",
    [(512, 4, [4, 4, 4, 8]), (768, 4, [4, 4, 6, 8]), (128, 4, [2, 4, 4, 4]), (32000, 4, [10, 10, 16, 20])],
)
def test_suggest_bases_matches_the_paper_configs(size, levels, expected):
    assert suggest_bases(size, levels) == expected


@pytest.mark.parametrize("size", [1, 7, 97, 360, 1000, 8192])
def test_suggest_bases_product(size):
    for levels in (1, 3, 6):
        b = suggest_bases(size, levels)
        assert len(b) == levels and math.prod(b) == size and b == sorted(b)


def test_parse_bases():
    assert parse_bases("4,4,4,8;4,4,6,8") == [[4, 4, 4, 8], [4, 4, 6, 8]]
    with pytest.raises(ValueError):
        parse_bases("4,x")
    with pytest.raises(ValueError, match="same number of levels"):
        parse_bases("4,4;2,2,2")
