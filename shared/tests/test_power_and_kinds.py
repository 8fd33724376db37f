"""paperkit 4: claim kinds, seeds from the power rule, claims tables, undecidable claims, budgets, summaries."""

from __future__ import annotations

import math
import random

import pytest

from iclr24.paperkit.claims import BUDGETS
from iclr24.paperkit.claims import KINDS
from iclr24.paperkit.claims import Claim
from iclr24.paperkit.claims import ClaimSet
from iclr24.paperkit.claims import ClaimSpec
from iclr24.paperkit.claims import RunConfig
from iclr24.paperkit.paired import paired_verdict
from iclr24.paperkit.paired import t_quantile_975
from iclr24.paperkit.paper import Paper
from iclr24.paperkit.paper import run_claims
from iclr24.paperkit.power import Calibration
from iclr24.paperkit.power import power_plan
from iclr24.paperkit.power import seeds_needed
from iclr24.paperkit.power import t_quantile
from iclr24.paperkit.summary import claims_to_markdown
from iclr24.paperkit.summary import summary_text
from iclr24.paperkit.summary import verdict_summary


def cal(ours, baseline, seconds=2.0, seeds=None):
    seeds = seeds if seeds is not None else tuple(range(900, 900 + len(ours)))
    return Calibration(seeds=seeds, ours=ours, baseline=baseline, seconds_per_seed=seconds, measured="test")


# -- t quantiles --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "p, df, expected",
    [
        (0.8, 2, 1.0607),
        (0.8, 5, 0.9195),
        (0.8, 10, 0.8791),
        (0.9, 4, 1.5332),
        (0.95, 1, 6.3138),
        (0.995, 4, 4.6041),
    ],
)
def test_t_quantile_matches_tables(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, abs=1e-4)


def test_t_quantile_975_agrees_with_the_table_and_is_symmetric():
    for df in (1, 3, 12, 40):
        assert t_quantile(0.975, df) == t_quantile_975(df)
    assert t_quantile(0.2, 7) == pytest.approx(-t_quantile(0.8, 7))
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)


# -- the power rule -----------------------------------------------------------------------------------------------
def test_seeds_needed_closed_form_and_monotone():
    # effect of 1 sd: the paired-t sample size at 80 % power is 10 (z-approximation 7.85 + t correction)
    n = seeds_needed(1.0, 1.0, power=0.8, min_seeds=2)
    assert n == 10
    big = seeds_needed(3.0, 1.0, min_seeds=2)
    small = seeds_needed(0.5, 1.0, min_seeds=2)
    assert big < n < small
    assert seeds_needed(0.0, 1.0) is None
    assert seeds_needed(1.0, 0.0, min_seeds=3) == 3


def test_plan_gives_seeds_that_decide_a_simulated_effect_most_of_the_time():
    """The rule's promise: with the effect as calibrated, n seeds decide it with about the stated power."""
    rng = random.Random(0)
    mean, sd = 0.4, 1.0
    c = cal([mean + sd * rng.gauss(0, 1) for _ in range(40)], [0.0] * 40, seconds=1.0)
    plan = power_plan(c, better="higher", margin=0.0, budget_seconds=10_000, power=0.8)
    n = plan.seeds
    decided = 0
    trials = 400
    for _ in range(trials):
        d = [plan.mean + plan.sd * rng.gauss(0, 1) for _ in range(n)]
        decided += paired_verdict(d, [0.0] * n, better="higher").verdict == "holds"
    assert 0.7 <= decided / trials <= 0.92


def test_plan_is_capped_by_the_budget_and_says_what_it_would_need():
    c = cal((1.0, 2.0, 3.0, 2.5), (1.5, 1.4, 2.7, 2.6), seconds=4.0)
    plan = power_plan(c, better="higher", margin=0.0, budget_seconds=60)
    assert not plan.decidable and plan.seeds is None
    assert plan.needed_seeds > 15 and plan.needed_seconds == pytest.approx(plan.needed_seeds * 4.0)
    assert "over this mode's budget" in plan.reason and str(plan.needed_seeds) in plan.reason
    roomy = power_plan(c, better="higher", margin=0.0, budget_seconds=plan.needed_seconds + 1)
    assert roomy.decidable and roomy.seeds == plan.needed_seeds


