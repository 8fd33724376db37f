from iclr24.fastervit.registry import OFFICIAL_PARAMS
from iclr24.fastervit.reproduce import PAPER, PARAM_FACT_VARIANTS
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert len(cs) == 2 and all(c.paper == "fastervit" for c in cs)
    assert all(c.verdict == "smoke" for c in cs)
    assert (tmp_path / "hat_vs_global_scaling.png").exists()
    assert [f.name for f in cs.facts] == [f"parameters of {n}" for n in PARAM_FACT_VARIANTS]
    assert all(f.value == f.paper_value == OFFICIAL_PARAMS[f.name.split()[-1]] for f in cs.facts)
