import json

import numpy as np
import pytest

from iclr24.aemc_ne import load_model
from iclr24.aemc_ne.bench import run_benchmarks
from iclr24.aemc_ne.cli import main
from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing_workflow import run_interrupted
from iclr24.paperkit.tracking import read_jsonl


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_train_then_predict_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", "--data", "synthetic:sigmoid5", "--main-hidden", "20,6,20", "--elem-hidden", "4,4",
            "--epochs", "3", "--lr", "1e-2", "--standardize", "--l2", "0", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert np.isfinite(metrics["test_rmse"]) and metrics["model"] == "aemcne"
    # the model folder, with the exact command, seed, epochs and CPU seconds
    assert sorted(p.name for p in (out / "model").iterdir()) == [
        "config.json",
        "model.safetensors",
        "provenance.json",
    ]
    prov = json.loads((out / "model" / "provenance.json").read_text())
    assert prov["command"] == "aemc-ne " + " ".join(args) and prov["seed"] == 0 and prov["steps"] == 3
    assert prov["cpu_seconds"] > 0 and prov["test_rmse"] == metrics["test_rmse"]
    assert not (out / "model.pt").exists()
    (tmp_path / "pairs.txt").write_text("0 0\n3 17\n")
    assert main(["predict", "--model", str(out / "model"), "--pairs", str(tmp_path / "pairs.txt"),
                 "--out", str(tmp_path / "pred")]) == 0  # fmt: skip
    lines = (tmp_path / "pred" / "predictions.csv").read_text().splitlines()
    assert lines[0] == "user,item,prediction" and len(lines) == 3
    # the older checkpoint file (model.save) still loads, with the same predictions
    load_model(out / "model").save(tmp_path / "old.pt")
    assert main(["predict", "--model", str(tmp_path / "old.pt"), "--pairs", str(tmp_path / "pairs.txt"),
                 "--out", str(tmp_path / "pred-old")]) == 0  # fmt: skip
    assert (tmp_path / "pred-old" / "predictions.csv").read_text() == "\n".join(lines) + "\n"
    # ids out of range at predict time: one line, exit 2, nothing written
    (tmp_path / "bad.txt").write_text("0 0\n120 0\n")
    capsys.readouterr()
    assert main(["predict", "--model", str(out / "model"), "--pairs", str(tmp_path / "bad.txt"),
                 "--out", str(tmp_path / "pred2")]) == 2  # fmt: skip
    assert "user index out of range" in capsys.readouterr().err
    assert not (tmp_path / "pred2" / "predictions.csv").exists()


def test_log_dir_and_resume(tmp_path, capsys):
    """--log-dir writes one JSONL row per epoch; an interrupted run continued with --resume writes the model an
    uninterrupted run writes (the same weights and metrics)."""
    base = ["train", "--data", "synthetic:sigmoid5", "--main-hidden", "8,8", "--elem-hidden", "4", "--l2", "0",
            "--lr", "1e-2", "--standardize", "--eval-every", "2", "--batch-size", "64", "--quiet"]  # fmt: skip
    assert (
        main([*base, "--epochs", "6", "--out", str(tmp_path / "a"), "--log-dir", str(tmp_path / "logs")]) == 0
    )
    rows = read_jsonl(tmp_path / "logs" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6, -1] and rows[1]["val_rmse"] > 0
    assert "val_rmse" not in rows[0] and rows[-1]["best_epoch"] in (2, 4, 6)
    # a run interrupted (Ctrl-C) in epoch 5: it keeps the state saved at its epoch-4 check
    assert run_interrupted(main, [*base, "--epochs", "6", "--out", str(tmp_path / "b")], at_step=5) == 130
    assert (tmp_path / "b" / "train_state.pt").is_file() and not (tmp_path / "b" / "model").exists()
    capsys.readouterr()
    assert main([*base, "--epochs", "6", "--out", str(tmp_path / "b")]) == 2  # the folder holds a run
    assert main([*base, "--epochs", "6", "--out", str(tmp_path / "b"), "--resume", "--log-dir",
                 str(tmp_path / "logs-b")]) == 0  # fmt: skip
    assert [r["step"] for r in read_jsonl(tmp_path / "logs-b" / "metrics.jsonl")] == [
        5,
        6,
        -1,
    ]  # epochs 5-6 only
    a, b = (json.loads((tmp_path / n / "metrics.json").read_text()) for n in "ab")
    assert a["test_rmse"] == b["test_rmse"] and a["best_epoch"] == b["best_epoch"]
    wa, wb = ((tmp_path / n / "model" / "model.safetensors").read_bytes() for n in "ab")
    assert wa == wb
    assert json.loads((tmp_path / "b" / "model" / "provenance.json").read_text())["resumed_after_epoch"] == 4
    # a resume with other settings is refused in one line
    capsys.readouterr()
    assert main([*base, "--epochs", "6", "--lr", "1e-3", "--out", str(tmp_path / "b"), "--resume"]) == 2
    assert "lr" in capsys.readouterr().err


def test_user_errors_exit_2(tmp_path, capsys):
    assert (
        main(["train", "--data", "movielens:" + str(tmp_path / "none.data"), "--out", str(tmp_path / "o")])
        == 2
    )
    assert main(["train", "--data", "netflix", "--out", str(tmp_path / "o")]) == 2
    with pytest.raises(SystemExit) as e:
        main(["train", "--main-hidden", "0", "--out", str(tmp_path / "o")])
    assert e.value.code == 2


def test_bench_smoke():
    rep = run_benchmarks("smoke")
    assert len(rep.results) == 6
    assert all(r.median_s > 0 and r.baseline_median_s > 0 for r in rep.results)


def test_cli_defaults_are_the_configs():
    from iclr24.aemc_ne.cli import app
    from iclr24.aemc_ne.completion import AEMCNE
    from iclr24.aemc_ne.completion import MatrixFactorization
    from iclr24.aemc_ne.config import FitConfig

    check_app_defaults(app, {"train": (FitConfig, AEMCNE, MatrixFactorization)})