def test_plan_uses_the_rules_own_form():
    # ours is half the baseline on every seed: a "<= 0.6 x" rule is easy, a "<= 0.45 x" rule expects a fail
    c = cal((0.5, 0.52, 0.48), (1.0, 1.0, 1.0))
    holds = power_plan(c, better="lower", factor=0.6, budget_seconds=100)
    fails = power_plan(c, better="lower", factor=0.45, budget_seconds=100)
    assert holds.mean > 0 > fails.mean
    assert holds.decidable and "holds expected" in holds.reason
    assert fails.decidable and "fails expected" in fails.reason
    assert holds.calibration["per_seed_slack"] == pytest.approx(
        [-math.log(x / 0.6) for x in (0.5, 0.52, 0.48)]
    )


def test_calibration_validates():
    with pytest.raises(ValueError, match="at least 2 seeds"):
        cal((1.0,), (0.0,))
    with pytest.raises(ValueError, match="distinct"):
        cal((1.0, 2.0), (0.0, 0.0), seeds=(1, 1))
    with pytest.raises(ValueError, match="measured"):
        Calibration(seeds=(1, 2), ours=(1, 2), baseline=(0, 0), seconds_per_seed=1, measured=" ")


# -- claims tables ------------------------------------------------------------------------------------------------
def spec(**kw):
    base = dict(
        id="a", kind="headline", claim="ours beats the baseline", metric="acc", baseline="base", data="toy",
        better="higher", margin=0.0, seeds={"quick": tuple(range(100, 120)), "full": tuple(range(100, 140))},
        calibration={"quick": cal((0.9, 0.95, 0.92), (0.5, 0.55, 0.52))}, budget={"quick": 30, "full": 300},
        seeds_why="power rule on calibration seeds 900-902",
    )  # fmt: skip
    base.update(kw)
    return ClaimSpec(**base)


def test_spec_validates_kind_rule_and_disjoint_seeds():
    with pytest.raises(ValueError, match="kind"):
        spec(kind="fact")
    with pytest.raises(ValueError, match="either rule"):
        spec(rule="ours > baseline")
    with pytest.raises(ValueError, match="also evaluated"):
        spec(seeds={"quick": (900, 901)})
    with pytest.raises(ValueError, match="budget"):
        spec(budget={"full": 300})
    assert KINDS == ("headline", "supporting", "check")


def test_spec_seeds_come_from_the_plan_and_smoke_takes_two():
    s = spec()
    plan = s.plan("quick")
    assert plan.decidable
    seeds = s.evaluated_seeds("quick", base=0)
    assert seeds == list(range(100, 100 + plan.seeds))
    assert s.evaluated_seeds("quick", base=7)[0] == 107
    assert s.evaluated_seeds("smoke") == [100, 101]
    assert s.plan("full") is None and len(s.evaluated_seeds("full")) == 40  # no calibration: the whole pool


def test_spec_min_seeds_per_mode_floors_each_mode_alone():
    both = {
        "quick": cal((0.9, 0.95, 0.92), (0.5, 0.55, 0.52)),
        "full": cal((0.9, 0.95, 0.92), (0.5, 0.55, 0.52)),
    }
    s = spec(calibration=both, min_seeds={"quick": 4, "full": 12})
    assert s.plan("quick").seeds == 4 and s.plan("full").seeds == 12
    assert s.min_seeds_in("smoke") == 4 and len(s.evaluated_seeds("full")) == 12
    assert (
        spec(calibration=both, min_seeds={"quick": 4}).plan("full").seeds == 3
    )  # a mode left out: the default
    assert spec(calibration=both, min_seeds=5).plan("full").seeds == 5
    for bad in ({"quick": 1}, {"test": 4}, 1, True):
        with pytest.raises(ValueError, match="min_seeds"):
            spec(calibration=both, min_seeds=bad)


