from iclr24.drum_rules.reproduce import PAPER
from iclr24.paperkit import Claim, RunConfig


def test_smoke_claims_run_end_to_end(tmp_path):
    claims = PAPER.check(RunConfig(mode="smoke", seed=0, out=tmp_path, progress=False))
    assert claims and all(isinstance(c, Claim) for c in claims)
    assert all(c.paper == "drum-rules" for c in claims)
