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
    assert len(exact) == 6 and all(c.rule_value for c in exact)  # smoke: no verdict, the rule still evaluates
    assert any(c.claim.startswith("Samples") for c in claims)
    for c in claims:
        for a in c.artifacts:
            assert (tmp_path / a).exists()
    curves = json.loads((tmp_path / "curves.json").read_text())
    assert set(curves["exact"]) == {"pe", "control", "garnet", "maze"}
    (gate,) = claims.facts
    assert gate.value == 1  # the official gate: corrected from the first plan on
    # the control claim gates MoCoVI at iteration 4 against VI at iteration 6 and keeps both whole curves
    (ctl,) = [c for c in claims if c.claim.startswith("Control")]
    assert (
        len(ctl.details["VI_error_by_iteration"]) == 16
        and ctl.baseline == ctl.details["VI_error_by_iteration"][6]
    )
    # OS-Dyna stands among the baselines of the sample claim
    (smp,) = [c for c in claims if c.claim.startswith("Samples")]
    assert "OS-Dyna" in smp.claim and "OS-Dyna" in smp.details["mean_error"]
    # decided over paired seeds: per seed, MoCoDyna against the best of the three baselines on that seed
    per_seed = smp.details["per_seed_mean_error"]
    assert smp.paired["seeds"] == [0] and smp.paired["better"] == "lower" and smp.paired["margin"] == 0.0
    assert smp.paired["ours"] == per_seed["MoCoDyna(d=2)"]
    best = [min(v) for v in zip(*(per_seed[k] for k in ("Q-learning", "Dyna", "OS-Dyna")))]
    assert smp.paired["baseline"] == best
    assert any(c.claim.startswith("Maze") for c in claims)
