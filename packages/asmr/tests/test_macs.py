import math

import pytest
import torch

from iclr24.asmr import ASMR
from iclr24.asmr import SIREN
from iclr24.asmr import asmr_macs_per_point
from iclr24.asmr import count_linear_macs
from iclr24.asmr import grid_coords
from iclr24.asmr import macs_per_point
from iclr24.asmr import mlp_macs_per_point


@pytest.mark.parametrize(
    "bases,expected",
    [
        ([2, 2, 2, 2, 2, 2, 8], 1631.84),
        ([4, 2, 2, 2, 2, 8], 1627.84),
        ([8, 2, 2, 2, 8], 1611.90),
        ([4, 4, 4, 8], 1353.75),
        ([8, 8, 8], 1289.50),
    ],
)
def test_depth_table_cameraman_512(bases, expected):
    assert asmr_macs_per_point([bases, bases], 256, 1) == pytest.approx(expected, abs=0.01)


def test_spec_mac_table():
    assert mlp_macs_per_point(2, 256, 7) == 329_985
    pluto = asmr_macs_per_point([[4, 4, 4, 4, 2, 16]] * 2, 1024, 3, "nonlinear")
    assert pluto == pytest.approx(8273.3, abs=0.01)
    assert asmr_macs_per_point([[4, 4, 4, 4, 4, 8]] * 2, 1024, 3, "nonlinear") == pytest.approx(
        20585.2, abs=0.01
    )
    assert mlp_macs_per_point(2, 1024, 6, 3) == 4_204_547
    assert mlp_macs_per_point(2, 1024, 6, 3) / pluto > 500
    assert asmr_macs_per_point([[4, 4, 4, 8], [4, 4, 6, 8]], 256, 3) == pytest.approx(1846.18, abs=0.01)
    assert mlp_macs_per_point(2, 256, 4, 3) == 133_123
    video = [[5, 1, 1, 5, 1, 1, 3, 1, 1, 2], [5, 1, 3, 1, 3, 1, 3, 1, 2, 1], [5, 3, 2, 2, 1, 2, 1, 2, 1, 2]]
    assert asmr_macs_per_point(video, 512, 3) == pytest.approx(119_756, abs=1)
    assert mlp_macs_per_point(3, 512, 10, 3) == 2_104_835
    assert asmr_macs_per_point([[10, 10, 16, 20]], 128, 1) == pytest.approx(1013.3, abs=0.01)
    assert mlp_macs_per_point(1, 128, 4, 1) == 33_409
    assert asmr_macs_per_point([[2, 4, 4, 4]] * 2, 128) == 1234.875
    assert mlp_macs_per_point(2, 128, 4) == 33_537 and mlp_macs_per_point(2, 23, 4) == 1_197


def _adds(model: ASMR, shift: int) -> float:
    cells = [math.prod(math.prod(r[: i + 1]) for r in model.bases) for i in range(model.n_levels)]
    return (
        model.hidden * sum(cells[i + shift] for i in range(model.n_levels - 1)) / math.prod(model.data_shape)
    )


@pytest.mark.parametrize("modulator", ["linear", "nonlinear"])
def test_formula_cross_checked_by_forward_hooks(modulator):
    torch.manual_seed(0)
    m = ASMR(2, 3, (24, 32), [[2, 3, 4], [4, 2, 4]], hidden=16, modulator=modulator)
    hooked = count_linear_macs(m, m.render) / (24 * 32)
    # the hooks see every linear layer and modulator; the formula adds the h-wide modulation additions,
    # at N_i cells (official quirk) or at N_{i+1} (where they happen)
    assert hooked + _adds(m, 0) == pytest.approx(macs_per_point(m), rel=1e-12)
    assert hooked + _adds(m, 1) == pytest.approx(macs_per_point(m, "exact"), rel=1e-12)
    assert macs_per_point(m, "exact") > macs_per_point(m)


def test_siren_macs_by_hooks_and_per_coordinate_forward_costs_a_full_mlp():
    s = SIREN(2, 1, (8, 8), hidden=12, n_layers=4)
    assert count_linear_macs(s, s.render) / 64 == macs_per_point(s) == mlp_macs_per_point(2, 12, 4)
    m = ASMR(2, 1, (8, 8), [[2, 2, 2], [2, 2, 2]], hidden=12)
    per_coord = count_linear_macs(m, lambda: m(grid_coords((8, 8)))) / 64
    assert per_coord == mlp_macs_per_point(2, 12, 3) + 2 * 2 * 12  # plus two linear modulators
    assert macs_per_point(m) < per_coord


def test_mac_errors():
    with pytest.raises(ValueError):
        asmr_macs_per_point([[4, 4], [4]], 8)
    with pytest.raises(ValueError, match="convention"):
        asmr_macs_per_point([[4, 4]], 8, convention="approx")
    with pytest.raises(ValueError, match="modulator"):
        asmr_macs_per_point([[4, 4]], 8, modulator="x")
    with pytest.raises(ValueError):
        macs_per_point(torch.nn.Linear(2, 2))
