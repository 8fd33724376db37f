from iclr24.paperkit import Claim, RunConfig
from iclr24.rdmc.reproduce import PAPER, SMOKE


def test_smoke_claims_run_end_to_end(tmp_path):
    claims = PAPER.check(RunConfig(mode="smoke", seed=0, out=tmp_path, progress=False))
    assert claims and all(isinstance(c, Claim) for c in claims)
    assert all(c.paper == "rdmc" for c in claims)
    d = claims[0].details
    # same seeds and equal budget for every sampler, and the counts were measured, not assumed
    for method, recs in d["per_seed"].items():
        assert [r["seed"] for r in recs] == list(SMOKE.seeds)
        for r in recs:
            assert r["grad_calls_per_sample"] + r["logp_calls_per_sample"] <= SMOKE.budget, method
    assert {c.baseline_name for c in claims} >= {"ula", "mala"}
    assert (tmp_path / "samples_vs_target.png").is_file()
