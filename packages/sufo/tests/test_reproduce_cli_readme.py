from pathlib import Path

import numpy as np
import pytest

from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing import check_paper_smoke
from iclr24.paperkit.runner.testing import run_readme_blocks
from iclr24.sufo.cli import main
from iclr24.sufo.reproduce import PAPER


@pytest.mark.slow  # fine-tunes a tiny BERT for one epoch
def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    layers = [f.value for f in cs.facts if f.name.startswith("hidden-state layers")]
    assert len(cs) == 4 and layers == [3]  # tiny BERT: 2 layers + embeddings
    assert [c.kind for c in cs.claims] == ["check", "supporting", "supporting", "check"]
    s_claim = cs.claims[0].to_dict()
    probes = s_claim["details"]["probe_runs"]
    assert set(probes) == {"pretrained", "random"} and len(probes["pretrained"]["history"]) == 25
    assert "logistic_probe_pretrained" in s_claim["details"]
    assert (tmp_path / "synthetic.png").is_file()
    md = (tmp_path / "report-synthetic" / "report.md").read_text()  # the `sufo report` of the same run
    assert "## S:" in md and "## U:" in md and "## F:" in md and "## O:" in md
    # every timing the claims record sits under a field the determinism comparison leaves out
    from iclr24.paperkit.runner.report import comparable

    def keys(x):
        if isinstance(x, dict):
            return set(x) | set().union(*(keys(v) for v in x.values()))
        return set().union(*(keys(v) for v in x)) if isinstance(x, list) else set()

    # (budget_seconds: the claims table's fixed budget of a row, recorded with it, not a timing)
    timed = {
        k for k in keys(comparable(cs.to_dict())) if ("second" in k or "time" in k) and k != "budget_seconds"
    }
    assert not timed, f"timings outside the fields comparable() removes: {sorted(timed)}"


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_cli_outliers_on_a_csv(tmp_path, capsys):
    from iclr24.sufo.data import synthetic_reports

    ds = synthetic_reports(24, seed=0)
    csv = tmp_path / "d.csv"
    csv.write_text(
        "text,label\n" + "".join(f'"{t}",{ds.label_names[y]}\n' for t, y in zip(ds.texts, ds.labels))
    )
    assert (
        main(["sparsity", "--data", str(csv), "--out", str(tmp_path / "o"), "--quiet", "--max-length", "32"])
        == 0
    )
    assert (tmp_path / "o" / "sparsity.json").exists()
    assert (
        main(["probe", "--data", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "p"), "--quiet"]) == 2
    )
    assert "does not exist" in capsys.readouterr().err


def test_bench_smoke(tmp_path):
    assert main(["bench", "--smoke", "--out", str(tmp_path)]) == 0


def test_readme_quickstart(tmp_path):
    res = run_readme_blocks(
        Path(__file__).parents[1] / "README.md",
        cwd=tmp_path,
        values={
            0: {"f_pre": "list(f_pre.shape)", "finite": "bool(np.isfinite(f_rnd).all())"},
            1: {  # fine-tune -> save_encoder -> load_encoder -> predict
                "files": "sorted(p.name for p in __import__('pathlib').Path('runs/ft').iterdir())",
                "logged": "__import__('pathlib').Path('runs/ft-logs/metrics.jsonl').is_file()",
            },
        },
    )
    assert res["f_pre"] == [7, 40, 384]
    assert res["finite"]
    assert {"config.json", "model.safetensors", "provenance.json"} <= set(res["files"]) and res["logged"]
    assert res["__stdout__"].strip().splitlines()[-1] == "True"


@pytest.mark.parametrize("mode", ["quick", "full"])
def test_reproduction_configs_train_long_enough_and_never_truncate(mode):
    """The quick config was calibrated (seeds 100-102): fewer than 80 optimiser steps left a calibration seed on the
    loss plateau; the reports must fit in max_length, or the grade sentence could be cut off."""
    from transformers import AutoTokenizer

    from iclr24.sufo.data import split
    from iclr24.sufo.data import synthetic_reports
    from iclr24.sufo.features import minilm_path
    from iclr24.sufo.reproduce import FULL
    from iclr24.sufo.reproduce import QUICK

    c = {"quick": QUICK, "full": FULL}[mode]
    ds = synthetic_reports(c.n_train + c.n_test, seed=0, n_filler=c.n_filler)
    train, _ = split(ds, test_fraction=c.n_test / (c.n_train + c.n_test), seed=0)
    fit, _ = split(train, test_fraction=c.val_fraction, seed=0)
    assert int(np.ceil(len(fit) / c.batch_size)) * c.epochs >= 80
    tok = AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)
    assert max(len(x) for x in tok(ds.texts)["input_ids"]) <= c.max_length
    assert c.threads == 1 and c.lr == 2e-4


