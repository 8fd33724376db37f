import importlib.util

import pytest

from iclr24.paperkit.data.folder import is_present
from iclr24.persona_bias import GenerationConfig
from iclr24.persona_bias import RunStore
from iclr24.persona_bias import TransformersBackend
from iclr24.persona_bias import builtin_questions
from iclr24.persona_bias import run_evaluation
from iclr24.persona_bias import score_records


@pytest.mark.slow
@pytest.mark.skipif(
    not is_present("smollm2") or importlib.util.find_spec("gguf") is None,
    reason="needs `iclr24 data get smollm2` and the smollm2 extra (gguf, accelerate)",
)
def test_smollm2_real_model_end_to_end(tmp_path):
    be = TransformersBackend.smollm2(batch_size=2)  # the GGUF file from the data folder
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
