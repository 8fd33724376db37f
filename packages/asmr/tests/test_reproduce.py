from iclr24.asmr.reproduce import PAPER
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert len(cs) == 3 and all(c.paper == "asmr" for c in cs)
    assert all(c.verdict == "smoke" for c in cs)
    assert (tmp_path / "reconstructions.png").is_file() and (tmp_path / "depth_table.md").is_file()
    # the MAC counts are tabulated from the architecture: facts, not claims
    assert not any("fewer MAC" in c.claim or "MAC/px" in c.claim for c in cs)
    assert len(cs.facts) == 3 and all(f.paper == "asmr" for f in cs.facts)
    reduction, depth, pluto = cs.facts
    assert abs(reduction.value - 609 / 109.5) < 1e-9  # SIREN 4x16 vs ASMR in the smoke config
    d = reduction.details
    assert d["hook_plus_modulation_adds"] == d["asmr_macs"]  # forward hooks + modulation adds = closed form
    assert 3 * depth.value <= depth.details["mlp_growth"]  # flat in depth (the former claim's rule)
    assert pluto.value >= pluto.paper_value == 500.0  # the abstract's "up to 500x"
