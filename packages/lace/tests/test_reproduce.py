"""The claim run in smoke mode, through the shared record checks."""

from iclr24.lace.reproduce import PAPER, settings
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=6)
    metrics = cs.claims[0].details["metrics"]
    assert set(metrics) == {"baseline", "LACE", "LACE+beautify"}
    assert set(metrics["LACE"]) == {"uncond", "c", "cwh", "complete", "refine"}
    assert "max_iou" in metrics["LACE"]["c"] and "max_iou" not in metrics["LACE"]["uncond"]
    assert (tmp_path / "samples.png").stat().st_size > 0


def test_modes_share_the_rules():
    q, f = settings("quick"), settings("full")
    assert q["steps"] < f["steps"] and q["seeds"] == 1 and f["seeds"] == 3
