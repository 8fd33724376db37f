import math

import pytest
import torch

from iclr24.rdmc import inner_sample_sizes
from iclr24.rdmc import rdmc_sample
from iclr24.rdmc import reverse_time_grid
from iclr24.rdmc import schedule_weights


def test_paper_schedule_grows_as_t_shrinks_and_keeps_the_total():
    times = reverse_time_grid(2.0, 20)[:20]
    sizes = inner_sample_sizes(times, 4000, "paper")
    assert sum(sizes) == 4000 and min(sizes) >= 1
    assert sizes == sorted(sizes)  # t decreases along the grid: n_k is non-decreasing
    # n_k ∝ 1/(1 - e^{-2 t_k}) up to rounding
    w = [1 / -math.expm1(-2 * t) for t in times]
    assert sizes[-1] / sizes[0] == pytest.approx(w[-1] / w[0], rel=0.02)
    assert inner_sample_sizes(times, 4000, "constant") == [200] * 20
    assert schedule_weights([1.0, 0.5], "constant") == [1.0, 1.0]
    with pytest.raises(ValueError, match="schedule must be one of"):
        schedule_weights(times, "linear")
    with pytest.raises(ValueError, match="total inner samples"):
        inner_sample_sizes(times, 10)


@pytest.mark.parametrize("estimator", ["is", "ula"])
def test_sampler_uses_the_schedule_with_exact_counts(gmm, estimator):
    n, K, m, chains, s = 9, 5, 40, 6, 3
    _, info = rdmc_sample(
        gmm, n, T=2.0, K=K, estimator=estimator, m=m, n_chains=chains, inner_steps=s, schedule="paper", seed=0
    )
    per_step = info.extras["m_per_step"] if estimator == "is" else info.extras["n_chains_per_step"]
    assert per_step[0] < per_step[-1] and sum(per_step) == K * (m if estimator == "is" else chains)
    # the totals are those of the constant schedule: K·m log-density calls, or K·n·s gradients
    if estimator == "is":
        assert (info.grad_calls, info.logp_calls) == (0, n * K * m)
    else:
        assert (info.grad_calls, info.logp_calls) == (n * K * chains * s, 0)
    _, const = rdmc_sample(
        gmm,
        n,
        T=2.0,
        K=K,
        estimator=estimator,
        m=m,
        n_chains=chains,
        inner_steps=s,
        schedule="constant",
        seed=0,
    )
    assert const.extras["m_per_step"] == [m] * K
    assert (const.grad_calls, const.logp_calls) == (info.grad_calls, info.logp_calls)


def test_exp_linear_grid():
    times = reverse_time_grid(3.0, 30, delta=0.05, grid="exp-linear")
    assert times[0] == 3.0 and times[-1] == 0.05 and len(times) == 31
    steps = [a - b for a, b in zip(times, times[1:])]
    assert all(h > 0 for h in steps)
    lin = [h for t, h in zip(times, steps) if t > 1.0 + 1e-9 and t - h >= 1.0 - 1e-9]
    assert max(lin) - min(lin) < 1e-9  # linear above t = 1
    assert steps[-1] < 0.2 * steps[0]  # geometric below: short steps near δ
    ratios = [b / a for t, a, b in zip(times[1:], times[1:], times[2:]) if t < 1.0 - 1e-9]
    assert max(ratios) - min(ratios) < 1e-9
    with pytest.raises(ValueError, match="needs an early-stopping time"):
        reverse_time_grid(2.0, 10, grid="exp-linear")
    with pytest.raises(ValueError, match="grid must be one of"):
        reverse_time_grid(2.0, 10, grid="cosine")


def test_sampler_on_the_exp_linear_grid(gauss1d):
    """With the exact score the grid does not bias a Gaussian: N(0, 1) stays N(0, 1) up to discretisation."""
    x0 = torch.randn(20_000, 1, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    x, info = rdmc_sample(
        gauss1d, 20_000, T=2.0, K=200, estimator="exact", delta=0.05, grid="exp-linear", x_init=x0, seed=0
    )
    assert abs(float(x.var()) - 1.0) < 0.05
    assert info.extras["times"][-1] == 0.05
    with pytest.raises(ValueError, match="needs an early-stopping time delta"):
        rdmc_sample(gauss1d, 5, T=1.0, K=3, grid="exp-linear")
