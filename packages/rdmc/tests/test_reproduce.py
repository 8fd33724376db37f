import pytest

from iclr24.paperkit import ClaimSet, RunConfig
from iclr24.paperkit.testing import check_paper_smoke
from iclr24.rdmc.recipes import BudgetSettings
from iclr24.rdmc.reproduce import FULL, PAPER, QUICK, SMOKE, ComparisonConfig, _high_dim, _paired_claim


def test_smoke_claims_run_end_to_end(tmp_path):
    claims = check_paper_smoke(PAPER, tmp_path)
    assert len(claims) == 11 and all(c.paper == "rdmc" and c.verdict == "smoke" for c in claims)
    d = claims[0].details
    for row, recs in d["per_seed"].items():
        assert [r["seed"] for r in recs] == list(SMOKE.seeds)
        for r in recs:
            assert r["grad_calls_per_sample"] + r["logp_calls_per_sample"] <= SMOKE.budget, row
    # every row has its own random stream: no two samplers share a seed
    sampler_seeds = [r["sampler_seed"] for recs in d["per_seed"].values() for r in recs]
    assert len(set(sampler_seeds)) == len(sampler_seeds)
    # ULA and MALA are independent measurements (they used to share initial points and give identical mode-TV)
    assert d["per_seed"]["ula"][0]["mode_tv"] != d["per_seed"]["mala"][0]["mode_tv"]
    names = [c.claim for c in claims]
    assert any("paper's MCMC variant" in n for n in names) and any("hybrid" in n for n in names)
    assert not any("paper's MCMC" in n and "hybrid" in n for n in names)
    assert {c.baseline_name for c in claims} >= {"ula", "mala", "ula broad-init", "rdmc-is"}
    assert any("funnel" in n for n in names) and any("logistic regression" in n for n in names)
    assert (tmp_path / "samples_vs_target.png").is_file() and (tmp_path / "funnel.png").is_file()
    facts = {f.name: f for f in claims.facts}
    assert "seeds: calibration vs evaluation" in facts
    budget = [f for n, f in facts.items() if n.startswith("2-D mixture: oracle calls")]
    assert len(budget) == len(SMOKE.rows) and all(0 < f.value <= SMOKE.budget for f in budget)


def test_calibration_and_evaluation_seeds_are_disjoint():
    for cfg in (SMOKE, QUICK, FULL):
        assert not set(cfg.seeds) & set(cfg.calibration_seeds)
    with pytest.raises(ValueError, match="overlap the calibration seeds"):
        ComparisonConfig(seeds=(0, 1, 2))


def test_high_dim_rows_are_fixed_in_the_config(tmp_path):
    """The 10-D claim compares the rows named in the config, not the better of two variants after the run."""
    assert FULL.high_dim_rows == ("rdmc-is", "ula")
    cfg = ComparisonConfig(
        n=20, n_ref=40, budget=40, seeds=(1,), settings=BudgetSettings(K=2), high_dim_target="gmm10d"
    )
    config = RunConfig(mode="quick", seed=0, out=tmp_path, progress=False)
    claims = ClaimSet("rdmc", config)
    _high_dim(claims, config, cfg)
    (c,) = claims.claims
    summ = c.details["summary"]
    assert set(summ) == {"rdmc-is", "ula"}
    assert c.ours == pytest.approx(summ["rdmc-is"]["mode_tv"]) and c.baseline == pytest.approx(
        summ["ula"]["mode_tv"]
    )
    assert c.paired["seeds"] == [1] and c.verdict == "inconclusive"  # one seed gives no interval
    with pytest.raises(ValueError, match="is not one of"):
        ComparisonConfig(high_dim_rows=("rdmc-is+ula best", "ula"))


def _results(ours, base):
    return {
        "ours": [{"seed": s, "m": v} for s, v in zip((1, 2, 3), ours)],
        "base": [{"seed": s, "m": v} for s, v in zip((1, 2, 3), base)],
    }


