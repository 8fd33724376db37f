import json
import pickle

import numpy as np
import pytest

from iclr24.opposing_signals.cli import app
from iclr24.opposing_signals.cli import main
from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_contract


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path, app=app)


@pytest.mark.slow  # a 12-step run end to end, then the plots (imports matplotlib)
def test_run_then_plot(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["run", "--steps", "12", "--sharpness-every", "6", "--k", "8", "--out", str(out), "--quiet"])
    assert rc == 0
    res = json.loads((out / "results.json").read_text())
    assert len(res["loss"]) == 13 and res["sharpness_steps"] == [0, 6, 12]
    assert 0 <= res["precision"] <= 1 and -1 <= res["corr"] <= 1
    assert {"group A", "group B", "all"} <= set(res["curves"])
    rc = main(["plot", str(out / "results.json"), "--out", str(tmp_path / "plots"), "--quiet"])
    assert rc == 0
    assert (tmp_path / "plots" / "group_losses.png").stat().st_size > 0
    assert (tmp_path / "plots" / "sharpness.png").stat().st_size > 0


def test_run_writes_the_model_folder_and_the_log_dir(tmp_path):
    import torch

    from iclr24.opposing_signals import MLP
    from iclr24.opposing_signals import make_opposing_digits
    from iclr24.paperkit.tracking import read_jsonl

    out = tmp_path / "run"
    args = ["run", "--steps", "4", "--sharpness-every", "2", "--k", "8", "--out", str(out), "--quiet",
            "--log-dir", str(tmp_path / "logs")]  # fmt: skip
    assert main(args) == 0
    res = json.loads((out / "results.json").read_text())
    prov = json.loads((out / "model" / "provenance.json").read_text())
    assert (
        prov["command"] == "opposing-signals " + " ".join(args) and prov["steps"] == 4 and prov["seed"] == 0
    )
    assert prov["final_loss"] == res["final_loss"] and prov["cpu_seconds"] > 0
    model = MLP.from_pretrained(out / "model")
    d = make_opposing_digits(alpha=10.0, seed=0)
    with torch.no_grad():
        acc = float((model(d.x_train).argmax(1) == d.y_train).float().mean())
    assert acc == pytest.approx(res["accuracy"][-1])  # the saved weights are the trained ones (theta_4)
    rows = read_jsonl(tmp_path / "logs" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4, -1]
    assert (
        [r["loss"] for r in rows[:-1]] == res["loss"]
        and "sharpness" in rows[2]
        and "sharpness" not in rows[1]
    )


