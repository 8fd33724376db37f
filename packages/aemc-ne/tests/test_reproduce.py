import pytest

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
    assert FULL.real and not QUICK.real and FULL.real_folds == (1, 2, 3, 4, 5)
    # early stopping on validation with a fixed patience and a fixed cap (no time budget)
    assert FULL.real_patience == 3 and FULL.real_eval_every == 10 and FULL.real_max_epochs == 400


def test_missing_movielens_is_skipped_not_failed(tmp_path):
    from iclr24.aemc_ne.reproduce import NAME, SMOKE, _real_claims
    from iclr24.paperkit import ClaimSet, RunConfig

    cs = ClaimSet(NAME, RunConfig(mode="smoke", out=tmp_path, data_dir=tmp_path / "empty"))
    _real_claims(cs, SMOKE, cs.config, True)
    assert cs.claims[0].status == "skipped"
    assert "iclr24 data get movielens-100k" in cs.claims[0].message


@pytest.mark.slow  # 7 small fits on a 400 x 250 matrix
def test_movielens_claim_is_paired_by_split(tmp_path):
    """The --full MovieLens block on a fake 100,000-row ml-100k.inter in the data folder's layout (tiny nets):
    one paired claim over the splits, ours = AEMC-NE's test RMSE per split."""
    import dataclasses

    import numpy as np

    from iclr24.aemc_ne.reproduce import NAME, SMOKE, _real_claims
    from iclr24.paperkit import ClaimSet, RunConfig

    rng = np.random.default_rng(0)
    folder = tmp_path / "data" / "movielens-100k"
    folder.mkdir(parents=True)
    pairs = rng.permutation(100_000)  # every (user, item) of a 400 x 250 matrix once, in random order
    u, i = pairs // 250 + 1, pairs % 250 + 1
    r = np.clip(np.round(3 + (u % 5 - 2) * 0.5 + (i % 3 - 1) + rng.normal(0, 0.5, 100_000)), 1, 5)
    lines = "".join(f"{a}\t{b}\t{int(c)}\t0\n" for a, b, c in zip(u, i, r))
    (folder / "ml-100k.inter").write_text(
        "user_id:token\titem_id:token\trating:float\ttimestamp:float\n" + lines
    )
    c = dataclasses.replace(SMOKE, real=True, real_folds=(1, 2, 3), real_hidden=4, real_max_epochs=3,
                            real_eval_every=1)  # fmt: skip
    cs = ClaimSet(NAME, RunConfig(mode="quick", out=tmp_path / "out", data_dir=tmp_path / "data"))
    _real_claims(cs, c, cs.config, True)
    (claim,) = cs.claims
    assert claim.status != "error", claim.message
    d = claim.to_dict()
    per = d["details"]["per_split"]
    assert sorted(per) == ["u1", "u2", "u3"] and "paired over 3 seeds" in claim.rule
    ne = [v for k, v in per["u2"].items() if k.startswith("AEMC-NE")][0]
    assert ne["epochs_run"] <= 3 and claim.verdict in ("holds", "fails", "inconclusive")
    assert abs(claim.ours - np.mean([[v for k, v in per[f].items() if k.startswith("AEMC-NE")][0]["rmse"]
                                     for f in ("u1", "u2", "u3")])) < 1e-9  # fmt: skip
    assert (tmp_path / "out" / "movielens100k_validation.png").is_file()
