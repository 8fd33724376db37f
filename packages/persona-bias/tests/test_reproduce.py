from iclr24.paperkit.runner.testing import check_paper_smoke
from iclr24.persona_bias.reproduce import FULL
from iclr24.persona_bias.reproduce import PAPER
from iclr24.persona_bias.reproduce import QUICK
from iclr24.persona_bias.reproduce import SMOKE


def test_smoke_claims_run_end_to_end_and_hold(tmp_path):
    claims = check_paper_smoke(PAPER, tmp_path)  # schema, finite numbers, artefacts exist, no error records
    assert all(c.paper == "persona-bias" for c in claims)
    assert len(claims) == len(SMOKE.biased) + 3
    assert all(c.status == "smoke" for c in claims)  # smoke mode carries no verdict
    assert {c.kind for c in claims} == {"check"}  # smoke and quick run only the pipeline checks
    planted = [c for c in claims if "held-out" not in c.claim]
    assert all(c.rule_value for c in planted), [(c.claim, c.ours, c.baseline, c.variables) for c in planted]
    # the paper's setting (no multiple-comparison correction) is gated; Holm is reported beside it
    assert QUICK.correction == FULL.correction == SMOKE.correction == "none"
    assert QUICK.reported_correction == "holm"
    (flag,) = [c for c in claims if "flagged significant" in c.claim]
    assert "nominal_false_flag_rate" in flag.rule and "holm" not in flag.rule
    assert {"holm_biased_flagged", "holm_unbiased_flagged"} <= set(flag.variables)
    assert flag.details["correction"] == "none" and "percent_personas_biased" in flag.details["reported"]
    assert abs(flag.variables["nominal_false_flag_rate"] - (1 - 0.95 ** len(SMOKE.tasks))) < 1e-12
    # the detector on held-out responses: measured (its verdict is whatever the fixed rule says)
    (held,) = [c for c in claims if "held-out" in c.claim]
    assert held.rule == "precision >= 0.9 and ours >= 0.8" and 0 <= held.ours <= 1
    assert all((tmp_path / a).is_file() for c in claims for a in c.artifacts)
    assert [f.name for f in claims.facts] == [
        *(f"planted relative drop of {p!r}" for p in SMOKE.biased),
        "requests per planted run",
    ]


def test_configs_keep_the_paper_defaults():
    assert QUICK.baseline == FULL.baseline == "a human" and QUICK.alpha == 0.05
    assert len(QUICK.personas) == 19 and set(QUICK.biased) <= set(QUICK.personas)
