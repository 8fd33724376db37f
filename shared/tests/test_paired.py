import json
import math

import pytest

from iclr24.paperkit import Claim
from iclr24.paperkit import ClaimSet
from iclr24.paperkit import RunConfig
from iclr24.paperkit.paired import paired_verdict
from iclr24.paperkit.paired import t_quantile_975


def test_t_quantiles_match_tables_and_the_normal_limit():
    assert t_quantile_975(1) == pytest.approx(12.706, abs=1e-3)
    assert t_quantile_975(4) == pytest.approx(2.776, abs=1e-3)
    assert t_quantile_975(40) == pytest.approx(2.0211, abs=2e-4)  # table value
    assert t_quantile_975(120) == pytest.approx(1.9799, abs=2e-4)
    assert t_quantile_975(10**6) == pytest.approx(1.95996, abs=1e-4)
    with pytest.raises(ValueError):
        t_quantile_975(0)


def test_difference_form_interval_by_hand():
    # d = ours - baseline + 0.5 = [1.5, 0.5, 1.0]: mean 1.0, sd 0.5, half = 4.3027 * 0.5 / sqrt(3)
    r = paired_verdict([11.0, 10.0, 10.5], [10.0, 10.0, 10.0], better="higher", margin=0.5)
    half = 4.3027 * 0.5 / math.sqrt(3)
    assert r.per_seed == [1.5, 0.5, 1.0] and r.mean == pytest.approx(1.0)
    assert (r.low, r.high) == (pytest.approx(1.0 - half), pytest.approx(1.0 + half))
    assert r.verdict == "inconclusive"  # low = -0.24 < 0 <= high
    assert paired_verdict([11.0, 10.9, 11.1], [10.0] * 3, better="higher").verdict == "holds"
    assert paired_verdict([9.0, 8.9, 9.1], [10.0] * 3, better="higher").verdict == "fails"
    # "lower is better": ours <= baseline + m
    assert paired_verdict([1.0, 1.1, 0.9], [2.0, 2.0, 2.0], better="lower").verdict == "holds"
    assert "ours <= baseline + 0.2" in paired_verdict([1, 2], [1, 2], better="lower", margin=0.2).rule
    # a negative margin demands a win by |m|
    assert paired_verdict([11.0, 10.9, 11.1], [10.0] * 3, better="higher", margin=-2.0).verdict == "fails"


def test_ratio_form_uses_log_ratios():
    r = paired_verdict([1.0, 1.0, 1.0], [4.0, 4.2, 3.8], better="lower", factor=0.5)
    assert r.form == "log_ratio" and r.verdict == "holds"
    assert r.per_seed[0] == pytest.approx(-(math.log(1 / 4) - math.log(0.5)))
    assert paired_verdict([3.0, 3.1, 2.9], [4.0] * 3, better="lower", factor=0.5).verdict == "fails"
    with pytest.raises(ValueError, match="positive"):
        paired_verdict([0.0, 1.0], [1.0, 1.0], better="lower", factor=0.5)


def test_one_seed_is_inconclusive_and_bad_input_is_refused():
    assert paired_verdict([5.0], [1.0], better="higher").verdict == "inconclusive"
    with pytest.raises(ValueError, match="one value per seed"):
        paired_verdict([1.0, 2.0], [1.0], better="higher")
    with pytest.raises(ValueError, match="finite"):
        paired_verdict([1.0, float("nan")], [1.0, 1.0], better="higher")
    with pytest.raises(ValueError, match="better"):
        paired_verdict([1.0], [1.0], better="bigger")
    with pytest.raises(ValueError, match="not both"):
        paired_verdict([1.0], [1.0], better="higher", margin=0.1, factor=2.0)
    with pytest.raises(ValueError, match="distinct"):
        paired_verdict([1.0, 2.0], [1.0, 1.0], better="higher", seeds=[3, 3])


def test_claimset_paired_records_means_interval_and_roundtrips():
    cs = ClaimSet("demo", RunConfig(mode="quick"))
    c = cs.paired(
        claim="ours no worse than base by 0.5",
        metric="accuracy (%)",
        ours=[80.0, 81.0, 79.0],
        baseline=[80.5, 80.0, 80.0],
        seeds=[0, 1, 2],
        better="higher",
        margin=0.5,
        baseline_name="base",
    )
    assert c.status == "inconclusive" and c.holds is None
    assert c.ours == pytest.approx(80.0) and c.baseline == pytest.approx(80.1666, abs=1e-3)
    assert c.paired["seeds"] == [0, 1, 2] and c.paired["low"] < 0 < c.paired["high"]
    assert "paired over 3 seeds" in c.rule
    d = json.loads(json.dumps(c.to_dict(), allow_nan=False))
    assert d["verdict"] == "inconclusive" and Claim.from_dict(d) == c
    tampered = dict(d, verdict="holds")
    with pytest.raises(ValueError, match="disagrees"):
        Claim.from_dict(tampered)
    tampered = dict(d, paired={**d["paired"], "ours": [90.0, 91.0, 92.0]})
    with pytest.raises(ValueError, match="recomputed holds"):  # the verdict comes from the per-seed values
        Claim.from_dict(tampered)
    one = cs.paired(
        claim="one seed", metric="m", ours=[2.0], baseline=[1.0], better="higher", baseline_name="b"
    )
    assert one.status == "inconclusive" and one.paired["low"] is None
    assert cs.counts()["inconclusive"] == 2
    with pytest.raises(ValueError, match="rule"):
        cs.paired(
            claim="x", metric="m", ours=[1.0], baseline=[1.0], better="higher", baseline_name="b", rule="x"
        )


