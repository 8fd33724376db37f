import json

import pytest

from iclr24.persona_bias import LoopbackServer
from iclr24.persona_bias import OpenAIBackend
from iclr24.persona_bias import PlantedBias
from iclr24.persona_bias import RunStore
from iclr24.persona_bias import ScriptedBackend
from iclr24.persona_bias import compare_personas
from iclr24.persona_bias import export_official
from iclr24.persona_bias import judge_abstentions
from iclr24.persona_bias import percent_personas_biased
from iclr24.persona_bias import persona_summary
from iclr24.persona_bias import run_evaluation
from iclr24.persona_bias import score_records
from iclr24.persona_bias.loopback import planned_outcome
from iclr24.persona_bias.pipeline import plan_requests


def test_plan_dedupes_no_persona_across_templates(small_items):
    plan = plan_requests(small_items, ["a man", "no_persona"], ["you_are_mirror", "take_role_true_to"])
    assert len(plan) == 60 * 2 + 60  # no_persona asked once whatever the template
    with pytest.raises(ValueError, match="unknown persona template"):
        plan_requests(small_items, ["a man"], ["nope"])


def test_planted_bias_end_to_end_and_official_files(tmp_path, small_items):
    bias = PlantedBias(abstain={"a physically-disabled person": 0.5}, noise=0.0, no_answer=0.0, seed=1)
    personas = ["a human", "a physically-disabled person", "a woman", "no_persona"]
    items = [it for its in small_items.values() for it in its]
    store = RunStore(tmp_path / "store")
    with LoopbackServer(items, bias) as srv, OpenAIBackend(srv.base_url, "planted", concurrency=4) as be:
        summ = run_evaluation(be, small_items, personas, store)
    assert summ.sent == summ.total == 240
    scored = score_records(store.records())
    # abstentions are detected exactly where they were planted
    for r in scored:
        assert r["abstained"] == (planned_outcome(bias, r["dataset"], r["id"], r["persona"]) == "abstain")
    comps = compare_personas(scored, baseline="a human")
    dis = [c for c in comps if c.persona == "a physically-disabled person"]
    assert all(c.significant and c.relative_drop > 0.25 and c.drop_from_abstention == 1.0 for c in dis)
    assert not any(c.significant for c in comps if c.persona != "a physically-disabled person")
    assert percent_personas_biased(comps) == pytest.approx(100 / 3)
    summary = {r["persona"]: r for r in persona_summary(comps)}
    assert summary["a physically-disabled person"]["pct_datasets_significant"] == 100.0
    files = export_official(store.records(), tmp_path / "results")
    assert len(files) == 3 * 4 * 2
    lab = [
        f
        for f in files
        if f.name.startswith("a_physically-disabled_person")
        and f.name.endswith("_labeled.jsonl")
        and "arithmetic" in str(f)
    ]
    assert lab and lab[0].parent.parts[-4:] == (
        "builtin",
        "planted",
        "adopt_identity_accordance",
        "arithmetic",
    )
    row = json.loads(lab[0].read_text().splitlines()[0])
    assert {"id", "question", "answer", "predicted_explanations", "predicted_answer", "is_correct"} <= set(
        row
    )
    raw_f = lab[0].with_name(
        lab[0].name.replace("_text_predictions", "_raw_responses").replace("_labeled", "")
    )
    raw = json.loads(raw_f.read_text().splitlines()[0])
    assert set(raw) == {"id", "system_prompt", "user_prompt", "raw_response"}
    assert raw["system_prompt"].startswith("Adopt the identity of a physically-disabled person.")


def test_compare_personas_errors_and_correction(tmp_path, small_items):
    be = ScriptedBackend(lambda p: "Therefore, the answer is (A).", name="m")
    store = RunStore(tmp_path)
    run_evaluation(be, small_items, ["a human", "a man"], store)
    scored = score_records(store.records())
    with pytest.raises(ValueError, match="baseline persona 'a woman' has no responses"):
        compare_personas(scored, baseline="a woman")
    with pytest.raises(ValueError, match="unknown test"):
        compare_personas(scored, test="t-test")
    comps = compare_personas(scored, correction="holm", test="binom_smaller")
    assert len(comps) == 2 and all(
        c.pvalue > 0.5 and c.pvalue_adjusted == 1.0 and not c.significant for c in comps
    )


def test_optional_llm_judge(tmp_path, small_items):
    answers = iter(["I refuse to do maths.", "Therefore, the answer is (B).", "Hmm, hard to say."] * 40)
    store = RunStore(tmp_path)
    run_evaluation(
        ScriptedBackend(lambda p: next(answers), name="m"),
        {"d": small_items["builtin-units"][:3]},
        ["a man"],
        store,
    )
    judge = ScriptedBackend(lambda p: "Yes" if "I refuse to do maths" in p.user else "No", name="judge")
    judged = {r["id"]: r for r in judge_abstentions(judge, store.records())}
    assert len(judge.calls) == 2  # the answered response is not sent to the judge
    assert judged[0]["judge_abstained"] is True and judged[1]["judge_abstained"] is False
    assert judged[2]["judge_abstained"] is False
    assert [r["judge_abstained"] for r in sorted(score_records(judged.values()), key=lambda r: r["id"])] == [
        True,
        False,
        False,
    ]
