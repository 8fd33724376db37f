import numpy as np
import pytest
import torch

from iclr24.ncde_bounds.synthetic import brownian_paths
from iclr24.ncde_bounds.synthetic import irregular_grid_indices
from iclr24.ncde_bounds.synthetic import sampling_bias_oracle
from iclr24.ncde_bounds.synthetic import smooth_paths
from iclr24.ncde_bounds.synthetic import subsample
from iclr24.ncde_bounds.synthetic import true_cde
from iclr24.ncde_bounds.synthetic import uniform_grid_indices


def test_generators_are_seeded_and_shaped():
    t, v = smooth_paths(4, n_fine=64, seed=1)
    assert t.shape == (65,) and v.shape == (4, 65, 1) and v.dtype == torch.float64
    assert torch.equal(v, smooth_paths(4, n_fine=64, seed=1)[1])
    _, w = brownian_paths(2000, n_fine=64, seed=0)
    assert (w[:, 0] == 0).all()
    assert float(w[:, -1, 0].var()) == pytest.approx(1.0, rel=0.1)  # Var W_1 = 1


def test_oracle_bias_goes_to_zero_as_the_grid_refines():
    """The sampling-bias oracle (same teacher, fine vs coarse path) on both path families: monotone in K, with
    the log-log slopes of the paper's setting (smooth ~ K^-4, Brownian ~ K^-2) and irregular worse than uniform."""
    teacher = true_cde(seed=0)
    n_fine = 512
    ks = [4, 8, 16, 32, 64]
    t, vs = smooth_paths(40, n_fine=n_fine, seed=1)
    _, vb = brownian_paths(40, n_fine=n_fine, seed=1)
    grids = {str(k): uniform_grid_indices(n_fine, k) for k in ks}
    grids["irregular"] = irregular_grid_indices(n_fine, 16, 80, seed=2)
    res = sampling_bias_oracle(teacher, t, torch.cat([vs, vb]), grids)
    for name, sl, lo, hi in (("smooth", slice(0, 40), -5, -3), ("brownian", slice(40, 80), -2.6, -1.4)):
        mse = [float(res[str(k)]["sq_err"][sl].mean()) for k in ks]
        assert all(a > b for a, b in zip(mse, mse[1:], strict=False)), (name, mse)
        slope = np.polyfit(np.log(ks), np.log(mse), 1)[0]
        assert lo <= slope <= hi, (name, slope)
        assert float(res["irregular"]["sq_err"][sl].mean()) > mse[2], name
    tv = [float(res[str(k)]["tv"][40:].mean()) for k in ks]
    assert all(a < b for a, b in zip(tv, tv[1:], strict=False))  # Brownian TV grows with K


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: smooth_paths(0), "n must"),
        (lambda: brownian_paths(3, n_fine=-1), "n_fine"),
        (lambda: uniform_grid_indices(100, 3), "dividing"),
        (lambda: irregular_grid_indices(10, 20, 2), "K must"),
        (lambda: smooth_paths(3, seed=1.5), "seed"),
        (lambda: irregular_grid_indices(10, 4, 0), "batch"),
    ],
)
def test_bad_generator_arguments_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(
    ("idx", "match"),
    [
        (torch.tensor([0, 5, 20]), r"0 <= idx <= 16, got \[0, 20\]"),
        (torch.tensor([0, -1, 3]), "0 <= idx"),
        (torch.tensor([0.0, 2.0, 4.0]), "integer indices"),
        (torch.tensor([[0, 2], [0, 3]]), r"\(3, K \+ 1\)"),
        (torch.tensor([0, 4, 4, 8]), "increase strictly"),
        (torch.tensor([3]), "K >= 1"),
    ],
)
def test_bad_grid_indices_are_refused_in_one_line(idx, match):
    t, v = smooth_paths(3, n_fine=16)
    with pytest.raises(ValueError, match=match):
        subsample(t, v, idx)
    with pytest.raises(ValueError, match="grid 'g'"):
        sampling_bias_oracle(true_cde(seed=0), t, v, {"g": idx})


def test_oracle_progress_counts_every_interval_of_both_solves(monkeypatch):
    import iclr24.paperkit as pk

    t, v = smooth_paths(2, n_fine=32)
    calls = []
    teacher = true_cde(seed=0)
    teacher(t, v, on_interval=calls.append)
    assert calls == list(range(32))
    ticks = []

    class Bar:  # stands in for paperkit's tqdm bar
        def __init__(self, total):
            ticks.append(("total", total))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, k):
            ticks.append(k)

    monkeypatch.setattr(pk, "progress", lambda total=None, **kw: Bar(total))
    grids = {"4": uniform_grid_indices(32, 4), "8": uniform_grid_indices(32, 8)}
    sampling_bias_oracle(teacher, t, v, grids, show_progress=True)
    # one tick per interval of the reference solve (32) and of the padded coarse solve (8)
    assert ticks == [("total", 40)] + [1] * 40
