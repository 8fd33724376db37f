import pytest

from iclr24.aemc_ne.reproduce import CALIBRATION_SEEDS_ML
from iclr24.aemc_ne.reproduce import CLAIMS
from iclr24.aemc_ne.reproduce import FULL
from iclr24.aemc_ne.reproduce import PAPER
from iclr24.aemc_ne.reproduce import POOL
from iclr24.aemc_ne.reproduce import QUICK
from iclr24.aemc_ne.reproduce import SPECS
from iclr24.paperkit import BUDGETS
from iclr24.paperkit.runner.testing import check_paper_smoke


def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=1)
    assert {c.status for c in cs.claims} <= {"smoke", "skipped"}  # skipped only where ML-100K is absent
    assert [c.kind for c in cs.claims] == ["headline"]  # quick's rows: the MovieLens headline only


def test_synthetic_checks_run_their_planned_seeds(tmp_path):
    """The full-only synthetic rows at the smoke config's size: paired over the plan's seeds, with their figures."""
    from iclr24.aemc_ne.reproduce import NAME
    from iclr24.aemc_ne.reproduce import SMOKE
    from iclr24.aemc_ne.reproduce import _synthetic_claim
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig

    cs = ClaimSet(NAME, RunConfig(mode="full", out=tmp_path))
    _synthetic_claim(cs, SPECS["saturating"], [0, 1, 2], SMOKE, True)
    (claim,) = cs.claims
    assert claim.kind == "check" and claim.paired["seeds"] == [0, 1, 2]
    assert claim.verdict in ("holds", "fails", "inconclusive")
    assert "power" in claim.details and claim.details["power"]["seeds"] == 3
    assert (tmp_path / "learned_activation_sigmoid5.png").is_file()
    assert (tmp_path / "synthetic_sigmoid5_mcar.png").is_file()


def test_claims_table_kinds_seeds_and_budgets():
    # the real-data comparison is the headline, in quick and full; the by-design synthetic sets are checks (full)
    assert {s.id: s.kind for s in CLAIMS} == {
        "ml100k": "headline", "saturating": "check", "linear": "check", "mnar": "check"
    }  # fmt: skip
    assert [s.id for s in CLAIMS if "quick" in s.modes] == ["ml100k"]
    assert all("full" in s.modes for s in CLAIMS)
    planned = {}
    for s in CLAIMS:
        assert s.better is not None and s.calibration, f"{s.id}: every row is paired and calibrated"
        for m in s.modes:
            cal = s.calibration[m]
            assert not set(cal.seeds) & set(s.seeds[m]), f"{s.id}: calibration seeds evaluated in {m}"
            assert set(cal.seeds) <= set(CALIBRATION_SEEDS_ML) and s.seeds[m] == POOL
            plan = s.plan(m)
            assert plan.decidable, plan.reason
            planned[s.id, m] = plan.seeds
            assert plan.needed_seconds <= s.budget[m]
    assert SPECS["ml100k"].power == 0.9  # the headline's plan at 90 % power (docs/calibration.md says why)
    assert planned == {
        ("ml100k", "quick"): 4, ("ml100k", "full"): 5, ("saturating", "full"): 3, ("linear", "full"): 9,
        ("mnar", "full"): 3,
    }  # fmt: skip
    # the claims' budgets (CPU s measured under load, so above idle) leave room for the imports (~4 s) in the caps
    for m in ("quick", "full"):
        total = sum(s.budget[m] for s in CLAIMS if m in s.modes)
        assert total <= BUDGETS[m] - 5, (m, total)


def test_configs_keep_the_protocols():
    # quick trains MovieLens in minibatches (cheaper per decided pair), full in full batch as the released code
    assert QUICK.real_batch_size == 512 and QUICK.real_lr == 5e-3 and QUICK.real_patience == 2
    assert FULL.real_batch_size is None and FULL.real_lr == 3e-3 and FULL.real_mf and not QUICK.real_mf
    assert FULL.real_patience == 3 and FULL.real_eval_every == 10 and FULL.real_max_epochs == 400
    assert (
        (QUICK.n_rows, QUICK.n_cols, QUICK.epochs)
        == (FULL.n_rows, FULL.n_cols, FULL.epochs)
        == (60, 300, 300)
    )


def test_missing_movielens_is_skipped_with_its_data_name(tmp_path):
    from iclr24.aemc_ne.reproduce import NAME
    from iclr24.aemc_ne.reproduce import SMOKE
    from iclr24.aemc_ne.reproduce import _movielens_claim
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig
    from iclr24.paperkit import run_claims

    cs = ClaimSet(NAME, RunConfig(mode="quick", out=tmp_path, data_dir=tmp_path / "empty"))
    run_claims(
        cs, [SPECS["ml100k"]], {"ml100k": lambda spec, seeds: _movielens_claim(cs, spec, seeds, SMOKE, True)}
    )
    (claim,) = cs.claims
    assert claim.status == "skipped" and claim.kind == "headline"
    assert "iclr24 data get movielens-100k" in claim.message
    PAPER.validate(cs)  # the only skip the claims table allows: absent data


def test_calibration_refuses_evaluated_seeds():
    from iclr24.aemc_ne.reproduce import calibrate

    with pytest.raises(ValueError, match="must not be evaluated"):
        calibrate("saturating", "quick", seeds=(0, 1))
    with pytest.raises(ValueError, match="unknown claim"):
        calibrate("nope", "quick")


@pytest.mark.slow  # 6 small fits on a 400 x 250 matrix
def test_movielens_claim_is_paired_by_split_and_seed(tmp_path):
    """The MovieLens block on a fake 100,000-row ml-100k.inter in the data folder's layout (tiny nets): one paired
    claim over (split, seed) pairs, seed s on split u(1 + s % 5), ours = AEMC-NE's test RMSE per pair."""
    import dataclasses

    import numpy as np

    from iclr24.aemc_ne.reproduce import ML_NAMES
    from iclr24.aemc_ne.reproduce import NAME
    from iclr24.aemc_ne.reproduce import SMOKE
    from iclr24.aemc_ne.reproduce import _movielens_claim
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig

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
    c = dataclasses.replace(SMOKE, real_max_epochs=3, real_batch_size=100)
    cs = ClaimSet(NAME, RunConfig(mode="full", out=tmp_path / "out", data_dir=tmp_path / "data"))
    spec = dataclasses.replace(SPECS["ml100k"], calibration=None, budget=None, seeds={"full": (0, 1, 7)})
    _movielens_claim(cs, spec, [0, 1, 7], c, True)
    (claim,) = cs.claims
    assert claim.status != "error", claim.message
    per = claim.to_dict()["details"]["per_pair"]
    assert [(p["seed"], p["split"]) for p in per] == [(0, "u1"), (1, "u2"), (7, "u3")]
    assert "paired over 3 seeds" in claim.rule and claim.verdict in ("holds", "fails", "inconclusive")
    assert all(p[ML_NAMES[1]]["epochs_run"] <= 3 for p in per)
    assert abs(claim.ours - np.mean([p[ML_NAMES[1]]["rmse"] for p in per])) < 1e-9
    assert (tmp_path / "out" / "movielens100k_validation.png").is_file()