def test_cli_user_errors(tmp_path, capsys):
    assert main(["plot", str(tmp_path / "missing.json"), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "results file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["plot", str(bad), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "is not a results.json" in capsys.readouterr().err
    assert main(["run", "--optimizer", "sgd", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "needs --batch-size" in capsys.readouterr().err
    assert main(["run", "--dataset", "cifar10", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "needs --cifar-path" in capsys.readouterr().err
    rc = main(
        [
            "run",
            "--dataset",
            "cifar10",
            "--cifar-path",
            str(tmp_path / "nope"),
            "--out",
            str(tmp_path / "o"),
            "--quiet",
        ]
    )
    assert rc == 2 and "CIFAR-10 folder not found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["run", "--lr", "-1", "--out", str(tmp_path / "o"), "--quiet"])
    assert e.value.code == 2 and "expected a positive number" in capsys.readouterr().err
    assert not (tmp_path / "o" / "results.json").exists()


def _results(**over):
    res = {
        "config": {"optimizer": "gd", "lr": 0.3},
        "curves": {"all": [1.0, 0.5, 0.25], "group A": [2.0, 1.0, 0.5]},
        "sharpness": [1.0, 2.0],
        "sharpness_steps": [0, 2],
        "dataset": "digits",
    }
    res.update(over)
    return res


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"config": {"optimizer": "gd", "lr": 0}}, "config.lr must be a positive finite number"),
        ({"config": {"optimizer": "gd", "lr": None}}, "config.lr must be a positive finite number"),
        ({"config": {"lr": 0.3}}, "config.optimizer must be a string"),
        ({"config": None}, "'config' must be an object"),
        ({"curves": {}}, "'curves' must be a non-empty object"),
        ({"curves": {"all": [1.0, "x"]}}, "curve 'all' must be a non-empty list of finite numbers"),
        ({"curves": {"all": []}}, "curve 'all' must be a non-empty list"),
        ({"sharpness_steps": [0]}, "differ in length"),
        ({"sharpness_steps": None}, "'sharpness_steps' must be a non-empty list of integers"),
        ({"sharpness": [1.0, float("nan")]}, "'sharpness' must be a non-empty list of finite numbers"),
    ],
)
def test_plot_checks_the_whole_file_before_writing_anything(tmp_path, capsys, edit, message):
    # a results.json with lr 0 used to write group_losses.png, then die in 2/lr with a ZeroDivisionError
    src = tmp_path / "results.json"
    src.write_text(json.dumps(_results(**edit)))
    out = tmp_path / "plots"
    assert main(["plot", str(src), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()  # no figure, and no empty --out folder left behind


@pytest.mark.parametrize("drop", ["config", "curves"])
def test_plot_on_a_partial_json(tmp_path, capsys, drop):
    res = _results()
    del res[drop]
    src = tmp_path / "results.json"
    src.write_text(json.dumps(res))
    assert main(["plot", str(src), "--out", str(tmp_path / "p"), "--quiet"]) == 2
    assert f"no '{drop}'" in capsys.readouterr().err
    src.write_text(json.dumps(_results())[:40])  # cut short while being written
    assert main(["plot", str(src), "--out", str(tmp_path / "p"), "--quiet"]) == 2
    assert "is not a results.json" in capsys.readouterr().err
    src.write_text("[1, 2]")
    assert main(["plot", str(src), "--out", str(tmp_path / "p"), "--quiet"]) == 2
    assert "not a JSON object" in capsys.readouterr().err
    assert main(["plot", str(tmp_path), "--out", str(tmp_path / "p"), "--quiet"]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_plot_has_no_seed_flag(capsys):
    with pytest.raises(SystemExit) as e:
        main(["plot", "x.json", "--seed", "3"])
    assert e.value.code == 2 and "unrecognized arguments: --seed" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--optimizer", "gd", "--batch-size", "7"], "--batch-size is the SGD minibatch"),
        (["--optimizer", "adam", "--batch-size", "7"], "--batch-size is the SGD minibatch"),
        (["--optimizer", "adam", "--momentum", "0.9"], "--momentum is for gd/sgd"),
    ],
)
def test_run_refuses_options_the_optimizer_would_ignore(tmp_path, capsys, argv, message):
    # `run --optimizer gd --batch-size 7` used the full batch but recorded batch_size: 7
    out = tmp_path / "run"
    assert main(["run", *argv, "--steps", "2", "--out", str(out), "--quiet"]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()  # no results.json, and no empty --out folder left behind


def test_real_data_loaders_on_tiny_files(tmp_path):
    import gzip

    from iclr24.opposing_signals.data import cifar10_subset
    from iclr24.opposing_signals.data import mnist_subset

    rng = np.random.default_rng(0)
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8), "labels": [0, 1, 2, 3]}
        (folder / name).write_bytes(pickle.dumps(batch))
    x, y = cifar10_subset(folder, n=6, seed=0)
    assert x.shape == (6, 3, 32, 32) and float(x.max()) <= 1.0 and y.dtype.is_floating_point is False
    with pytest.raises(ValueError, match="n must be an int in"):
        cifar10_subset(folder, n=100)
    (folder / "test_batch").unlink()
    with pytest.raises(FileNotFoundError, match="test_batch"):
        cifar10_subset(folder, n=2)

    mdir = tmp_path / "data"
    split = (rng.random((5, 784), dtype=np.float32), np.arange(5) % 10)
    from iclr24.paperkit.data.folder import data_path

    p = data_path("mnist", mdir)
    p.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(p, "wb") as fh:
        pickle.dump((split, split, split), fh)
    x, y = mnist_subset(mdir, n=3)
    assert x.shape == (3, 784) and y.tolist() == sorted(y.tolist())


def test_cli_defaults_are_the_configs():
    from iclr24.opposing_signals.cli import app
    from iclr24.opposing_signals.data import make_opposing_digits
    from iclr24.opposing_signals.data import mnist_subset
    from iclr24.opposing_signals.experiments import ExperimentConfig

    check_app_defaults(app, {"run": (ExperimentConfig, make_opposing_digits, mnist_subset)})
