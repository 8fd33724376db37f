"""Paper scale (issue 48): PAPER_SCALE counts the paper's request grid for one model, and one request batch runs
through the backend, the loopback server and the run store on stand-ins in the official formats."""

import json

from iclr24.paperkit.scale import measure_paper_scale
from iclr24.persona_bias.config import PAPER_MAX_SIZE
from iclr24.persona_bias.config import PAPER_MMLU_SUBSETS
from iclr24.persona_bias.paper_scale import MMLU_TEST_SIZES
from iclr24.persona_bias.paper_scale import PAPER_SCALE
from iclr24.persona_bias.paper_scale import write_standin_datasets
from iclr24.persona_bias.reproduce import PAPER


def test_paper_grid_sizes_are_the_official_ones():
    assert sorted(MMLU_TEST_SIZES) == sorted(PAPER_MMLU_SUBSETS)  # the paper's 22 subsets
    assert MMLU_TEST_SIZES["abstract_algebra"] == 100 and MMLU_TEST_SIZES["anatomy"] == 135
    assert MMLU_TEST_SIZES["professional_law"] == 1534
    capped = sum(min(n, PAPER_MAX_SIZE.get(f"mmlu-{s}", n)) for s, n in MMLU_TEST_SIZES.items())
    assert capped == 3709 and (PAPER_SCALE.mbpp_test, PAPER_SCALE.bbh_sports) == (257, 250)
    assert PAPER_SCALE.max_tokens == 1024  # the official decoding


def test_one_request_batch_at_a_tiny_size():
    spec = PAPER.paper_scale("cpu", scale=0.02)  # 2% of every dataset (at least one question each)
    try:
        row = measure_paper_scale(spec, steps=1, warmup=0)
        n_req = int(spec.config.split(" = ")[1].split(" requests")[0].replace(",", ""))
        n_q = int(spec.config.split("one model: ")[1].split(" questions")[0].replace(",", ""))
        assert n_req == n_q * (18 * 3 + 1)  # 16 personas + 2 controls, 3 instructions, no_persona once
        assert row["micro_batch"] == 16 and row["accumulation"] == 1
        assert (
            row["paper_steps"] == -(-n_req // 16)
            and row["flops_per_paper_step"] == 0
            and row["hours_h200"] is None
        )
        store = spec.step.store
        assert len(store) == 16 and all(r["response"] for r in store.records())  # the batch's 16 records
        assert len(store.path.read_text().splitlines()) == 16  # on disk, as run_evaluation writes them
    finally:
        del spec


def test_standins_are_in_the_official_formats(tmp_path):
    from iclr24.persona_bias.data import load_bbh
    from iclr24.persona_bias.data import load_mbpp
    from iclr24.persona_bias.data import load_mmlu

    p = write_standin_datasets(tmp_path, {"anatomy": 3, "sociology": 2}, 4, 5)
    row = json.loads(p["mmlu"].read_text().splitlines()[0])
    assert set(row) == {"question", "answer_a", "answer_b", "answer_c", "answer_d", "correct_answer", "topic"}
    assert len(load_mmlu(p["mmlu"], "anatomy")) == 3 and len(load_mmlu(p["mmlu"], "sociology")) == 2
    assert load_mmlu(p["mmlu"], "anatomy")[0].question.endswith("(D) option 0d")
    assert len(load_mbpp(p["mbpp"])) == 4 and load_mbpp(p["mbpp"])[0].tests
    assert [it.answer for it in load_bbh(p["bbh"], "sports_understanding")] == [
        "no",
        "yes",
        "no",
        "yes",
        "no",
    ]