def test_paired_claims_carry_no_verdict_in_smoke_mode():
    cs = ClaimSet("demo", RunConfig(mode="smoke"))
    c = cs.paired(
        claim="c", metric="m", ours=[2.0, 2.1], baseline=[1.0, 1.0], better="higher", baseline_name="b"
    )
    assert c.status == "smoke" and c.holds is None and c.rule_value is True


def test_timing_flag_roundtrips_and_report_shows_inconclusive(tmp_path):
    from iclr24.paperkit.runner.report import comparable
    from iclr24.paperkit.runner.report import write_report

    cs = ClaimSet("demo", RunConfig(mode="quick"))
    cs.add(
        claim="fast",
        metric="x",
        ours=2.0,
        baseline_name="b",
        baseline=1.0,
        rule="ours > baseline",
        timing=True,
    )
    cs.paired(claim="p", metric="m", ours=[1.0, 2.0], baseline=[1.5, 1.5], better="higher", baseline_name="b")
    rec = {"name": "demo", "status": "ok", "seconds": 1.0, "folder": ".", "error": None, **cs.to_dict()}
    jpath, mpath = write_report(tmp_path, "quick", [rec])
    doc = json.loads(jpath.read_text())
    assert doc["version"] == 3 and "seconds" in doc["timing_fields"] and doc["machine"]["cpu_model"]
    assert doc["papers"][0]["claims"][0]["timing"] is True
    assert "inconclusive" in mpath.read_text()
    stripped = comparable(doc)
    assert "machine" not in stripped and "seconds" not in stripped["papers"][0]
    assert stripped["papers"][0]["claims"][0] == {
        "paper": "demo",
        "claim": "fast",
        "metric": "x",
        "timing": True,
    }


def test_binomial_half_tail_is_exact():
    from iclr24.paperkit.paired import binomial_half_tail

    assert binomial_half_tail(6, 6) == 1 / 64 and binomial_half_tail(5, 5) == 1 / 32
    assert binomial_half_tail(8, 9) == pytest.approx(10 / 512)  # P(X >= 8) = (9 + 1) / 2^9
    assert binomial_half_tail(0, 3) == 1.0 and binomial_half_tail(4, 3) == 0.0
    with pytest.raises(ValueError):
        binomial_half_tail(1, -1)


def test_sign_test_decides_paired_indicators_like_exact_mcnemar():
    # 0/1 "collapsed" indicators: baseline collapses on 6 seeds, ours on none -> 6 wins, p = 2^-6 <= 0.025: holds
    r = paired_verdict([0] * 8, [1] * 6 + [0] * 2, better="lower", test="sign")
    assert (r.verdict, r.wins, r.losses, r.ties) == ("holds", 6, 0, 2)
    assert r.p_holds == 1 / 64 and r.p_fails == 1.0 and "exact sign test" in r.rule
    # 5 wins, 0 losses: p = 1/32 > 0.025, inconclusive (the t-interval on the same numbers would hold)
    five = ([0] * 5 + [1], [1] * 5 + [1])
    assert paired_verdict(*five, better="lower", test="sign").verdict == "inconclusive"
    assert paired_verdict(*five, better="lower", margin=0.0).verdict == "holds"
    # 8 wins, 1 loss: p = 10/512 -> holds; the mirror image fails; all ties: inconclusive
    a, b = [0] * 8 + [1], [1] * 8 + [0]
    assert paired_verdict(a, b, better="lower", test="sign").verdict == "holds"
    assert paired_verdict(b, a, better="lower", test="sign").verdict == "fails"
    assert paired_verdict([1, 1, 1], [1, 1, 1], better="lower", test="sign").verdict == "inconclusive"
    with pytest.raises(ValueError, match="test"):
        paired_verdict([1, 2], [1, 2], better="higher", test="wilcoxon")


def test_sign_test_claims_record_counts_and_roundtrip():
    cs = ClaimSet("demo", RunConfig(mode="quick"))
    c = cs.paired(
        claim="fewer collapses", metric="collapsed (1) or not (0) per seed", ours=[0] * 7, baseline=[1] * 6 + [0],
        better="lower", test="sign", baseline_name="base",
    )  # fmt: skip
    assert c.status == "holds" and c.paired["test"] == "sign" and c.paired["wins"] == 6
    assert c.paired["low"] is None and "exact sign test" in c.rule
    d = json.loads(json.dumps(c.to_dict(), allow_nan=False))
    assert Claim.from_dict(d) == c
    with pytest.raises(ValueError, match="recomputed"):  # the verdict comes from the per-seed indicators
        Claim.from_dict(dict(d, paired={**d["paired"], "ours": [1] * 7}))
    t = cs.paired(
        claim="t", metric="m", ours=[2.0, 2.1], baseline=[1.0, 1.0], better="higher", baseline_name="b"
    )
    assert "test" not in t.paired  # records of t-interval claims keep their shape
