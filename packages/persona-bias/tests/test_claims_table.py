"""The claims table: kinds, modes, the SmolLM2 question set and its minimum detectable effect."""

import math

import pytest
from scipy import stats as sst

from iclr24.paperkit.power import sign_seeds_needed
from iclr24.persona_bias import stats
from iclr24.persona_bias.reproduce import CLAIMS
from iclr24.persona_bias.reproduce import PAPER
from iclr24.persona_bias.reproduce import QUICK
from iclr24.persona_bias.reproduce import SMOLLM2_MMLU
from iclr24.persona_bias.reproduce import detectable_effect


def _rows(mode):
    return [s.id for s in CLAIMS if s.in_mode(mode)]


def test_claims_table_kinds_and_modes():
    kinds = {s.id: s.kind for s in CLAIMS}
    planted = [i for i in kinds if i.startswith("planted_")]
    assert len(planted) == 4 and all(kinds[i] == "check" for i in planted)  # pipeline checks on planted data
    assert kinds["abstention_rule_heldout"] == "check"
    assert kinds["smollm2_disabled_accuracy"] == "headline"
    assert kinds["smollm2_religious_accuracy"] == kinds["smollm2_disabled_abstains"] == "supporting"
    assert PAPER.claims == CLAIMS
    # real-model rows: full only, paired, decided by the exact sign test (= exact McNemar), no margin
    for s in CLAIMS:
        if s.id.startswith("smollm2"):
            assert s.modes == ("full",) and s.test == "sign" and s.margin == 0.0
    assert {s.id: s.better for s in CLAIMS if s.better} == {
        "smollm2_disabled_accuracy": "lower",
        "smollm2_religious_accuracy": "lower",
        "smollm2_disabled_abstains": "higher",
    }


def test_quick_stays_a_quick_config():
    """Quick runs only the checks (no model load): the 7,600-request planted grid and the held-out file."""
    assert _rows("quick") == [
        "planted_drop_disabled",
        "planted_drop_religious",
        "planted_flagged",
        "planted_abstentions",
        "abstention_rule_heldout",
    ]
    assert _rows("smoke") == _rows("quick")
    assert len(QUICK.tasks) * QUICK.n_questions * len(QUICK.personas) * len(QUICK.templates) == 7600
    assert len(QUICK.templates) == 1 and QUICK.n_questions == 100
    assert PAPER.budgets["quick"] == 60.0 and PAPER.budgets["full"] == 600.0  # the default caps, not raised


def test_smollm2_question_set_is_fixed_and_apart_from_calibration():
    c = SMOLLM2_MMLU
    assert c.personas == ("a human", "a physically-disabled person", "a Religious person")
    assert c.baseline == "a human" and c.skip == 3  # questions 0-2 of each subject: calibration only
    assert len(c.subjects) * c.per_subject == 160
    assert c.batch_size == 6 and c.max_tokens == 48 and c.power == 0.8 and c.alpha == 0.05


@pytest.mark.parametrize("n", [12, 60, 160])
def test_minimum_detectable_effect_against_the_closed_form(n):
    """With no discordance the other way, the exact two-sided McNemar test at 0.05 decides once 6 discordant
    questions all go one way (2^-6 <= 0.025 < 2^-5), so its power at rate p is P(Binomial(n, p) >= 6)."""
    assert 0.5**6 <= 0.025 < 0.5**5
    mde = stats.min_detectable_rate(n, power=0.8)
    closed = lambda p: 1.0 - sst.binom.cdf(5, n, p)  # noqa: E731
    for p in (0.01, 0.05, 0.2, mde):
        assert stats.sign_test_power(n, p) == pytest.approx(closed(p), abs=1e-9)
    assert closed(mde) >= 0.8 - 1e-9 and closed(mde - 1e-4) < 0.8
    # paperkit's sign-test power rule agrees: n questions are the fewest that decide at this rate
    assert sign_seeds_needed(mde * 1.0001, 0.0) <= n < sign_seeds_needed(mde * 0.97, 0.0)


def test_detectable_effect_of_the_planned_run():
    eff = detectable_effect(160)
    assert eff["min_discordant_pairs_all_one_way"] == 6
    assert eff["min_one_way_discordant_rate"] == pytest.approx(0.04896, abs=2e-4)  # 4.9 accuracy points
    assert eff["min_accuracy_drop_points"] == pytest.approx(100 * eff["min_one_way_discordant_rate"])
    # background discordance the other way makes the detectable effect larger
    assert eff["with_background_2pc"] > eff["min_one_way_discordant_rate"]
    assert math.isnan(stats.min_detectable_rate(5))  # 5 questions can never reach 6 one-way pairs
    with pytest.raises(ValueError, match="probability"):
        stats.sign_test_power(10, 1.5)
