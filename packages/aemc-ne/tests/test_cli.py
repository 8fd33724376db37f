import json

import numpy as np
import pytest

from iclr24.aemc_ne.bench import run_benchmarks
from iclr24.aemc_ne.cli import main
from iclr24.paperkit.testing import check_cli_contract


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_train_then_predict_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", "--data", "synthetic:sigmoid5", "--main-hidden", "20,6,20", "--elem-hidden", "4,4",
            "--epochs", "3", "--lr", "1e-2", "--standardize", "--l2", "0", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert np.isfinite(metrics["test_rmse"]) and metrics["model"] == "aemcne"
    (tmp_path / "pairs.txt").write_text("0 0\n3 17\n")
    assert main(["predict", "--model", str(out / "model.pt"), "--pairs", str(tmp_path / "pairs.txt"),
                 "--out", str(tmp_path / "pred")]) == 0  # fmt: skip
    lines = (tmp_path / "pred" / "predictions.csv").read_text().splitlines()
    assert lines[0] == "user,item,prediction" and len(lines) == 3
    # ids out of range at predict time: one line, exit 2, nothing written
    (tmp_path / "bad.txt").write_text("0 0\n120 0\n")
    capsys.readouterr()
    assert main(["predict", "--model", str(out / "model.pt"), "--pairs", str(tmp_path / "bad.txt"),
                 "--out", str(tmp_path / "pred2")]) == 2  # fmt: skip
    assert "user index out of range" in capsys.readouterr().err
    assert not (tmp_path / "pred2" / "predictions.csv").exists()


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
