"""Paper scale (issue 48): PAPER_SCALE is the full run's 10-D comparison (rdMC-IS), and one outer iteration of it
runs at a tiny size on the mixture read back from its .npz file."""

import numpy as np

from iclr24.paperkit.scale import measure_paper_scale
from iclr24.rdmc.paper_scale import PAPER_SCALE
from iclr24.rdmc.paper_scale import is_step_flops
from iclr24.rdmc.recipes import budget_settings
from iclr24.rdmc.reproduce import CLAIMS
from iclr24.rdmc.reproduce import FULL
from iclr24.rdmc.reproduce import PAPER


def test_paper_scale_config_is_the_full_runs_10d_comparison():
    c = PAPER_SCALE
    assert c.target == FULL.high_dim_target == "gmm10d"
    (row,) = [s for s in CLAIMS if s.id == "gmm10d"]
    assert (c.n, c.budget, c.seeds) == (FULL.n, FULL.budget, row.plan("full").seeds) == (1000, 4000, 3)
    assert (c.T, c.K) == (FULL.settings.T, FULL.settings.K) == (2.0, 20)
    assert c.m == budget_settings("rdmc-is", c.budget, FULL.settings)["m"] == 200


def test_hand_counted_flops():
    # one particle, one proposal, d = 1, one component: 2 + (4 + 2 + 4) + 3 + 2 = 17, plus 10 for the update
    assert is_step_flops(1, 1, 1, 1) == 27
    assert is_step_flops(1000, 200, 10, 4) == 1000 * 200 * (20 + 4 * 46 + 3 + 20) + 1000 * 100


def test_one_outer_iteration_at_a_tiny_size():
    spec = PAPER.paper_scale("cpu", n=20, budget=200)
    row = measure_paper_scale(spec, steps=2, warmup=1)
    assert row["micro_batch"] == 20 and row["accumulation"] == 1 and row["paper_steps"] == 20 * 3
    assert row["flops_per_paper_step"] == is_step_flops(20, 10, 10, 4)
    assert "10-D 4-mode" in row["config"] and "m=10" in row["config"]
    assert np.isfinite(row["seconds_per_micro_step"])


def test_the_mixture_travels_as_an_npz(tmp_path):
    from iclr24.rdmc.data import get_target
    from iclr24.rdmc.data import load_gaussian_mixture

    ref = get_target("gmm10d")
    p = tmp_path / "g.npz"
    np.savez(p, means=ref.means.numpy(), covs=np.full(4, 0.5), weights=ref.weights.numpy())
    g = load_gaussian_mixture(p)
    assert g.dim == 10 and np.allclose(g.means.numpy(), ref.means.numpy())
