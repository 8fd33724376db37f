from iclr24.aemc_ne.reproduce import FULL, PAPER, QUICK
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=3)
    assert (tmp_path / "learned_activation_sigmoid5.png").is_file()
    assert {c.status for c in cs.claims} == {"smoke"}


def test_configs_keep_the_gates_and_seeds():
    # evaluated seeds are disjoint from the calibration seed (100); the quick run uses the same 3 seeds as full
    assert QUICK.seeds == FULL.seeds == (0, 1, 2)
    assert 100 not in QUICK.seeds
    assert FULL.real and not QUICK.real and FULL.real_epochs == 300


def test_missing_movielens_is_skipped_not_failed(tmp_path):
    from iclr24.aemc_ne.reproduce import NAME, SMOKE, _real_claims
    from iclr24.paperkit import ClaimSet, RunConfig

    cs = ClaimSet(NAME, RunConfig(mode="smoke", out=tmp_path, data_dir=tmp_path / "empty"))
    _real_claims(cs, SMOKE, cs.config, True)
    assert cs.claims[0].status == "skipped"
    assert "iclr24 data get movielens-100k" in cs.claims[0].message
