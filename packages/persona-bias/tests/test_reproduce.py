from iclr24.paperkit import Claim, RunConfig
from iclr24.persona_bias.reproduce import FULL, PAPER, QUICK, SMOKE


def test_smoke_claims_run_end_to_end_and_hold(tmp_path):
    claims = PAPER.check(RunConfig(mode="smoke", seed=0, out=tmp_path, progress=False))
    assert claims and all(isinstance(c, Claim) for c in claims)
    assert all(c.paper == "persona-bias" for c in claims)
    assert len(claims) == len(SMOKE.biased) + 2
    assert all(c.status == "smoke" for c in claims)  # smoke mode carries no verdict
    assert all(c.rule_value for c in claims), [(c.claim, c.ours, c.baseline, c.variables) for c in claims]
    assert all((tmp_path / a).is_file() for c in claims for a in c.artifacts)


def test_configs_keep_the_paper_defaults():
    assert QUICK.baseline == FULL.baseline == "a human" and QUICK.alpha == 0.05
    assert len(QUICK.personas) == 19 and set(QUICK.biased) <= set(QUICK.personas)
