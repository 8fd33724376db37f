import pytest
import torch
from torch import nn

from iclr24.lpn import evaluate_prior
from iclr24.lpn import invert


class Quadratic(nn.Module):
    """psi(y) = c/2 ||y||^2: f(y) = c y, R(x) = (1/c - 1)/2 ||x||^2."""

    def __init__(self, c):
        super().__init__()
        self.c = c

    def potential(self, y):
        return 0.5 * self.c * y.pow(2).flatten(1).sum(1)

    def forward(self, y):
        return self.c * y


class LaplacianPotential(nn.Module):
    """psi*(y) = 1/2 (|y| - 1)_+^2: f = soft-threshold at 1, R(x) = |x|."""

    def potential(self, y):
        return 0.5 * (y.abs() - 1).clamp_min(0).pow(2).flatten(1).sum(1)

    def forward(self, y):
        return torch.sign(y) * (y.abs() - 1).clamp_min(0)


@pytest.mark.parametrize("c", [0.5, 2.0])
def test_analytic_quadratic_prior(c):
    """Acceptance 4: R(x) = (1/c - 1)/2 ||x||^2 (c = 0.5: R = 1/2 ||x||^2) within 1e-4."""
    x = torch.randn(6, 3, dtype=torch.float64)
    r = evaluate_prior(Quadratic(c), x)
    torch.testing.assert_close(r, (1 / c - 1) / 2 * x.pow(2).sum(1), atol=1e-4, rtol=0)


def test_laplacian_ground_truth_prior():
    """Acceptance 5: plugging psi* gives R(x) = |x| on [-3, 3] (+-1e-3)."""
    x = torch.linspace(-3, 3, 61, dtype=torch.float64).unsqueeze(1)
    r = evaluate_prior(LaplacianPotential(), x)
    assert (r - x.squeeze(1).abs()).abs().max() < 1e-3


def test_evaluate_prior_returns_f_at_the_inverse_not_at_x():
    """The official bug: fy was model(x). Here fy = f(y) = x, which differs from f(x) = c x."""
    x = torch.randn(4, 5, dtype=torch.float64)
    _, y, fy = evaluate_prior(Quadratic(0.5), x, return_inverse=True)
    torch.testing.assert_close(y, 2 * x, atol=1e-5, rtol=0)
    torch.testing.assert_close(fy, x, atol=1e-5, rtol=0)
    assert (fy - 0.5 * x).abs().max() > 0.1


def test_inversion_round_trip_on_an_lpn(mlp64):
    """Acceptance 6: for x = f(y0), ||f(invert(x)) - x||_inf < 1e-3; batched and per-sample CG agree."""
    model = mlp64(in_dim=8)
    y0 = torch.randn(10, 8, dtype=torch.float64)
    x = model(y0)
    y = invert(model, x)
    assert (model(y) - x).abs().max() < 1e-3
    assert (y - y0).abs().max() < 1e-2  # strongly convex: the inverse is unique
    y_loop = invert(model, x[:3], per_sample=True)
    torch.testing.assert_close(y_loop, y[:3], atol=1e-4, rtol=0)


@pytest.mark.parametrize("method", ["cvx_gd", "ls"])
def test_other_inversion_methods_get_close(method):
    """The Adam-based methods (official lr 1e-2) on a well-scaled LPN (f close to 2 alpha y + small nonlinearity)."""
    from iclr24.lpn import MLPLPN

    torch.manual_seed(0)
    model = MLPLPN(in_dim=4, hidden=16, layers=2, beta=2.0, alpha=0.5).double().eval()
    model.init_weights(-3.0, 0.5)
    y0 = 0.5 * torch.randn(4, 4, dtype=torch.float64)
    x = model(y0)
    y = invert(model, x, method)  # official iteration counts: 2000 (cvx_gd), 1000 (ls)
    assert (model(y) - x).abs().max() < 2e-2
    assert (y - y0).abs().max() < 5e-2


def test_prior_of_a_trained_lpn_is_consistent(mlp64):
    """R(f(y)) = <f(y), y> - 1/2||f(y)||^2 - psi(y) at the known preimage y (no inversion error)."""
    model = mlp64(in_dim=8)
    y0 = torch.randn(5, 8, dtype=torch.float64)
    x = model(y0)
    r = evaluate_prior(model, x)
    expect = (x * y0).sum(1) - 0.5 * x.pow(2).sum(1) - model.potential(y0).detach()
    torch.testing.assert_close(r, expect, atol=1e-5, rtol=0)


def test_bad_input():
    with pytest.raises(ValueError, match="potential"):
        evaluate_prior(nn.Linear(2, 2), torch.zeros(1, 2))
    with pytest.raises(ValueError, match="method"):
        invert(Quadratic(1.0), torch.zeros(1, 2), method="newton")
    with pytest.raises(ValueError, match="NaN"):
        invert(Quadratic(1.0), torch.full((1, 2), float("nan")))
    with pytest.raises(ValueError, match="batch"):
        invert(Quadratic(1.0), torch.zeros(2))
