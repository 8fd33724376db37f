"""The claim run in smoke mode, through the shared record checks."""

import pytest

from iclr24.lace.reproduce import CLAIM_KEYS, PAPER, QUICK_STEPS, RULES, settings
from iclr24.paperkit.testing import check_paper_smoke


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("smoke")
    return check_paper_smoke(PAPER, tmp, min_claims=6), tmp


def test_smoke_records(smoke):
    cs, tmp = smoke
    details = next(c.details for c in cs.claims if c.details)
    metrics = details["metrics"]
    assert set(metrics) == {"real", "baseline", "LACE", "LACE+beautify", "LACE+guidance"}
    # the reference row: a second set of real layouts against the test layouts (aligned, no overlap by construction)
    ref = metrics["real"]["reference"]
    assert set(ref) >= {"align_x100", "overlap_x100", "fd", "max_iou", "align_x100_package", "empty_layouts"}
    assert ref["align_x100"] < 1e-3 and ref["overlap_x100"] < 1e-3 and 0 < ref["max_iou"] <= 1
    facts = {f.name: f.value for f in cs.facts}
    assert facts["real vs real: MaxIoU of a second set of real test layouts"] == ref["max_iou"]
    assert set(metrics["LACE+guidance"]) == {"uncond", "c"}
    assert set(metrics["LACE"]) == {"uncond", "c", "cwh", "complete", "refine"}
    assert "max_iou" in metrics["LACE"]["c"] and "max_iou" not in metrics["LACE"]["uncond"]
    assert len(details["metrics_per_seed"]) == len(details["seeds"]) == settings("smoke")["seeds"]
    assert (tmp / "samples-smoke.png").stat().st_size > 0


def test_smoke_decides_every_rule_over_paired_seeds(smoke):
    cs, _ = smoke
    s = settings("smoke")
    assert s["decide"] == "paired" and s["seeds"] >= 2
    by_claim = {c.claim: c for c in cs.claims}
    assert set(by_claim) == {r["claim"] for r in RULES.values()}
    per_seed = next(c.details for c in cs.claims if c.details)["metrics_per_seed"]
    for r in RULES.values():
        c = by_claim[r["claim"]]
        assert c.paired is not None and c.paired["n"] == s["seeds"] and c.status == "smoke"
        assert c.paired["form"] == ("log_ratio" if "factor" in r else "difference")
        # the claim's numbers are the official metric, per seed, of the arms the rule names
        assert c.paired["ours"] == [m[r["arm"]][r["task"]][r["key"]] for m in per_seed]
        assert c.paired["baseline"] == [m[r["base"]][r["task"]][r["key"]] for m in per_seed]


def test_modes_share_the_rules():
    q, f = settings("quick"), settings("full")
    assert q["seeds"] == 1 and f["seeds"] >= 3 and f["decide"] == "paired"
    for k in ("net", "lr", "batch", "rec_loss", "time_embedding", "ema"):
        assert q[k] == f[k], k
    assert set(CLAIM_KEYS) == set(RULES)
    assert q["learned_min"] == f["learned_min"] == 0.5
    # full keeps its calibrated budget; quick is a short run of the same code, reported only (fixed before the run)
    assert f["steps"] == 1200 and f["test_n"] == 128 and f["train_n"] == 2000 and "tasks" not in f
    assert q["decide"] == "report" and q["why_report"] and q["steps"] == QUICK_STEPS < f["steps"]
    assert {r["task"] for r in RULES.values()} <= set(q["tasks"]) and "uncond" in q["extra_tasks"]


def test_readme_states_the_quick_config():
    """The README's reproduction prose gives quick's budget as settings('quick') has it."""
    from pathlib import Path

    text = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    q = settings("quick")
    sentence = (
        f"`--quick` trains each arm for {q['steps']} Adam steps on {q['train_n']:,} layouts (one seed, "
        f"{q['test_n']} test layouts, {q['ddim']} DDIM steps)"
    )
    assert sentence in text
    assert "reported only" in text


def _run_with(monkeypatch, tmp_path, **over):
    import iclr24.lace.reproduce as rep

    smoke = settings("smoke")
    monkeypatch.setattr(rep, "settings", lambda mode: {**smoke, **over})
    return check_paper_smoke(PAPER, tmp_path, min_claims=6)


def test_reported_only_mode_records_numbers_without_verdicts(tmp_path, monkeypatch):
    cs = _run_with(monkeypatch, tmp_path, decide="report", seeds=1, why_report="fixed before the run: test")
    assert all(c.status == "skipped" for c in cs.claims)
    assert all("reported only in --smoke" in c.message and c.ours is not None for c in cs.claims)
    assert all(c.baseline is not None for c in cs.claims)


def test_unlearned_models_are_never_gated(tmp_path, monkeypatch):
    """The learned precondition: 3 training steps learn nothing, so with learned_min = 0.5 no verdict is kept; with a
    threshold of 0 the same run is decided."""
    cs = _run_with(monkeypatch, tmp_path / "a", decide="single", seeds=1, learned_min=0.5)
    assert all(c.status == "skipped" and "did not learn the layouts" in c.message for c in cs.claims)
    learned = next(c.details for c in cs.claims if c.details)["learned"]
    assert learned["holds"] is False and learned["real_vs_real"] > 0
    cs = _run_with(monkeypatch, tmp_path / "b", decide="single", seeds=1, learned_min=1e-9)
    assert all(c.status == "smoke" and c.paired is None for c in cs.claims)


def test_quick_mode_runs_only_its_tasks(tmp_path, monkeypatch):
    """Quick's task subset (uncond and C -> S+P; beautify on uncond only; no guidance) still yields every claim."""
    q = settings("quick")
    cs = _run_with(
        monkeypatch,
        tmp_path,
        seeds=1,
        decide=q["decide"],
        why_report=q["why_report"],
        tasks=q["tasks"],
        extra_tasks=q["extra_tasks"],
        guidance=q["guidance"],
    )
    assert {c.claim for c in cs.claims} == {r["claim"] for r in RULES.values()}
    assert all(c.status == "skipped" and "reported only in --smoke" in c.message for c in cs.claims)
    metrics = next(c.details for c in cs.claims if c.details)["metrics"]
    assert set(metrics) == {"real", "baseline", "LACE", "LACE+beautify"}
    assert set(metrics["LACE"]) == {"uncond", "c"} and set(metrics["LACE+beautify"]) == {"uncond"}
