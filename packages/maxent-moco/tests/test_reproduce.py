import json

from iclr24.maxent_moco.reproduce import PAPER
from iclr24.paperkit import Claim
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_claims_run_end_to_end(tmp_path):
    claims = check_paper_smoke(PAPER, tmp_path)  # schema, finite numbers, artefacts exist, no error verdicts
    assert claims and all(isinstance(c, Claim) for c in claims)
    assert all(c.paper == "maxent-moco" for c in claims)
    assert all(c.verdict == "smoke" for c in claims)
    # the exact-query claims are deterministic and already hold at smoke size
    exact = [c for c in claims if not c.claim.startswith("Samples")]
    assert len(exact) == 7 and all(c.rule_value for c in exact)  # smoke: no verdict, the rule still evaluates
    assert any(c.claim.startswith("Samples") for c in claims)
    for c in claims:
        for a in c.artifacts:
            assert (tmp_path / a).exists()
    curves = json.loads((tmp_path / "curves.json").read_text())
    assert set(curves["exact"]) == {"pe", "control", "garnet"}
    (gate,) = claims.facts
    assert gate.value == (2 + 2) * 1500  # SMOKE: d = 2, a value pushed every 1500 samples
