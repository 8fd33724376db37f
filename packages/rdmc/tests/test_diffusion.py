import math

import pytest
import torch

from iclr24.rdmc import exponential_integrator_step
from iclr24.rdmc import posterior_grad_log_prob
from iclr24.rdmc import rdmc_sample
from iclr24.rdmc import reverse_time_grid
from iclr24.rdmc import score_from_posterior_mean
from iclr24.rdmc import tweedie_mean


def test_one_step_variance_catches_missing_factor_two(gauss1d):
    """Spec check 3: target N(0,1) (score -x at every t), x ~ N(0,1), η = 0.1: one exponential-integrator step gives
    Var = (2 - e^η)² + e^{2η} - 1 = 1.02212; the drift without the factor 2 would give 1.2214."""
    eta = 0.1
    expected = (2 - math.exp(eta)) ** 2 + math.exp(2 * eta) - 1
    assert abs(expected - 1.02212) < 1e-5
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(10**6, 1, generator=gen, dtype=torch.float64)
    # the bare update
    y = exponential_integrator_step(x, -x, eta, torch.randn(x.shape, generator=gen, dtype=x.dtype))
    assert abs(float(y.var()) - expected) < 0.01
    # the same through the sampler (one reverse step T = η with the exact score)
    z, _ = rdmc_sample(gauss1d, 10**6, T=eta, K=1, estimator="exact", x_init=x, seed=1)
    assert abs(float(z.var()) - expected) < 0.01


def test_score_is_evaluated_at_the_current_time(gauss1d):
    """t_k = T - kη for k = 0..K-1 (the third-party code used the wrong index)."""
    seen = []

    class Spy:
        dim = 1

        def log_prob(self, x):
            return gauss1d.log_prob(x)

        def grad_log_prob(self, x):
            return gauss1d.grad_log_prob(x)

        def diffused_score(self, x, t):
            seen.append(t)
            return -x

    rdmc_sample(Spy(), 4, T=2.0, K=4, estimator="exact")
    assert seen == pytest.approx([2.0, 1.5, 1.0, 0.5])
    seen.clear()
    rdmc_sample(Spy(), 4, T=2.0, K=4, estimator="exact", delta=0.4, denoise=True)
    assert seen == pytest.approx([2.0, 1.6, 1.2, 0.8, 0.4])
    assert reverse_time_grid(1.0, 2) == [1.0, 0.5, 0.0]


def test_tweedie_and_posterior_gradient_forms():
    gen = torch.Generator().manual_seed(0)
    x, z, g = (torch.randn(5, 3, generator=gen, dtype=torch.float64) for _ in range(3))
    t = 0.37
    a = math.exp(-t)
    # the two forms of ∇ln q_t in the spec agree
    spec_form = g + a * (x - a * z) / (1 - a * a)
    assert torch.allclose(posterior_grad_log_prob(z, x, t, g), spec_form, atol=1e-10, rtol=1e-8)
    # Tweedie round trip: score from the posterior mean, then the mean back from the score
    s = score_from_posterior_mean(x, t, z)
    assert torch.allclose(tweedie_mean(x, t, s), z, atol=1e-10, rtol=1e-8)
    with pytest.raises(ValueError, match="t must be"):
        score_from_posterior_mean(x, 0.0, z)
