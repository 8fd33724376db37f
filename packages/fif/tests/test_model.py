"""FreeFormInjectiveFlow: the closed-form loss of a linear pair, noise targets, and construction checks."""

import math

import pytest
import torch
from torch import nn

from iclr24.fif import FreeFormInjectiveFlow
from iclr24.fif import conv_pair
from iclr24.fif import fif_loss
from iclr24.fif import resnet_pair


class Linear(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = nn.Parameter(w.clone())

    def forward(self, x):
        return x @ self.w.T


def test_linear_pair_gives_the_closed_form_loss():
    """f(x) = A x, g(z) = B z, K = d, no noise: L = beta ||x - BAx||^2 + 1/2 ||Ax||^2 + d/2 log 2pi - tr(AB)."""
    gen = torch.Generator().manual_seed(0)
    D, d, beta = 4, 2, 3.0
    a = torch.randn(d, D, dtype=torch.float64, generator=gen)
    b = torch.randn(D, d, dtype=torch.float64, generator=gen)
    x = torch.randn(6, D, dtype=torch.float64, generator=gen)
    out = fif_loss(x, lambda t: t @ a.T, lambda z: z @ b.T, beta=beta, noise=0.0, hutchinson_samples=d)
    rec = ((x - x @ (b @ a).T) ** 2).sum(1)
    want = beta * rec + 0.5 * ((x @ a.T) ** 2).sum(1) + d / 2 * math.log(2 * math.pi) - torch.trace(a @ b)
    assert torch.allclose(out["loss"], want, atol=1e-10)
    assert torch.allclose(out["noisy_reconstruction"], rec, atol=1e-10)


def test_exact_log_det_mode_matches_the_closed_form():
    gen = torch.Generator().manual_seed(1)
    D, d = 4, 2
    a = torch.randn(d, D, dtype=torch.float64, generator=gen)
    x = torch.randn(3, D, dtype=torch.float64, generator=gen)
    out = fif_loss(x, lambda t: t @ a.T, lambda z: z @ torch.linalg.pinv(a).T, beta=1.0, log_det="exact")
    nll = 0.5 * ((x @ a.T) ** 2).sum(1) + math.log(2 * math.pi) - 0.5 * torch.logdet(a @ a.T)
    assert torch.allclose(out["nll"], nll, atol=1e-10)


def test_noise_sets_the_reconstruction_target():
    """noisy_reconstruction compares with x~ = x + sigma eps; reconstruction with the clean x (spec check 5)."""
    D, d = 3, 1
    enc = lambda t: t[:, :1]  # noqa: E731 - keeps dim 1; the decoder pads with zeros
    dec = lambda z: torch.cat([z, torch.zeros(z.shape[0], D - d)], 1)  # noqa: E731
    x = torch.zeros(2000, D)
    out = fif_loss(x, enc, dec, beta=1.0, noise=0.5, generator=torch.Generator().manual_seed(2))
    # x1 = (x~_1, 0, 0): the noisy error is the noise in the 2 dropped dims, the clean error that in dim 1
    assert float(out["noisy_reconstruction"].detach().mean()) == pytest.approx(2 * 0.25, rel=0.1)
    assert float(out["reconstruction"].detach().mean()) == pytest.approx(0.25, rel=0.1)


def test_construction_rejects_bad_dimensions_and_shapes():
    enc, dec = resnet_pair(3, 2, n_blocks=1, widths=[8])
    with pytest.raises(ValueError, match="latent_dim < data_dim"):
        FreeFormInjectiveFlow(*resnet_pair(3, 3, 1, [8]), data_dim=3, latent_dim=3)
    with pytest.raises(ValueError, match="encoder maps"):
        FreeFormInjectiveFlow(nn.Linear(3, 1), dec, data_dim=3, latent_dim=2)
    with pytest.raises(ValueError, match="decoder maps"):
        FreeFormInjectiveFlow(enc, nn.Linear(2, 4), data_dim=3, latent_dim=2)
    with pytest.raises(ValueError, match="encoder cannot take"):
        FreeFormInjectiveFlow(nn.Linear(5, 2), dec, data_dim=3, latent_dim=2)
    with pytest.raises(ValueError, match="beta"):
        FreeFormInjectiveFlow(enc, dec, data_dim=3, latent_dim=2, beta=-1.0)
    with pytest.raises(ValueError, match="noise"):
        FreeFormInjectiveFlow(enc, dec, data_dim=3, latent_dim=2, noise=float("nan"))
    with pytest.raises(ValueError, match="hutchinson_samples"):
        FreeFormInjectiveFlow(enc, dec, data_dim=3, latent_dim=2, hutchinson_samples=3)
    with pytest.raises(ValueError, match="torch.nn.Module"):
        FreeFormInjectiveFlow(lambda x: x, dec, data_dim=3, latent_dim=2)
    with pytest.raises(ValueError, match="log_det"):
        FreeFormInjectiveFlow(enc, dec, data_dim=3, latent_dim=2, log_det="cg")


def test_model_methods_and_input_checks():
    torch.manual_seed(0)
    m = FreeFormInjectiveFlow(*resnet_pair(3, 2, 1, [8]), data_dim=3, latent_dim=2)
    x = torch.randn(5, 3)
    assert m.encode(x).shape == (5, 2)
    assert m.reconstruct(x).shape == (5, 3)
    assert m.sample(4).shape == (4, 3)
    assert m.exact_nll(x).shape == (5,)
    assert torch.isfinite(m.loss(x))
    with pytest.raises(ValueError, match=r"shape \(batch, 3\)"):
        m.encode(torch.randn(5, 4))
    with pytest.raises(ValueError, match="empty batch"):
        m.loss(torch.randn(0, 3))
    with pytest.raises(ValueError, match="floating-point"):
        m.encode(torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="torch.Tensor"):
        m.encode([[0.0, 1.0, 2.0]])
    with pytest.raises(ValueError, match="n must be"):
        m.sample(0)


def test_conv_pair_is_a_valid_free_form_flow():
    torch.manual_seed(0)
    enc, dec = conv_pair((1, 8, 8), 3, ch_factor=2, hidden=16)
    m = FreeFormInjectiveFlow(enc, dec, data_dim=64, latent_dim=3)
    x = torch.rand(4, 64)
    assert torch.isfinite(m.loss(x))
    assert m.exact_log_prob(x)["log_prob"].shape == (4,)
    with pytest.raises(ValueError, match="multiples of 4"):
        conv_pair((1, 6, 6), 3)
