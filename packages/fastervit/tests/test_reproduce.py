from iclr24.fastervit.registry import OFFICIAL_PARAMS
from iclr24.fastervit.reproduce import PAPER, PARAM_FACT_VARIANTS
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert len(cs) == 1 and all(c.paper == "fastervit" for c in cs)
    assert all(c.verdict == "smoke" for c in cs)
    assert (tmp_path / "carrier_token_task.png").exists()
    assert [f.name for f in cs.facts] == [f"parameters of {n}" for n in PARAM_FACT_VARIANTS]
    assert all(f.value == f.paper_value == OFFICIAL_PARAMS[f.name.split()[-1]] for f in cs.facts)


def test_evaluation_seeds_are_disjoint_from_the_calibration_seeds_and_the_gate_is_the_same():
    from iclr24.fastervit.reproduce import CALIBRATION_SEEDS, FULL, QUICK, RULE

    for setting in (QUICK, FULL):
        assert not set(setting["seeds"]) & set(CALIBRATION_SEEDS)
    assert "ours >= 0.95" in RULE and FULL["cfg"].square == 4  # the task and gate of the official-layer check
