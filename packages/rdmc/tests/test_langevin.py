import pytest
import torch

from iclr24.rdmc import GaussianMixture
from iclr24.rdmc import langevin_steps_for_budget
from iclr24.rdmc import mala
from iclr24.rdmc import ula


def test_ula_stationary_variance_is_biased_as_theory_says(gauss1d):
    """ULA on N(0,1) with step h: x' = (1-h)x + sqrt(2h)ξ has stationary variance 2/(2-h)."""
    h = 0.5
    x, info = ula(gauss1d, 20_000, 60, h, seed=0)
    assert abs(float(x.var()) - 2 / (2 - h)) < 0.05
    assert (info.grad_calls, info.logp_calls) == (20_000 * 60, 0)


def test_mala_is_unbiased(gauss1d):
    x, info = mala(gauss1d, 20_000, 60, 0.5, seed=0)
    assert abs(float(x.var()) - 1.0) < 0.05
    assert (info.grad_calls, info.logp_calls) == (20_000 * 61, 20_000 * 61)
    assert 0.5 < info.extras["acceptance_rate"] <= 1.0


def test_langevin_stays_in_its_basins(gmm):
    """The failure mode the paper fixes: started from N(0, I), ULA keeps ≈ equal mass in each mode."""
    from iclr24.rdmc import mode_weights

    x, _ = ula(gmm, 2000, 500, 0.05, seed=0)
    w = mode_weights(x, gmm.means)
    assert (w - 0.25).abs().max() < 0.05


def test_budget_helper_and_bad_input(gauss1d):
    assert langevin_steps_for_budget("ula", 4000) == 4000
    assert 2 * (langevin_steps_for_budget("mala", 4000) + 1) <= 4000
    with pytest.raises(ValueError):
        langevin_steps_for_budget("hmc", 10)
    with pytest.raises(ValueError, match="step_size"):
        ula(gauss1d, 10, 5, 0.0)
    with pytest.raises(ValueError, match="n must be"):
        mala(gauss1d, 0, 5)
    with pytest.raises(ValueError, match="x_init must have shape"):
        ula(GaussianMixture([[0.0, 0.0]], [1.0], [1.0]), 4, 3, x_init=torch.zeros(4, 3))
