import numpy as np
import pytest
import torch

from iclr24.ncde_bounds.paths import add_time_channel
from iclr24.ncde_bounds.paths import build_control
from iclr24.ncde_bounds.paths import pad_series
from iclr24.ncde_bounds.paths import sampling_gap
from iclr24.ncde_bounds.paths import total_variation
from iclr24.ncde_bounds.paths import validate_series
from iclr24.ncde_bounds.synthetic import brownian_paths
from iclr24.ncde_bounds.synthetic import irregular_grid_indices
from iclr24.ncde_bounds.synthetic import smooth_paths
from iclr24.ncde_bounds.synthetic import subsample


def test_total_variation_of_known_paths():
    # |sin(2 pi t)| on [0, 1] has total variation 4; the interpolation on a fine grid through the extrema hits it
    t = torch.linspace(0, 1, 4001, dtype=torch.float64)
    x = torch.sin(2 * torch.pi * t)[None, :, None]
    assert float(total_variation(x)) == pytest.approx(4.0, abs=1e-6)
    # a straight line from (0, 0) to (1, 1) with time as a channel: sqrt(2), on any grid
    tt = torch.tensor([0.0, 0.1, 0.5, 1.0], dtype=torch.float64)
    line = add_time_channel(tt, tt[None, :, None])
    assert float(total_variation(line)) == pytest.approx(2**0.5, abs=1e-12)


