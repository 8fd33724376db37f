"""The claim run in smoke mode, through the shared record checks."""

from iclr24.lace.reproduce import CLAIM_KEYS, PAPER, settings
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=6)
    metrics = next(c.details for c in cs.claims if c.details)["metrics"]
    assert set(metrics) == {"real", "baseline", "LACE", "LACE+beautify", "LACE+guidance"}
    # the reference row: a second set of real layouts against the test layouts (aligned, no overlap by construction)
    ref = metrics["real"]["reference"]
    assert set(ref) >= {"align_x100", "overlap_x100", "fd", "max_iou"}
    assert ref["align_x100"] < 1e-3 and ref["overlap_x100"] < 1e-3 and 0 < ref["max_iou"] <= 1
    facts = {f.name: f.value for f in cs.facts}
    assert facts["real vs real: MaxIoU of a second set of real test layouts"] == ref["max_iou"]
    assert set(metrics["LACE+guidance"]) == {"uncond", "c"}
    assert set(metrics["LACE"]) == {"uncond", "c", "cwh", "complete", "refine"}
    assert "max_iou" in metrics["LACE"]["c"] and "max_iou" not in metrics["LACE"]["uncond"]
    assert (tmp_path / "samples.png").stat().st_size > 0


def test_modes_share_the_rules():
    q, f = settings("quick"), settings("full")
    assert q["steps"] < f["steps"] and q["seeds"] == 1 and f["seeds"] >= 2
    assert set(f["gated"]) == set(CLAIM_KEYS) and set(q["gated"]) <= set(CLAIM_KEYS)
    assert q["lr"] == f["lr"] and q["time_embedding"] == f["time_embedding"]


def test_quick_gates_only_alignment_and_overlap_and_records_the_rest(tmp_path, monkeypatch):
    """A mode gates exactly the rules its settings name; the others are still measured and shown as skipped."""
    import iclr24.lace.reproduce as rep

    q = settings("quick")
    assert set(q["gated"]) == {"align", "overlap"}
    smoke = settings("smoke")
    monkeypatch.setattr(rep, "settings", lambda mode: {**smoke, "gated": q["gated"]})
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=6)
    status = {c.claim: c.status for c in cs.claims}
    assert sum(s == "skipped" for s in status.values()) == 4
    assert status["the constraint losses improve alignment (unconditional)"] != "skipped"
    assert status["the constraint losses lower overlap (unconditional)"] != "skipped"
    skipped = [c for c in cs.claims if c.status == "skipped"]
    assert all("not gated in --smoke" in c.message and "ours " in c.message for c in skipped)
    assert next(c.details for c in cs.claims if c.details)["metrics"]["real"]["reference"]