def test_quick_config_is_the_one_the_readme_states():
    from iclr24.sufo.reproduce import QUICK

    text = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    fit = int(QUICK.n_train * (1 - QUICK.val_fraction))
    steps = int(np.ceil(fit / QUICK.batch_size)) * QUICK.epochs
    assert (QUICK.n_train, QUICK.n_test, QUICK.n_filler, QUICK.epochs, QUICK.max_length) == (
        200,
        120,
        2,
        4,
        48,
    )
    stated = (
        f"on {QUICK.n_train + QUICK.n_test} synthetic reports ({QUICK.n_train} train / {QUICK.n_test} test; of "
        f"the {QUICK.n_train}, {QUICK.n_train - fit} are the validation set"
    )
    assert stated in text
    assert f"reports of {QUICK.n_filler} filler sentences" in text
    assert (
        f"fine-tuned {QUICK.epochs} epochs" in text
        and f"batch {QUICK.batch_size} = {steps} optimiser steps" in text
    )
    assert f"{QUICK.max_length} tokens" in text


def test_cli_probe_refuses_too_few_texts_per_class_before_any_work(tmp_path, capsys, monkeypatch):
    """3 texts of 3 classes: no class can be both trained on and tested; refused before features are extracted."""
    import iclr24.sufo.cli as cli

    monkeypatch.setattr(cli, "_features", lambda *a, **k: pytest.fail("features extracted before the check"))
    csv = tmp_path / "three.csv"
    csv.write_text("text,label\na report,x\nanother,y\na third,z\n")
    capsys.readouterr()
    assert main(["probe", "--data", str(csv), "--out", str(tmp_path / "p"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "at least 2 texts of every class" in err
    assert not (tmp_path / "p" / "probe.json").exists()


def _readme_command(name: str) -> list[str]:
    """The README's runnable example of `sufo NAME` (the line after the marker comment `# e.g.`)."""
    import shlex

    text = (Path(__file__).parents[1] / "README.md").read_text()
    lines = [ln for ln in text.splitlines() if ln.startswith(f"sufo {name} ") and "# e.g." in ln]
    assert lines, f"the README has no runnable `sufo {name}` example"
    return shlex.split(lines[0].split("#")[0])[1:]


def test_readme_rsa_line_runs_end_to_end(tmp_path, capsys):
    """The README's `sufo rsa --random-reference` line: layer 0 ([CLS] embedding, the same for every text) has
    neither RSA nor CKA; they are written as null with the reason, and the command succeeds."""
    import json

    args = _readme_command("rsa")
    assert "--random-reference" in args
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "rsa"), "--quiet"]) == 0
    res = json.loads((tmp_path / "rsa" / "rsa.json").read_text())
    assert (
        res["rsa"][0] is None
        and res["cka"][0] is None
        and "constant features" in res["undefined_layers"]["0"]
    )
    assert len(res["cka"]) == 7 and all(isinstance(v, float) for v in res["cka"][1:] + res["rsa"][1:])
    assert "layer 0: RSA n/a  CKA n/a" in capsys.readouterr().out