def test_total_variation_never_decreases_under_refinement():
    t, v = brownian_paths(8, n_fine=1024, seed=3)
    x = add_time_channel(t, v)
    fine = total_variation(x)
    prev = torch.zeros(8, dtype=torch.float64)
    for k in (2, 4, 16, 64, 256, 1024):
        idx = torch.arange(0, 1025, 1024 // k)
        tv = total_variation(x[:, idx])
        assert (tv >= prev - 1e-12).all() and (tv <= fine + 1e-12).all()
        prev = tv
    assert torch.allclose(prev, fine)


def test_sampling_gap_on_irregular_grids():
    t, v = smooth_paths(5, n_fine=256, seed=0)
    idx = irregular_grid_indices(256, 6, 5, seed=1)
    tc, _ = subsample(t, v, idx)
    expected = torch.tensor([np.diff(row.numpy()).max() for row in tc], dtype=torch.float64)
    assert torch.allclose(sampling_gap(tc), expected)
    assert (idx[:, 0] == 0).all() and (idx[:, -1] == 256).all() and (idx.diff(dim=1) > 0).all()


@pytest.mark.parametrize("interpolation", ["linear", "cubic"])
def test_interpolation_passes_through_observations(interpolation):
    g = torch.Generator().manual_seed(0)
    t = torch.sort(torch.rand(3, 7, generator=g, dtype=torch.float64), dim=1).values
    v = torch.randn(3, 7, 2, generator=g, dtype=torch.float64)
    ctrl = build_control(t, v, interpolation=interpolation)
    for j in range(7):
        assert torch.allclose(ctrl.evaluate(float(j)), v[:, j], atol=1e-12)


def test_linear_interpolation_matches_numpy_between_knots():
    t = torch.tensor([0.0, 0.2, 0.3, 0.9, 1.0], dtype=torch.float64)
    v = torch.tensor([[1.0], [3.0], [-1.0], [0.5], [2.0]], dtype=torch.float64)[None]
    ctrl = build_control(t, v)
    for tq in (0.05, 0.25, 0.6, 0.95):
        j = int(np.searchsorted(t.numpy(), tq) - 1)
        s = j + (tq - float(t[j])) / float(t[j + 1] - t[j])
        assert float(ctrl.evaluate(s)[0, 0]) == pytest.approx(np.interp(tq, t.numpy(), v[0, :, 0].numpy()))


def test_cubic_hermite_is_c1_in_real_time():
    g = torch.Generator().manual_seed(1)
    t = torch.sort(torch.rand(2, 6, generator=g, dtype=torch.float64), dim=1).values
    v = torch.randn(2, 6, 1, generator=g, dtype=torch.float64)
    ctrl = build_control(t, v, interpolation="cubic")
    dt = t.diff(dim=1)
    for j in range(1, 5):
        left = ctrl.derivative(j - 1, 1.0) / dt[:, j - 1 : j]
        right = ctrl.derivative(j, 0.0) / dt[:, j : j + 1]
        assert torch.allclose(left, right, atol=1e-10)


def test_pad_series_repeats_last_value():
    times, values, lengths = pad_series(
        [torch.tensor([0.0, 1.0]), torch.tensor([0.0, 0.5, 1.0])], [[1.0, 2.0], [0.0, 1.0, 3.0]]
    )
    assert lengths.tolist() == [2, 3]
    assert times[0].tolist() == [0.0, 1.0, 1.0] and values[0, :, 0].tolist() == [1.0, 2.0, 2.0]
    t, v, n = validate_series(
        times, values
    )  # repeated time stamps with repeated values are padding: accepted
    assert n.tolist() == [3, 3]


def test_missing_values_need_a_mask_and_are_carried_forward():
    v = torch.tensor([[[np.nan], [1.0], [np.nan], [4.0]]])
    t = torch.linspace(0, 1, 4)
    with pytest.raises(ValueError, match="NaN.*mask"):
        validate_series(t, v)
    _, filled, _ = validate_series(t, v, mask=~torch.isnan(v))
    assert filled[0, :, 0].tolist() == [1.0, 1.0, 1.0, 4.0]


@pytest.mark.parametrize(
    ("times", "values", "kwargs", "match"),
    [
        (torch.tensor([0.0, 0.5, 0.4]), torch.zeros(1, 3, 1), {}, "increase"),
        (torch.tensor([0.0, 0.5, 0.5]), torch.tensor([[[0.0], [1.0], [2.0]]]), {}, "increase"),
        (torch.tensor([0.0]), torch.zeros(1, 1, 1), {}, "at least 2"),
        (torch.tensor([0.0, 1.0]), torch.zeros(2), {}, "shape"),
        (torch.tensor([0.0, 1.0, 2.0]), torch.zeros(1, 2, 1), {}, "times must have shape"),
        (torch.tensor([0.0, 1.0]), torch.zeros(1, 2, 3), {"input_channels": 2}, "expects 2 channels"),
        (torch.tensor([0.0, 1.0]), torch.zeros(1, 2, 1), {"lengths": [1]}, "length"),
        (torch.tensor([0.0, np.inf]), torch.zeros(1, 2, 1), {}, "finite"),
        (torch.tensor([0.0, 1.0]), "abc", {}, "values must"),
    ],
)
def test_bad_series_are_refused(times, values, kwargs, match):
    with pytest.raises(ValueError, match=match):
        validate_series(times, values, **kwargs)


def test_unknown_interpolation_is_refused():
    with pytest.raises(ValueError, match="interpolation must be one of"):
        build_control(torch.linspace(0, 1, 3), torch.zeros(1, 3, 1), interpolation="spline")


def test_total_variation_and_gap_refuse_nan_and_bad_lengths():
    from iclr24.ncde_bounds.paths import sampling_gap
    from iclr24.ncde_bounds.paths import total_variation

    v = torch.tensor([[0.0], [1.0], [float("nan")], [3.0]])
    with pytest.raises(ValueError, match="total_variation: values contain NaN"):
        total_variation(v)
    with pytest.raises(ValueError, match="sampling_gap: times contain inf"):
        sampling_gap(torch.tensor([0.0, float("inf"), 2.0]))
    with pytest.raises(ValueError, match=r"lengths must be 1 integers in \[2, 4\]"):
        total_variation(torch.zeros(1, 4, 1), lengths=torch.tensor([5]))
    with pytest.raises(ValueError, match="length >= 2"):
        total_variation(torch.zeros(1, 1, 2))
    # finite values: 1 + 2
    assert float(total_variation(torch.tensor([[0.0], [1.0], [3.0]]))) == 3.0
