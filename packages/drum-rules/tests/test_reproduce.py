from iclr24.drum_rules.reproduce import PAPER
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert len(cs) == 7 and all(c.paper == "drum-rules" for c in cs)
    assert [f.name for f in cs.facts][0] == "datasets checked"
    assert any("collected on" in f.name for f in cs.facts)  # by construction: a fact, not a claim
    assert not any("source_recall" in c.rule for c in cs)
    assert any(a.endswith("faithfulness.png") for a in cs.artifacts)