def test_every_sufo_rule_can_fail(tmp_path):
    """With stubbed measurements each gated rule decides both ways, the outlier rule included (it is about the PC1 x
    PC2 rule finding the planted mode, not about the planted reports' random labels)."""
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig
    from iclr24.sufo.reproduce import QUICK
    from iclr24.sufo.reproduce import _synthetic_claims

    good = {
        "probe_pretrained": 0.8, "probe_random": 0.5, "finetuned_macro_f1": 0.95,
        "rsa_per_layer": [None, 0.99, 0.9, 0.8, 0.7, 0.4, 0.2], "evr_top2_after": 0.9, "evr_top2_before": 0.4,
        "outlier_precision": 1.0, "outlier_recall": 0.75, "outlier_base_rate": 0.05, "n_planted": 4,
        "planted_accuracy": 0.25, "inlier_accuracy": 1.0,
    }  # fmt: skip
    bad = {
        **good, "probe_random": 0.75, "finetuned_macro_f1": 0.6, "rsa_per_layer": [None, 0.9, 0.9, 0.8, 0.9, 0.7, 0.6],
        "evr_top2_after": 0.45, "outlier_precision": 0.1, "outlier_recall": 0.25,
    }  # fmt: skip
    for res, verdict in ((good, "holds"), (bad, "fails")):
        cs = ClaimSet("sufo", RunConfig(mode="full", out=tmp_path, progress=False))
        _synthetic_claims(cs, res, "a.png", {}, QUICK)
        assert [c.status for c in cs.claims] == [verdict] * 5, [(c.claim, c.status) for c in cs.claims]
    cs = ClaimSet("sufo", RunConfig(mode="quick", out=tmp_path, progress=False))
    _synthetic_claims(cs, {**good, "outlier_precision": 0.4, "outlier_recall": 0.25}, "a.png", {}, QUICK)
    assert cs.claims[-1].status == "fails"  # precise but finds too few of the planted reports
    assert any("chance by construction" in f.name for f in cs.facts)


def test_claims_table_kinds_seeds_and_the_headline_plan():
    from iclr24.sufo.reproduce import CALIBRATION_SEEDS
    from iclr24.sufo.reproduce import CLAIMS
    from iclr24.sufo.reproduce import POOL
    from iclr24.sufo.reproduce import SPECS

    kinds = {c.id: c.kind for c in CLAIMS}
    assert kinds == {
        "models": "headline", "s_random": "check", "finetune": "check", "u": "supporting", "f": "supporting",
        "o": "check", "icd_s_random": "check", "icd_f": "supporting",
    }  # fmt: skip
    # the strawman control (random init) is a check, never the only gated comparison: the headline compares two
    # pre-trained models
    head = SPECS["models"]
    assert head.modes == ("full",) and head.better == "higher" and head.margin == 0.0 and head.power == 0.9
    cal = head.calibration["full"]
    assert (
        cal.seeds == CALIBRATION_SEEDS
        and not set(cal.seeds) & set(head.seeds["full"])
        and head.seeds["full"] == POOL
    )
    plan = head.plan("full")
    assert plan.decidable and plan.seeds == 13 and plan.needed_seconds <= head.budget["full"]
    # quick has no strawman row: the random-init controls sit in --full beside the headline
    assert [c.id for c in CLAIMS if "quick" in c.modes] == ["finetune", "u", "f", "o"]


def test_model_comparison_is_paired_by_split_on_fixed_features():
    """Each seed is a new split of the same texts; both models' probes see the same split."""
    from iclr24.sufo.data import TextDataset
    from iclr24.sufo.reproduce import MODEL_A
    from iclr24.sufo.reproduce import MODEL_B
    from iclr24.sufo.reproduce import compare_models

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 20)
    ds = TextDataset([f"t{i}" for i in range(60)], y, ["a", "b", "c"], np.zeros(60, dtype=bool))
    signal = np.eye(3)[y] * 3 + rng.normal(size=(60, 3))
    feats = {MODEL_A: rng.normal(size=(60, 5)), MODEL_B: np.hstack([signal, rng.normal(size=(60, 2))])}
    rows = compare_models(ds, feats, [0, 1, 2])
    assert [r["seed"] for r in rows] == [0, 1, 2]
    assert all(r[MODEL_B] > 0.8 > r[MODEL_A] for r in rows)  # separable features vs noise


def test_missing_smollm2_is_skipped_with_its_data_name(tmp_path):
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig
    from iclr24.sufo.reproduce import FULL
    from iclr24.sufo.reproduce import NAME
    from iclr24.sufo.reproduce import PAPER
    from iclr24.sufo.reproduce import SPECS
    from iclr24.sufo.reproduce import _models_claim

    cs = ClaimSet(NAME, RunConfig(mode="full", out=tmp_path, data_dir=tmp_path / "empty", progress=False))
    spec = SPECS["models"]
    with cs.timed(spec.claim, spec):
        _models_claim(cs, spec, spec.evaluated_seeds("full"), FULL, cs.config)
    (claim,) = cs.claims
    assert (
        claim.status == "skipped" and claim.kind == "headline" and "iclr24 data get smollm2" in claim.message
    )
    PAPER.validate(cs)
