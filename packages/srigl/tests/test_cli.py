import json

import numpy as np
import pytest

from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing import check_cli_defaults
from iclr24.paperkit.runner.testing import check_out_at_a_file_refused
from iclr24.paperkit.runner.testing_workflow import check_help_lists
from iclr24.paperkit.runner.testing_workflow import check_usage_errors
from iclr24.srigl.cli import app
from iclr24.srigl.cli import main
from iclr24.srigl.train import TrainConfig


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_train_defaults_are_the_configs():
    # distribution and epochs default to None on the command line on purpose: model- and mode-dependent
    checked = check_cli_defaults(app, "train", TrainConfig, skip=("distribution", "epochs"))
    assert {"sparsity", "gamma_sal", "lr", "delta_t", "weight_decay", "milestones", "augment"} <= set(checked)


def test_help_exits_zero():
    check_help_lists(main, ("train", "condense", "bench", "reproduce"))


def test_bad_argument_exits_2():
    check_usage_errors(main, ["reproduce", "--seed", "-1"], ["train", "--sparsity", "1.0"])


def test_modes_and_device_only_where_they_mean_something(tmp_path):
    check_usage_errors(
        main,
        ["condense", str(tmp_path / "c.pt"), "--smoke"],
        ["condense", str(tmp_path / "c.pt"), "--device", "cpu"],
        ["reproduce", "--device", "cpu"],
    )


def test_out_at_a_file_is_refused_before_training(tmp_path):
    check_out_at_a_file_refused(main, ["train", "--epochs", "1"], tmp_path)


def test_train_then_condense_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(
        [
            "train",
            "--data",
            "digits",
            "--method",
            "srigl",
            "--sparsity",
            "0.95",
            "--epochs",
            "3",
            "--delta-t",
            "10",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert rc == 0
    summ = json.loads((out / "train.json").read_text())
    assert summ["invariants_ok"] and summ["accuracy"] > 0.5
    assert all(layer["fan_in"] for layer in summ["layers"])
    assert summ["itop_rate"] > summ["density"] and summ["device"] == "cpu"
    assert summ["updates"] and set(summ["updates"][0]) >= {"step", "itop_rate", "active_neurons"}
    rc = main(["condense", str(out / "checkpoint.pt"), "--out", str(tmp_path / "small"), "--quiet"])
    assert rc == 0
    info = json.loads((tmp_path / "small" / "condense.json").read_text())
    assert info["max_rel_diff_vs_masked"] < 1e-5
    assert len(info["plan"]) == 3 and all(r["variant"] == "auto" for r in info["plan"])
    assert info["accuracy_condensed"] == info["accuracy_masked"]
    assert info["params_condensed"] < info["params_dense"] / 5


def test_user_errors_are_one_line_exit_2(tmp_path, capsys):
    assert main(["condense", str(tmp_path / "missing.pt")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" not in err
    assert (
        main(["train", "--data", str(tmp_path / "nope.npz"), "--epochs", "1", "--out", str(tmp_path / "o")])
        == 2
    )
    bad = tmp_path / "bad.npz"
    np.savez(bad, features=np.zeros((4, 3)))
    assert main(["train", "--data", str(bad), "--epochs", "1", "--out", str(tmp_path / "o")]) == 2
    assert "lacks arrays ['x', 'y']" in capsys.readouterr().err
    assert main(["train", "--sparsity", "0.99", "--epochs", "1", "--out", str(tmp_path / "o")]) == 2
    assert "constant fan-in would be 0" in capsys.readouterr().err
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    assert main(["condense", str(junk)]) == 2


def test_train_on_users_npz(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 12)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    np.savez(tmp_path / "mine.npz", x=x, y=y)
    rc = main(
        [
            "train",
            "--data",
            str(tmp_path / "mine.npz"),
            "--method",
            "rigl",
            "--sparsity",
            "0.5",
            "--epochs",
            "2",
            "--out",
            str(tmp_path / "o"),
            "--quiet",
        ]
    )
    assert rc == 0
    assert json.loads((tmp_path / "o" / "train.json").read_text())["density"] == pytest.approx(0.5, abs=0.01)


def test_bench_smoke(tmp_path, capsys):
    assert main(["bench", "--smoke", "--out", str(tmp_path), "--quiet"]) == 0
    rep = json.loads((tmp_path / "bench.json").read_text())
    assert rep["mode"] == "smoke" and len(rep["results"]) == 3  # gather vs dense, vs CSR; training overhead
    assert any(n.startswith("max |condensed - dense|") for n in rep["notes"])
    assert "speedup" in capsys.readouterr().out and (tmp_path / "bench.md").exists()


def test_bench_smoke_grid_is_exact():
    from iclr24.srigl.bench import SMOKE_GRID
    from iclr24.srigl.bench import time_condensed_layer

    rows = time_condensed_layer(SMOKE_GRID)
    assert rows and rows[0]["max_abs_err"] < 1e-4


class _Payload:
    """A pickle that creates a marker file when unpickled (what a crafted checkpoint could do)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_malicious_checkpoint_is_refused_without_running_it(tmp_path, capsys):
    import torch

    marker = tmp_path / "pwned"
    bad = tmp_path / "evil.pt"
    torch.save({"version": 1, "sparsifier": _Payload(marker)}, bad)
    assert main(["condense", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "Traceback" not in err
    assert not marker.exists()  # refused by weights_only=True before anything ran
    assert not (tmp_path / "o" / "condensed.pt").exists()
    torch.load(bad, weights_only=False)  # the payload is real: an unrestricted load runs it
    assert marker.exists()


def test_bad_data_is_refused_before_training(tmp_path, capsys):
    import torch

    x = np.random.default_rng(0).normal(size=(40, 5)).astype(np.float32)
    y = np.arange(40) % 2
    x[3, 1] = np.nan
    np.savez(tmp_path / "nan.npz", x=x, y=y)
    out = tmp_path / "o"
    assert main(["train", "--data", str(tmp_path / "nan.npz"), "--epochs", "1", "--out", str(out)]) == 2
    assert "1 NaN/inf values" in capsys.readouterr().err and not (out / "checkpoint.pt").exists()
    np.savez(tmp_path / "empty.npz", x=np.zeros((0, 5), np.float32), y=np.zeros(0, np.int64))
    assert main(["train", "--data", str(tmp_path / "empty.npz"), "--epochs", "1", "--out", str(out)]) == 2
    assert "is empty" in capsys.readouterr().err
    assert main(["train", "--lr", "nan", "--epochs", "1", "--out", str(out)]) == 2
    if not torch.cuda.is_available():
        assert main(["train", "--device", "cuda", "--epochs", "1", "--out", str(out)]) == 2
        assert "no CUDA device" in capsys.readouterr().err


def test_every_train_option_has_help(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag, words in (
        ("--method", "sparse training method"),
        ("--batch-size", "training batch size"),
        ("--lr", "SGD learning rate"),
        ("--device", "cpu, cuda"),
        ("--keep-first-layer-dense", "keep_first_layer_dense"),
    ):
        assert flag in text and words in text, flag
