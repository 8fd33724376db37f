from iclr24.paperkit.testing import check_paper_smoke
from iclr24.persona_bias.reproduce import FULL, PAPER, QUICK, SMOKE


def test_smoke_claims_run_end_to_end_and_hold(tmp_path):
    claims = check_paper_smoke(PAPER, tmp_path)  # schema, finite numbers, artefacts exist, no error records
    assert all(c.paper == "persona-bias" for c in claims)
    assert len(claims) == len(SMOKE.biased) + 2
    assert all(c.status == "smoke" for c in claims)  # smoke mode carries no verdict
    assert all(c.rule_value for c in claims), [(c.claim, c.ours, c.baseline, c.variables) for c in claims]
    assert all((tmp_path / a).is_file() for c in claims for a in c.artifacts)
    assert [f.name for f in claims.facts] == [
        *(f"planted relative drop of {p!r}" for p in SMOKE.biased),
        "requests per planted run",
    ]


def test_configs_keep_the_paper_defaults():
    assert QUICK.baseline == FULL.baseline == "a human" and QUICK.alpha == 0.05
    assert len(QUICK.personas) == 19 and set(QUICK.biased) <= set(QUICK.personas)
