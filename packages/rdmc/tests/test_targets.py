import math

import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal

from iclr24.rdmc import CountedTarget
from iclr24.rdmc import FunctionTarget
from iclr24.rdmc import GaussianMixture
from iclr24.rdmc import Target
from iclr24.rdmc import gmm2d
from iclr24.rdmc import gmm10d


def _full_cov_gmm():
    means = [[0.0, 1.0], [2.0, -1.0], [-3.0, 0.5]]
    covs = [[[1.0, 0.3], [0.3, 0.5]], [[0.4, -0.1], [-0.1, 0.9]], [[2.0, 0.0], [0.0, 0.2]]]
    return GaussianMixture(means, covs, [0.2, 0.5, 0.3]), means, covs


def test_log_prob_matches_scipy():
    g, means, covs = _full_cov_gmm()
    x = torch.randn(50, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 2
    ref = np.log(
        sum(w * multivariate_normal(m, c).pdf(x.numpy()) for w, m, c in zip([0.2, 0.5, 0.3], means, covs))
    )
    np.testing.assert_allclose(g.log_prob(x).numpy(), ref, rtol=1e-10, atol=1e-10)


def test_grad_log_prob_matches_autograd():
    g, _, _ = _full_cov_gmm()
    x = torch.randn(20, 2, generator=torch.Generator().manual_seed(2), dtype=torch.float64).requires_grad_()
    (auto,) = torch.autograd.grad(g.log_prob(x).sum(), x)
    assert torch.allclose(g.grad_log_prob(x.detach()), auto, atol=1e-10, rtol=1e-8)
    # FunctionTarget without a gradient falls back to autograd, and satisfies the protocol
    ft = FunctionTarget(g.log_prob, dim=2)
    assert isinstance(ft, Target)
    assert torch.allclose(ft.grad_log_prob(x.detach()), auto, atol=1e-10, rtol=1e-8)


def test_sample_moments():
    g = gmm2d()
    x = g.sample(200_000, generator=torch.Generator().manual_seed(0))
    mean = (g.weights[:, None] * g.means).sum(0)
    assert torch.allclose(x.mean(0), mean, atol=0.05, rtol=0)
    comp = g.responsibilities(x).argmax(-1)
    frac = torch.bincount(comp, minlength=4).double() / len(x)
    assert torch.allclose(frac, g.weights, atol=0.005, rtol=0)


def test_diffused_law_matches_forward_process():
    """p_t of the OU process: x_t = e^{-t} x0 + sqrt(1-e^{-2t}) ξ. Compare moments and the exact score."""
    g, _, _ = _full_cov_gmm()
    t = 0.7
    gen = torch.Generator().manual_seed(3)
    x0 = g.sample(400_000, generator=gen)
    xt = math.exp(-t) * x0 + math.sqrt(1 - math.exp(-2 * t)) * torch.randn(
        x0.shape, generator=gen, dtype=x0.dtype
    )
    gt = g.diffused(t)
    ref = gt.sample(400_000, generator=gen)
    assert torch.allclose(xt.mean(0), ref.mean(0), atol=0.01, rtol=0)
    assert torch.allclose(torch.cov(xt.T), torch.cov(ref.T), atol=0.02, rtol=0)
    # the score of p_t is the gradient of its log-density
    y = torch.randn(10, 2, generator=gen, dtype=torch.float64).requires_grad_()
    (auto,) = torch.autograd.grad(gt.log_prob(y).sum(), y)
    assert torch.allclose(g.diffused_score(y.detach(), t), auto, atol=1e-10, rtol=1e-8)


def test_builtin_targets():
    assert gmm2d().dim == 2 and gmm10d().dim == 10
    assert torch.allclose(
        gmm10d().weights, torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64), atol=1e-10, rtol=1e-8
    )


@pytest.mark.parametrize(
    "means, covs, weights, match",
    [
        ([[0.0, 0.0], [1.0, 1.0]], [1.0, 1.0, 1.0], [0.5, 0.5], "covs must have shape"),
        ([[0.0, 0.0], [1.0, 1.0]], [1.0, 1.0], [1.0], "weights must have shape"),
        ([[0.0, 0.0], [1.0, 1.0]], [1.0, 1.0], [0.5, 0.6], "sum to 1"),
        ([[0.0, 0.0], [1.0, 1.0]], [1.0, 1.0], [1.5, -0.5], "non-negative"),
        ([[0.0, 0.0]], [[[1.0, 2.0], [2.0, 1.0]]], [1.0], "positive definite"),
        ([[0.0, 0.0]], [[[1.0, 0.5], [0.0, 1.0]]], [1.0], "symmetric"),
        ([0.0, 0.0], [1.0], [1.0], "means must have shape"),
    ],
)
def test_bad_mixture_raises(means, covs, weights, match):
    with pytest.raises(ValueError, match=match):
        GaussianMixture(means, covs, weights)