def test_paired_claims_decide_per_seed_with_an_interval(tmp_path):
    """Each 2-D claim is decided over the paired seeds: the cap form bounds every seed by min(cap, factor x
    baseline of that seed); the ratio form compares log-ratios; a spread as large as the effect is inconclusive."""
    config = RunConfig(mode="quick", seed=0, out=tmp_path, progress=False)
    claims = ClaimSet("rdmc", config)
    kw = {"claim": "c", "metric": "m"}
    _paired_claim(claims, _results([0.05] * 3, [0.2] * 3), "m", "ours", "base", 0.5, 0.08, **kw)
    _paired_claim(claims, _results([0.06] * 3, [0.1] * 3), "m", "ours", "base", 0.5, 0.08, **kw)  # bound 0.05
    _paired_claim(claims, _results([0.05, 0.06, 0.055], [0.2, 0.21, 0.22]), "m", "ours", "base", 0.5, **kw)
    _paired_claim(claims, _results([0.05, 0.065, 0.055], [0.053, 0.05, 0.06]), "m", "ours", "base", **kw)
    cap_ok, cap_fail, ratio_ok, close = claims.claims
    assert cap_ok.verdict == "holds" and cap_ok.paired["baseline"] == [0.08] * 3
    assert cap_fail.verdict == "fails" and cap_fail.paired["baseline"] == [0.05] * 3
    assert ratio_ok.verdict == "holds" and ratio_ok.paired["form"] == "log_ratio"
    assert close.verdict == "inconclusive" and close.paired["seeds"] == [1, 2, 3]
    with pytest.raises(RuntimeError, match="different seeds"):
        bad = _results([0.1] * 3, [0.2] * 3)
        bad["base"][0]["seed"] = 9
        _paired_claim(claims, bad, "m", "ours", "base", **kw)


def test_quick_config_is_the_one_the_readme_states():
    """Quick: five of the seven 2-D rows at half the full budget, n = 500 against 1000 exact draws, six paired
    evaluation seeds; full keeps every row at 4000 calls, n = 1000, seeds 1-3. The README says so."""
    from pathlib import Path

    assert (QUICK.budget, QUICK.n, QUICK.n_ref, QUICK.seeds) == (2000, 500, 1000, (1, 2, 3, 4, 5, 6))
    assert QUICK.equal_budget_rows == ("rdmc-is", "rdmc-ula", "ula", "mala", "ula broad-init")
    assert QUICK.settings == FULL.settings and QUICK.rows == FULL.rows
    assert (FULL.budget, FULL.n, FULL.n_ref, FULL.seeds, FULL.equal_budget_rows) == (
        4000,
        1000,
        2000,
        (1, 2, 3),
        None,
    )
    text = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    para = text[text.index("`rdmc reproduce --quick` runs") :][:900]
    for words in (
        "2000 oracle calls per sample",
        "n = 500",
        "1000 exact",
        "seeds 1-6",
        "paper-schedule",
        "hybrid",
    ):
        assert words in para, words
    with pytest.raises(ValueError, match="is not one of"):
        ComparisonConfig(equal_budget_rows=("rdmc-is", "langevin"))


def test_claims_whose_rows_are_not_run_are_recorded_as_not_run(tmp_path):
    """With equal_budget_rows a subset, the claims of the rows left out are skipped rows that say so; the others are
    decided as usual, and the rows run keep the sampler seeds they have in the full row list."""
    from dataclasses import replace

    from iclr24.rdmc.data import get_target
    from iclr24.rdmc.reproduce import _equal_budget

    cfg = replace(SMOKE, seeds=(1, 2), equal_budget_rows=QUICK.equal_budget_rows)
    config = RunConfig(mode="quick", seed=0, out=tmp_path, progress=False)
    claims = ClaimSet("rdmc", config)
    _equal_budget(claims, config, cfg, get_target(cfg.target))
    skipped = [c for c in claims.claims if c.status == "skipped"]
    assert len(claims.claims) == 7 and len(skipped) == 2
    assert all("not run in --quick" in c.message for c in skipped)
    assert {("hybrid" in c.claim) or ("time-dependent" in c.claim) for c in skipped} == {True}
    per_seed = claims.claims[0].details["per_seed"]
    assert set(per_seed) == set(QUICK.equal_budget_rows)
    names = [r.name for r in cfg.rows]
    assert per_seed["ula"][0]["sampler_seed"] == 1000 * 1 + names.index("ula")
