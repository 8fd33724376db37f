import pytest
import torch

from iclr24.opposing_signals.linear import gauss_newton_sharpness
from iclr24.opposing_signals.linear import make_toy_linear
from iclr24.opposing_signals.linear import outlier_sharpness_bound
from iclr24.opposing_signals.linear import scalar_net_gd_step
from iclr24.opposing_signals.linear import scalar_net_hessian
from iclr24.opposing_signals.linear import scalar_net_manifold_sharpness
from iclr24.opposing_signals.linear import scalar_net_predicted_step
from iclr24.opposing_signals.linear import two_layer_linear_loss


def test_scalar_net_hessian_closed_form_and_autograd():
    for v, w in ((1.0, 1.0), (2.0, 0.5), (0.3, -1.7)):
        h = torch.autograd.functional.hessian(
            lambda p: 0.5 * (p[0] * p[1] - 1.0) ** 2, torch.tensor([v, w], dtype=torch.float64)
        )
        torch.testing.assert_close(scalar_net_hessian(v, w), h)
    assert float(torch.linalg.eigvalsh(scalar_net_hessian(1.0, 1.0))[-1]) == pytest.approx(2.0)
    assert float(torch.linalg.eigvalsh(scalar_net_hessian(2.0, 0.5))[-1]) == pytest.approx(4.25)
    for v in (0.5, 1.0, 3.0):
        top = float(torch.linalg.eigvalsh(scalar_net_hessian(v, 1 / v))[-1])
        assert top == pytest.approx(scalar_net_manifold_sharpness(v, 1 / v))
    with pytest.raises(ValueError, match="not on the minimum manifold"):
        scalar_net_manifold_sharpness(1.0, 2.0)


def test_gd_dynamics_follow_the_closed_form():
    v, w, lr = 1.7, 0.2, 0.15
    for _ in range(50):
        imb, res = scalar_net_predicted_step(v, w, lr)
        v, w = scalar_net_gd_step(v, w, lr)
        assert v * v - w * w == pytest.approx(imb, rel=1e-12, abs=1e-12)
        assert v * w - 1 == pytest.approx(res, rel=1e-12, abs=1e-12)


def test_edge_of_stability_prediction_on_the_manifold():
    # near a minimum, r' ~ r (1 - eta (v^2 + w^2)): stable iff v^2 + w^2 < 2 / eta
    v = 2.0  # sharpness v^2 + 1/v^2 = 4.25
    for lr, stable in ((0.9 * 2 / 4.25, True), (1.1 * 2 / 4.25, False)):
        a, b = v, 1 / v + 1e-6
        r0 = abs(a * b - 1)
        for _ in range(40):
            a, b = scalar_net_gd_step(a, b, lr)
        assert (abs(a * b - 1) < r0) == stable


def test_toy_sharpness_scales_with_outlier_mass():
    torch.manual_seed(0)
    v = torch.randn(4, dtype=torch.float64)
    sharp = []
    for alpha in (0.0, 4.0, 8.0):
        data = make_toy_linear(alpha=alpha, p=0.05, d=6, n=400, seed=1)
        # a zero-residual point: W picks the core feature, v^T W e_0 = 1 / core
        w = torch.zeros(4, 6, dtype=torch.float64)
        w[:, 0] = v / v.pow(2).sum()
        assert (
            float(two_layer_linear_loss(v, w, data.x, data.y)) < 1e-3
        )  # only the noise coordinates are unused
        w[:, 2:] = 0
        x = data.x.clone()
        x[:, 2:] = 0
        assert float(two_layer_linear_loss(v, w, x, data.y)) == pytest.approx(0.0, abs=1e-20)
        params = torch.cat([w.reshape(-1), v])

        def loss(p, x=x, y=data.y):
            return two_layer_linear_loss(p[24:], p[:24].reshape(4, 6), x, y)

        h = torch.autograd.functional.hessian(loss, params)
        top = float(torch.linalg.eigvalsh(h)[-1])
        assert top == pytest.approx(gauss_newton_sharpness(v, w, x), rel=1e-9)
        assert top >= outlier_sharpness_bound(v, x) - 1e-9
        assert outlier_sharpness_bound(v, x) >= float(v.pow(2).sum()) * data.p * alpha**2 - 1e-9
        sharp.append(top)
    assert sharp[0] < sharp[1] < sharp[2]


def test_toy_bad_input():
    with pytest.raises(ValueError, match="need alpha >= 0"):
        make_toy_linear(alpha=-1.0)
    with pytest.raises(ValueError, match="need alpha >= 0"):
        make_toy_linear(p=0.0)
