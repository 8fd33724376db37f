import pytest

from iclr24.rdmc.bench import memory_check
from iclr24.rdmc.recipes import BudgetSettings, budget_settings, sample_with_budget


@pytest.mark.parametrize("method", ["rdmc-is", "rdmc-is+ula", "ula", "mala"])
def test_every_sampler_respects_the_budget(gmm, method):
    _, info = sample_with_budget(gmm, method, 7, 400, seed=0, settings=BudgetSettings(K=10))
    assert info.calls_per_sample <= 400
    assert info.calls_per_sample >= 0.9 * 400  # and uses most of it


def test_equal_budget_split():
    assert budget_settings("rdmc-is", 4000) == dict(T=2.0, K=20, estimator="is", m=200)
    s = budget_settings("rdmc-is+ula", 4000)
    assert (s["m"], s["n_chains"], s["inner_steps"]) == (100, 5, 20)
    with pytest.raises(ValueError, match="method must be"):
        budget_settings("hmc", 100)
    with pytest.raises(ValueError, match="budget must be"):
        budget_settings("ula", 0)


def test_memory_is_chunked():
    mem = memory_check(n=3000, K=1, m=50, max_floats=10_000)
    assert mem.chunk_bytes == 100 * 50 * 2 * 8  # 10_000 // (50 * 2) particles per chunk
    assert mem.unchunked_bytes == 3000 * 50 * 2 * 8