def test_claimset_fills_the_row_and_records_the_plan():
    s = spec()
    cs = ClaimSet("p", RunConfig(mode="quick"))
    n = s.plan("quick").seeds
    c = cs.paired(spec=s, ours=[0.9] * (n - 1) + [0.91], baseline=[0.5] * n, seeds=s.evaluated_seeds("quick"))
    assert c.kind == "headline" and c.claim == s.claim and c.baseline_name == "base" and c.status == "holds"
    assert c.details["power"]["seeds"] == n and c.details["spec"]["id"] == "a"
    with pytest.raises(ValueError, match="power plan asks"):
        cs.paired(spec=s, ours=[0.9, 0.8], baseline=[0.5, 0.4])
    with pytest.raises(ValueError, match="come from its ClaimSpec"):
        cs.add(spec=spec(better=None, margin=None, calibration=None, rule="ours > 1"), ours=2, kind="check")


def test_run_claims_records_undecidable_without_running_it():
    ran = []
    noisy = spec(id="b", calibration={"quick": cal((1.0, 2.0, 3.0, 2.5), (1.5, 1.4, 2.7, 2.6), seconds=4.0)})
    fine = spec()
    cs = ClaimSet("p", RunConfig(mode="quick"))

    def measure(row, seeds):
        ran.append(row.id)
        cs.paired(
            spec=row,
            ours=[0.9 + 0.01 * i for i in range(len(seeds))],
            baseline=[0.5] * len(seeds),
            seeds=seeds,
        )

    run_claims(cs, [fine, noisy], {"a": measure, "b": measure})
    assert ran == ["a"]
    assert [c.status for c in cs] == ["holds", "undecidable"]
    u = cs[1]
    assert "needs" in u.message and u.details["power"]["needed_seeds"] > 15 and u.kind == "headline"
    back = Claim.from_dict(u.to_dict())
    assert back.status == "undecidable" and back.kind == "headline"
    row = claims_to_markdown(cs).splitlines()[-1]
    assert row.count("undecidable at this budget") == 1 and "needs" in row
    with pytest.raises(ValueError, match="no measurement"):
        run_claims(ClaimSet("p", RunConfig(mode="quick")), [fine], {})


def test_run_claims_skips_rows_of_other_modes_and_smoke_has_no_verdicts():
    full_only = spec(id="f", modes=("full",), calibration=None, budget=None)
    cs = ClaimSet("p", RunConfig(mode="smoke"))
    run_claims(
        cs,
        [spec(), full_only],
        {
            "a": lambda r, s: cs.paired(spec=r, ours=[1.0] * len(s), baseline=[0.0] * len(s), seeds=s),
            "f": None,
        },
    )
    assert [c.status for c in cs] == ["smoke"]


def _paper(run, claims=()):
    return Paper(name="p", title="t", summary="s", run=run, claims=claims)


def test_paper_with_a_table_refuses_unkinded_claims_and_non_data_skips():
    row = spec(better=None, margin=None, calibration=None, rule="ours > baseline")

    def good(cfg):
        cs = ClaimSet("p", cfg)
        cs.add(spec=row, ours=2.0, baseline=1.0)
        return cs

    def unkinded(cfg):
        cs = ClaimSet("p", cfg)
        cs.add(claim=row.claim, metric="m", ours=1, baseline_name="b", baseline=0, rule="ours > baseline")
        return cs

    def skip_for_time(cfg):
        cs = ClaimSet("p", cfg)
        cs.skip(row.claim, "reported only in --full", kind="headline")
        return cs

    def skip_for_data(cfg):
        cs = ClaimSet("p", cfg)
        cs.skip(
            row.claim, "MNIST is not in the data folder: iclr24 data get mnist", data="mnist", kind="headline"
        )
        return cs

    cfg = RunConfig(mode="quick")
    assert _paper(good, (row,)).check(cfg)[0].status == "holds"
    with pytest.raises(TypeError, match="no kind"):
        _paper(unkinded, (row,)).check(cfg)
    with pytest.raises(TypeError, match="other than absent data"):
        _paper(skip_for_time, (row,)).check(cfg)
    assert _paper(skip_for_data, (row,)).check(cfg)[0].status == "skipped"
    assert _paper(unkinded).check(cfg)[0].kind == ""  # a paper without a table is not held to it


