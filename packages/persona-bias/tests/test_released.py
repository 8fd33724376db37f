"""The released-generations loader: the official labelled-output folder tree and a tiny parquet table of it."""

from __future__ import annotations

import json

import pytest

from iclr24.persona_bias import compare_personas
from iclr24.persona_bias.released import REQUIRED_COLUMNS
from iclr24.persona_bias.released import load_released

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

REFUSAL = "As a physically-disabled person, I am unable to answer questions about physics."


def official_rows(persona: str, n: int = 8) -> list[dict]:
    """Labelled rows as the official code writes them: the disabled persona refuses on questions 0-3."""
    out = []
    for i in range(n):
        refuse = persona == "a physically-disabled person" and i < 4
        text = REFUSAL if refuse else f"Let me think. The answer is: ({'ABCD'[i % 4]})"
        out.append(
            {
                "id": i,
                "question": f"Q{i}?\n(A) a (B) b (C) c (D) d",
                "answer": "ABCD"[i % 4],
                "predicted_explanations": [text],
                "predicted_answer": "" if refuse else "ABCD"[i % 4],
                "is_correct": not refuse,
            }
        )
    return out


def write_tree(root):
    folder = root / "mmlu" / "gpt-3.5-turbo-0613" / "adopt_identity_accordance" / "college_physics"
    folder.mkdir(parents=True)
    for persona in ("a human", "a physically-disabled person"):
        name = (
            f"{persona.replace(' ', '_')}_text_predictions_s0_e-1_temp0.0_gen1_09m-02d_12h-16m_07s_218869ms"
        )
        lines = "\n".join(json.dumps(r) for r in official_rows(persona))
        (folder / f"{name}_labeled.jsonl").write_text(lines + "\n")
    return root


def test_tree_layout_gives_rows_compare_personas_scores(tmp_path):
    rows = load_released(write_tree(tmp_path / "outputs"))
    assert len(rows) == 16
    r = next(r for r in rows if r["persona"] == "a physically-disabled person" and r["id"] == 0)
    assert r["dataset"] == "mmlu-college_physics" and r["template"] == "adopt_identity_accordance"
    assert r["abstained"] and not r["is_correct"] and r["references_persona"]
    (cmp,) = compare_personas(rows, baseline="a human")
    assert cmp.persona == "a physically-disabled person"
    assert cmp.n10 == 4 and cmp.n01 == 0  # four answers lost, all of them refusals
    assert cmp.drop_from_abstention == 1.0


def test_parquet_table_in_the_same_layout(tmp_path):
    table = []
    for persona in ("a human", "a physically-disabled person"):
        for r in official_rows(persona):
            table.append(
                dict(
                    r, model="gpt-3.5-turbo-0613", persona=persona, template="you_are", dataset="mmlu-anatomy"
                )
            )
    path = tmp_path / "released.parquet"
    pq.write_table(pa.Table.from_pylist(table), path)
    rows = load_released(path)
    assert len(rows) == 16 and {r["template"] for r in rows} == {"you_are"}
    assert sum(r["abstained"] for r in rows) == 4
    (cmp,) = compare_personas(rows, baseline="a human")
    assert cmp.n10 == 4 and cmp.drop_from_abstention == 1.0
    # released MBPP code is never run: the official label stands
    mbpp = dict(
        table[0], dataset="mbpp", predicted_explanations=["```python\nimport os; os.remove('x')\n```"]
    )
    pq.write_table(pa.Table.from_pylist([mbpp]), tmp_path / "mbpp.parquet")
    (row,) = load_released(tmp_path / "mbpp.parquet")
    assert row["is_correct"] is True and not row["abstained"]


def test_bad_inputs_say_what_is_wrong(tmp_path):
    with pytest.raises(FileNotFoundError, match="allenai/persona-bias"):
        load_released(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="_labeled.jsonl"):
        load_released(tmp_path / "empty")
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(ValueError, match="expected a folder"):
        load_released(tmp_path / "x.csv")
    pq.write_table(pa.Table.from_pylist([{"id": 1, "persona": "a human"}]), tmp_path / "cols.parquet")
    with pytest.raises(ValueError, match="missing column"):
        load_released(tmp_path / "cols.parquet")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match="not a readable parquet"):
        load_released(tmp_path / "bad.parquet")
    root = write_tree(tmp_path / "tree")
    f = next(root.rglob("*_labeled.jsonl"))
    f.write_text('{"id": 0}\n')
    with pytest.raises(ValueError, match="missing field 'predicted_explanations'"):
        load_released(root)
    f.write_text("{not json\n")
    with pytest.raises(ValueError, match=":1: not valid JSON"):
        load_released(root)
    assert "is_correct" in REQUIRED_COLUMNS


def test_mmlu_from_hf_parquet_files(tmp_path):
    """``--mmlu`` also reads the HF ``cais/mmlu`` parquet layout: ``<root>/<subject>/test-*.parquet``."""
    from iclr24.persona_bias import load_mmlu

    rows = [
        {"question": "2 + 2 = ?", "subject": "anatomy", "choices": ["3", "4", "5", "6"], "answer": 1},
        {
            "question": "Largest organ?",
            "subject": "anatomy",
            "choices": ["skin", "liver", "lung", "heart"],
            "answer": 0,
        },
    ]
    (tmp_path / "anatomy").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "anatomy" / "test-00000-of-00001.parquet")
    items = load_mmlu(tmp_path, "anatomy")
    assert [it.answer for it in items] == ["B", "A"]
    assert "(B) 4" in items[0].question
