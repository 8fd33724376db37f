import json

from iclr24.maxent_moco.reproduce import PAPER
from iclr24.paperkit import Claim, RunConfig


def test_smoke_claims_run_end_to_end(tmp_path):
    claims = PAPER.check(RunConfig(mode="smoke", seed=0, out=tmp_path, progress=False))
    assert claims and all(isinstance(c, Claim) for c in claims)
    assert all(c.paper == "maxent-moco" for c in claims)
    # the exact-query claims are deterministic and already hold at smoke size
    exact = [c for c in claims if not c.claim.startswith("Samples")]
    assert len(exact) == 7 and all(c.rule_value for c in exact)  # smoke: no verdict, the rule still evaluates
    assert any(c.claim.startswith("Samples") for c in claims)
    for c in claims:
        for a in c.artifacts:
            assert (tmp_path / a).exists()
    curves = json.loads((tmp_path / "curves.json").read_text())
    assert set(curves["exact"]) == {"pe", "control", "garnet"}