def test_budgets_default_and_override():
    p = Paper(name="p", title="t", summary="s", run=lambda c: [], budgets={"full": 1800})
    assert p.budgets["quick"] == BUDGETS["quick"] == 60 and p.budgets["full"] == 1800
    with pytest.raises(ValueError, match="unknown mode"):
        Paper(name="p", title="t", summary="s", run=lambda c: [], budgets={"long": 1})


def test_summary_counts_headline_and_supporting_only_checks_apart():
    def c(kind, verdict):
        return {"kind": kind, "verdict": verdict}

    claims = [c("headline", "holds"), c("headline", "fails"), c("supporting", "inconclusive"), c("check", "holds"),
              c("check", "holds"), c("supporting", "holds")]  # fmt: skip
    s = verdict_summary(claims)
    assert s["headline"] == ["holds", "fails"]
    assert (s["held"], s["decided"], s["checks_held"], s["checks_decided"]) == (2, 3, 2, 2)
    assert summary_text(claims) == "headline: holds, fails; 2/3 claims hold (1 inconclusive); checks 2/2"


# -- the exact sign test's power rule -----------------------------------------------------------------------------
def test_sign_seeds_needed_by_hand_and_degenerate_cases():
    from iclr24.paperkit.power import sign_seeds_needed

    # every seed a win: 6 seeds are the fewest whose all-win outcome has p = 2^-6 <= 0.025
    assert sign_seeds_needed(1.0, 0.0, min_seeds=3) == 6
    # no discordant seed, or as many wins as losses: no n decides
    assert sign_seeds_needed(0.0, 0.0) is None and sign_seeds_needed(0.3, 0.3) is None
    rare, common = sign_seeds_needed(0.2, 0.0), sign_seeds_needed(0.5, 0.0)
    assert common < rare and sign_seeds_needed(0.0, 0.5) == common  # a calibrated fail is sized the same
    with pytest.raises(ValueError):
        sign_seeds_needed(0.7, 0.5)


def test_sign_plan_delivers_its_power_in_simulation():
    from iclr24.paperkit.power import sign_seeds_needed

    rng = random.Random(1)
    p_win, p_loss = 0.4, 0.05
    n = sign_seeds_needed(p_win, p_loss, power=0.8)
    trials, held = 600, 0
    for _ in range(trials):
        u = [rng.random() for _ in range(n)]
        d = [1.0 if x < p_win else -1.0 if x < p_win + p_loss else 0.0 for x in u]
        held += paired_verdict(d, [0.0] * n, better="higher", test="sign").verdict == "holds"
    assert 0.74 <= held / trials <= 0.95
    # one seed fewer has less than the stated power (the plan is the smallest n)
    assert sign_seeds_needed(p_win, p_loss, power=0.8, min_seeds=n - 1) == n


def test_spec_with_a_sign_test_is_planned_and_recorded_by_it():
    c = cal((0, 0, 0, 1, 0, 0), (1, 0, 1, 1, 1, 0), seconds=1.0)  # 3 for, 0 against, 3 ties
    spec = ClaimSpec(
        id="collapse", kind="supporting", claim="fewer collapses", metric="collapsed per seed", baseline="b",
        data="d", better="lower", margin=0.0, test="sign", seeds={"full": tuple(range(100))},
        calibration={"full": c}, budget={"full": 1000},
    )  # fmt: skip
    plan = spec.plan("full")
    assert plan.decidable and "exact sign test" in plan.reason and plan.calibration["wins"] == 3
    from iclr24.paperkit.power import sign_seeds_needed

    assert plan.seeds == sign_seeds_needed(0.5, 0.0)
    cs = ClaimSet("demo", RunConfig(mode="full"))
    n = plan.seeds
    claim = cs.paired(spec=spec, ours=[0] * n, baseline=[1] * n, seeds=list(range(n)))
    assert claim.status == "holds" and claim.paired["test"] == "sign" and claim.details["power"]["seeds"] == n
    with pytest.raises(ValueError, match="test"):
        ClaimSpec(
            id="x", kind="check", claim="c", metric="m", baseline="b", data="d", rule="ours > 0", test="sign"
        )
    with pytest.raises(ValueError, match="better/margin/factor/test"):
        cs.paired(spec=spec, ours=[0] * n, baseline=[1] * n, test="t")
