import math

import pytest
import torch

from iclr24.cmvae.distributions import cluster_marginal_log_likelihood
from iclr24.cmvae.distributions import cluster_posterior
from iclr24.cmvae.distributions import laplace_log_prob
from iclr24.cmvae.distributions import log_moe_density
from iclr24.cmvae.distributions import normalised_entropy
from iclr24.cmvae.distributions import softmax_scale


def test_softmax_scale_at_zero_and_sum():  # acceptance check 1
    s = softmax_scale(torch.zeros(3, 7))
    assert torch.allclose(s, torch.full((3, 7), 1 + 1e-6, dtype=s.dtype), atol=0, rtol=1e-7)
    raw = torch.randn(5, 7)
    assert torch.allclose(softmax_scale(raw).sum(-1), torch.full((5,), 7 * (1 + 1e-6)), rtol=1e-6)


def test_laplace_log_prob_matches_torch():
    x, loc, scale = torch.randn(4, 3), torch.randn(4, 3), torch.rand(4, 3) + 0.1
    ref = torch.distributions.Laplace(loc, scale).log_prob(x)
    assert torch.allclose(laplace_log_prob(x, loc, scale), ref, atol=1e-6)


def test_cluster_posterior_known_answer():  # acceptance check 2
    mu = torch.tensor([[-1.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    log_pi = torch.log(torch.tensor([0.5, 0.5], dtype=torch.float64))
    z = torch.tensor([0.5, 0.0], dtype=torch.float64)
    q = cluster_posterior(z, log_pi, mu, 1.0)
    assert q.tolist() == pytest.approx([0.2689414, 0.7310586], abs=1e-7)
    assert float(normalised_entropy(q, 2)) == pytest.approx(0.8399415, abs=1e-7)
    assert float(cluster_marginal_log_likelihood(z, log_pi, mu, 1.0)) == pytest.approx(-1.1330899, abs=1e-7)


def test_inactive_cluster_gets_no_mass():
    mu = torch.randn(4, 3)
    log_pi = torch.log_softmax(torch.tensor([0.0, float("-inf"), 0.0, 0.0]), -1)
    q = cluster_posterior(torch.randn(10, 3), log_pi, mu)
    assert (q[:, 1] == 0).all() and torch.allclose(q.sum(-1), torch.ones(10))


def test_moe_density_brute_force_and_mask():  # acceptance check 4
    torch.manual_seed(0)
    M, B, d = 3, 4, 2
    locs, scales, z = torch.randn(M, B, d), torch.rand(M, B, d) + 0.5, torch.randn(B, d)
    got = log_moe_density(z, locs, scales)
    dens = torch.stack(
        [torch.distributions.Laplace(locs[m], scales[m]).log_prob(z).sum(-1).exp() for m in range(M)]
    )
    assert torch.allclose(got, dens.mean(0).log(), atol=1e-6)
    mask = torch.tensor([[True, False, True]] * B)
    got = log_moe_density(z, locs, scales, mask)
    assert torch.allclose(got, ((dens[0] + dens[2]) / 2).log(), atol=1e-6)  # -inf for m=1, divide by 2
    mask = torch.tensor([[False, True, False]] * B)
    assert torch.allclose(log_moe_density(z, locs, scales, mask), dens[1].log(), atol=1e-6)


def test_normalised_entropy_uniform_is_one_and_needs_two():
    assert float(normalised_entropy(torch.full((5,), 0.2), 5)) == pytest.approx(1.0)
    assert float(normalised_entropy(torch.tensor([1.0, 0.0]), 2)) == 0.0
    with pytest.raises(ValueError, match="at least 2"):
        normalised_entropy(torch.tensor([1.0]), 1)
    assert math.isfinite(float(normalised_entropy(torch.tensor([0.5, 0.5, 0.0]), 2)))
