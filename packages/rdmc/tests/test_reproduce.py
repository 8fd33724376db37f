from iclr24.paperkit.testing import check_paper_smoke
from iclr24.rdmc.reproduce import PAPER, SMOKE


def test_smoke_claims_run_end_to_end(tmp_path):
    claims = check_paper_smoke(PAPER, tmp_path)
    assert len(claims) == 4 and all(c.paper == "rdmc" and c.verdict == "smoke" for c in claims)
    d = claims[0].details
    # same seeds and equal budget for every sampler, and the counts were measured, not assumed
    for method, recs in d["per_seed"].items():
        assert [r["seed"] for r in recs] == list(SMOKE.seeds)
        for r in recs:
            assert r["grad_calls_per_sample"] + r["logp_calls_per_sample"] <= SMOKE.budget, method
    assert {c.baseline_name for c in claims} >= {"ula", "mala"}
    assert (tmp_path / "samples_vs_target.png").is_file()
    assert [f.name for f in claims.facts] == [f"oracle calls per sample, {m}" for m in SMOKE.methods]
    assert all(0 < f.value <= SMOKE.budget for f in claims.facts)
