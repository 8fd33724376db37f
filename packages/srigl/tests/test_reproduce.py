from iclr24.paperkit.testing import check_paper_smoke
from iclr24.srigl.reproduce import PAPER


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert len(cs) == 7 and all(c.paper == "srigl" for c in cs)
    assert all(c.verdict == "smoke" for c in cs)
    assert [f.name for f in cs.facts] == ["constant fan-in k of the timed condensed layer"]
    assert cs.facts[0].value == 38  # floor(floor(96 * 384 * 0.1) / 96) at S = 0.9
    for name in ("accuracy.png", "speedup.png", "accuracy.json", "speed.json"):
        assert (tmp_path / name).stat().st_size > 0
