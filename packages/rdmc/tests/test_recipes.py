import pytest

from iclr24.rdmc.bench import memory_check
from iclr24.rdmc.recipes import BudgetSettings
from iclr24.rdmc.recipes import budget_settings
from iclr24.rdmc.recipes import sample_with_budget


@pytest.mark.parametrize("method", ["rdmc-is", "rdmc-ula", "rdmc-is+ula", "ula", "mala"])
def test_every_sampler_respects_the_budget(gmm, method):
    _, info = sample_with_budget(gmm, method, 7, 400, seed=0, settings=BudgetSettings(K=10))
    assert info.calls_per_sample <= 400
    assert info.calls_per_sample >= 0.9 * 400  # and uses most of it


def test_equal_budget_split():
    s = budget_settings("rdmc-is", 4000)
    assert (s["T"], s["K"], s["estimator"], s["m"], s["schedule"]) == (2.0, 20, "is", 200, "paper")
    s = budget_settings("rdmc-is+ula", 4000, BudgetSettings(schedule="constant"))
    assert (s["m"], s["n_chains"], s["inner_steps"], s["schedule"]) == (100, 5, 20, "constant")
    s = budget_settings("rdmc-ula", 4000)  # the paper's variant: 10 chains x 20 ULA steps per outer step
    assert (s["estimator"], s["n_chains"], s["inner_steps"]) == ("ula", 10, 20)
    assert budget_settings("ula", 4000, BudgetSettings(init_std=5.0))["init_std"] == 5.0
    with pytest.raises(ValueError, match="method must be"):
        budget_settings("hmc", 100)
    with pytest.raises(ValueError, match="budget must be"):
        budget_settings("ula", 0)


def test_memory_is_chunked():
    mem = memory_check(n=3000, K=1, m=50, max_floats=10_000)
    assert mem.chunk_bytes == 100 * 50 * 2 * 8  # 10_000 // (50 * 2) particles per chunk
    assert mem.unchunked_bytes == 3000 * 50 * 2 * 8