def test_counted_target_reports_nan_and_counts():
    g = gmm2d()

    def bad_log_prob(x):
        out = g.log_prob(x)
        return torch.where(x[..., 0] > 0, torch.nan, out)

    ct = CountedTarget(FunctionTarget(bad_log_prob, g.grad_log_prob, dim=2))
    with pytest.raises(ValueError, match="NaN"):
        ct.log_prob(torch.ones(3, 5, 2, dtype=torch.float64))
    ok = CountedTarget(g)
    ok.log_prob(torch.zeros(3, 5, 2, dtype=torch.float64))
    ok.grad_log_prob(torch.zeros(7, 2, dtype=torch.float64))
    assert (ok.logp_calls, ok.grad_calls) == (15, 7)
    with pytest.raises(ValueError, match="Target protocol"):
        CountedTarget(object())


def test_diagonal_fast_path_matches_scipy():
    g = GaussianMixture([[0.0, 1.0], [2.0, -1.0]], [[0.3, 2.0], [1.0, 0.5]], [0.4, 0.6])
    assert g._prec_diag is not None
    x = torch.randn(30, 2, generator=torch.Generator().manual_seed(4), dtype=torch.float64) * 2
    ref = np.log(
        0.4 * multivariate_normal([0.0, 1.0], np.diag([0.3, 2.0])).pdf(x.numpy())
        + 0.6 * multivariate_normal([2.0, -1.0], np.diag([1.0, 0.5])).pdf(x.numpy())
    )
    np.testing.assert_allclose(g.log_prob(x).numpy(), ref, rtol=1e-10, atol=1e-10)
    xr = x.clone().requires_grad_()
    (auto,) = torch.autograd.grad(g.log_prob(xr).sum(), xr)
    assert torch.allclose(g.grad_log_prob(x), auto, atol=1e-10, rtol=1e-8)


def test_funnel_density_gradient_and_samples():
    from scipy.stats import norm

    from iclr24.rdmc import NealFunnel

    f = NealFunnel(dim=3, scale=3.0)
    x = torch.randn(20, 3, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    v = x[:, 0].numpy()
    ref = norm(0, 3).logpdf(v) + norm(0, np.exp(v / 2)[:, None]).logpdf(x[:, 1:].numpy()).sum(1)
    np.testing.assert_allclose(f.log_prob(x).numpy(), ref, rtol=1e-10, atol=1e-10)
    xr = x.clone().requires_grad_()
    (auto,) = torch.autograd.grad(f.log_prob(xr).sum(), xr)
    assert torch.allclose(f.grad_log_prob(x), auto, atol=1e-10, rtol=1e-8)
    s = f.sample(100_000, generator=torch.Generator().manual_seed(0))
    assert abs(float(s[:, 0].std()) - 3.0) < 0.03 and abs(float(s[:, 0].mean())) < 0.03
    with pytest.raises(ValueError, match="dim must be"):
        NealFunnel(dim=1)


def test_logistic_regression_posterior():
    from iclr24.rdmc import BayesianLogisticRegression
    from iclr24.rdmc import breast_cancer_logreg

    gen = torch.Generator().manual_seed(0)
    X = torch.randn(30, 3, generator=gen, dtype=torch.float64)
    y = (torch.rand(30, generator=gen) < 0.5).double()
    b = BayesianLogisticRegression(X, y, prior_std=2.0)
    th = torch.randn(4, 5, 3, generator=gen, dtype=torch.float64)
    lg = th @ X.T
    ref = (y * lg - torch.log1p(torch.exp(lg))).sum(-1) - (th**2).sum(-1) / 8
    assert torch.allclose(b.log_prob(th), ref, atol=1e-10, rtol=1e-10)
    thr = th.clone().requires_grad_()
    (auto,) = torch.autograd.grad(b.log_prob(thr).sum(), thr)
    assert torch.allclose(b.grad_log_prob(th), auto, atol=1e-10, rtol=1e-8)
    assert b.lipschitz == pytest.approx(float(torch.linalg.eigvalsh(X.T @ X)[-1]) / 4 + 0.25)
    with pytest.raises(ValueError, match="labels 0 or 1"):
        BayesianLogisticRegression(X, y + 1)
    with pytest.raises(ValueError, match="y must have shape"):
        BayesianLogisticRegression(X, y[:5])
    bc = breast_cancer_logreg()  # ships inside scikit-learn: no download
    assert bc.dim == 11 and bc.X.shape == (569, 11)
    with pytest.raises(ValueError, match="n_features must be"):
        breast_cancer_logreg(n_features=0)
