import math

import pytest
import torch

from iclr24.rdmc import FunctionTarget
from iclr24.rdmc import GaussianMixture
from iclr24.rdmc import rdmc_sample


@pytest.mark.slow  # n = 5000 particles x K = 50 steps x m = 200 proposals (the spec's check at its size)
def test_gaussian_recovery_end_to_end():
    """Spec check 4: target N((1,-2), diag(.5, 2)); exact p_T init, T = 1, K = 50, IS m = 200, n = 5000."""
    target = GaussianMixture([[1.0, -2.0]], [[0.5, 2.0]], [1.0])
    T = 1.0
    x0 = target.diffused(T).sample(5000, generator=torch.Generator().manual_seed(1))
    x, info = rdmc_sample(target, 5000, T=T, K=50, estimator="is", m=200, x_init=x0, seed=0)
    mean_err = (x.mean(0) - torch.tensor([1.0, -2.0], dtype=torch.float64)).abs()
    var_rel = (x.var(0) / torch.tensor([0.5, 2.0], dtype=torch.float64) - 1).abs()
    assert (mean_err < 0.1).all(), x.mean(0)
    assert (var_rel < 0.15).all(), x.var(0)
    # spec check 5 on the same run: IS uses exactly K·m log-density calls per sample and no gradients
    assert (info.grad_calls, info.logp_calls) == (0, 50 * 200 * 5000)


@pytest.mark.parametrize(
    "estimator, grads, logps",
    [
        ("is", 0, (3 + 2) * 16),  # (K + warm start)·m
        ("ula", (3 + 2) * 4 * 6, 0),  # (K + warm start)·n·s
        ("is+ula", (3 + 2) * 4 * 6, (3 + 2) * 16),
        ("mala", (3 + 2) * 4 * 7, (3 + 2) * 4 * 7),
        ("exact", 0, 0),
    ],
)
def test_oracle_counts_are_exact(gmm, estimator, grads, logps):
    """Spec check 5, per sample: K·m log-density calls for IS; K·n·s gradient calls for ULA; plus the warm start."""
    n = 11
    _, info = rdmc_sample(
        gmm,
        n,
        T=2.0,
        K=3,
        estimator=estimator,
        m=16,
        n_chains=4,
        inner_steps=6,
        warm_start_steps=2,
        seed=0,
        max_floats=64,
    )  # tiny chunks: counts must not depend on them
    assert (info.grad_calls, info.logp_calls) == (n * grads, n * logps)
    assert info.grad_calls_per_sample == grads and info.logp_calls_per_sample == logps
    assert info["grad_calls"] == n * grads


@pytest.mark.parametrize("estimator", ["is", "is+ula", "mala"])
def test_fixed_seed_is_bit_identical(gmm, estimator):
    """Spec check 7."""
    kw = dict(T=2.0, K=5, estimator=estimator, m=32, n_chains=4, inner_steps=4, warm_start_steps=1)
    a, _ = rdmc_sample(gmm, 50, seed=3, **kw)
    b, _ = rdmc_sample(gmm, 50, seed=3, **kw)
    c, _ = rdmc_sample(gmm, 50, seed=4, **kw)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_rdmc_finds_the_mode_weights(gmm):
    """A small version of the claim: rdMC-IS recovers the unequal weights (.1, .2, .3, .4)."""
    from iclr24.rdmc import mode_tv

    x, _ = rdmc_sample(gmm, 1000, T=2.0, K=20, m=200, seed=0)
    assert mode_tv(x, gmm.means, gmm.weights) < 0.08


def test_user_function_target_works():
    """A plain log-density (autograd gradient) through FunctionTarget: a standard Gaussian in 3-D."""
    target = FunctionTarget(lambda x: -0.5 * (x**2).sum(-1), dim=3)
    x, info = rdmc_sample(
        target, 1000, T=1.0, K=20, estimator="is+ula", m=100, n_chains=16, inner_steps=8, seed=0
    )
    assert x.shape == (1000, 3)
    assert float(x.mean(0).abs().max()) < 0.15
    assert abs(float(x.var(0).mean()) - 1.0) < 0.25  # score noise inflates the variance a little (see README)
    assert info.grad_calls > 0 and info.logp_calls > 0


def test_nan_log_prob_is_reported(gmm):
    def lp(x):
        return torch.where(x[..., 0] > 3.0, torch.nan, gmm.log_prob(x))

    with pytest.raises(ValueError, match="NaN"):
        rdmc_sample(FunctionTarget(lp, gmm.grad_log_prob, dim=2), 100, T=2.0, K=5, m=50)

    def lp_inf(x):
        return torch.where(x[..., 0] > 3.0, math.inf, gmm.log_prob(x))

    with pytest.raises(ValueError, match=r"\+inf"):
        rdmc_sample(FunctionTarget(lp_inf, gmm.grad_log_prob, dim=2), 100, T=2.0, K=5, m=50)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(T=0.0), "T must be"),
        (dict(T=-1.0), "T must be"),
        (dict(K=0), "K must be"),
        (dict(T=1.0, delta=1.0), "delta"),
        (dict(T=1.0, delta=2.0), "delta"),
        (dict(estimator="foo"), "estimator must be"),
        (dict(denoise=True), "denoise"),
        (dict(x_init=torch.zeros(5, 3)), "x_init must have shape"),
    ],
)
def test_bad_sampler_input(gmm, kwargs, match):
    with pytest.raises(ValueError, match=match):
        rdmc_sample(gmm, 10, **kwargs)


def test_dimension_must_be_known():
    with pytest.raises(ValueError, match="dimension"):
        rdmc_sample(FunctionTarget(lambda x: -(x**2).sum(-1)), 10)


def test_float32_and_warm_start(gmm):
    x, info = rdmc_sample(gmm, 300, T=2.0, K=10, m=100, warm_start_steps=3, seed=0, dtype=torch.float32)
    assert x.dtype == torch.float32 and torch.isfinite(x).all()
    assert info.logp_calls_per_sample == (10 + 3) * 100


def test_denoise_returns_the_tweedie_mean(gauss1d):
    """For N(0,1) every p_t is N(0,1) and E[x0 | x_δ] = e^{-δ} x_δ: the denoised output has variance e^{-2δ}."""
    x, _ = rdmc_sample(
        gauss1d,
        20_000,
        T=1.0,
        K=10,
        estimator="exact",
        delta=0.3,
        denoise=True,
        seed=0,
        x_init=torch.randn(20_000, 1, generator=torch.Generator().manual_seed(2), dtype=torch.float64),
    )
    assert abs(float(x.var()) - math.exp(-0.6)) < 0.03
