"""Train -> model folder -> from_pretrained -> evaluate / condense, your own Dataset/DataLoader, per-step logging,
exact resume, and what condense(variant="auto") says about its kernel."""

import json
import logging

import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import TensorDataset

import iclr24.srigl.convert as convert_mod
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.runner.testing_workflow import Stopped
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.runner.testing_workflow import stop_at
from iclr24.srigl import SparseModel
from iclr24.srigl import Split
from iclr24.srigl import TrainConfig
from iclr24.srigl import condense
from iclr24.srigl import digits_split
from iclr24.srigl import evaluate
from iclr24.srigl import train
from iclr24.srigl.cli import main

CFG = TrainConfig(epochs=3, hidden=(32, 32), delta_t=5, sparsity=0.9)


@pytest.fixture(scope="module")
def data():
    return digits_split()


@pytest.mark.parametrize(
    "cfg",
    [CFG, CFG.with_(model="cnn", augment=True, epochs=2, distribution="erk")],
    ids=["mlp", "cnn-augment"],
)
def test_interrupted_and_resumed_run_equals_the_uninterrupted_one(tmp_path, data, cfg):
    if cfg.model == "cnn":  # image inputs, and the augmentation generator in the state too
        data = digits_split(flatten=False)
        cfg = cfg.with_(hidden=(16,))
        data = Split(data.x_train.repeat(1, 1, 2, 2)[:400], data.y_train[:400], data.x_test.repeat(1, 1, 2, 2),
                     data.y_test, 10, "digits16")  # fmt: skip
    full = train(cfg, data)
    state = tmp_path / "state.pt"
    steps_per_epoch = -(-len(data.y_train) // cfg.batch_size)

    stop = stop_at(steps_per_epoch + 3)  # inside epoch 2

    with pytest.raises(Stopped):
        train(cfg, data, checkpoint=state, callbacks=stop)
    resumed = train(cfg, data, checkpoint=state, resume=True)
    assert resumed.resumed_from_epoch == 1 and full.resumed_from_epoch is None
    assert (
        resumed.accuracy == full.accuracy
        and resumed.log == full.log
        and same_weights(resumed.model, full.model)
    )
    for a, b in zip(resumed.sparsifier.layers, full.sparsifier.layers):
        assert torch.equal(a.mask, b.mask) and torch.equal(a.ever_active, b.ever_active)


def test_resume_refuses_a_state_of_other_settings(tmp_path, data):
    state = tmp_path / "state.pt"
    train(CFG.with_(epochs=1), data, checkpoint=state)
    with pytest.raises(InputError, match="epochs"):
        train(CFG, data, checkpoint=state, resume=True)
    with pytest.raises(InputFileError, match="folder"):
        train(CFG, data, checkpoint=tmp_path)


def test_model_folder_round_trip_evaluates_and_condenses_as_trained(tmp_path, data):
    r = train(CFG, data, log_dir=tmp_path / "logs")
    r.save_pretrained(tmp_path / "m", provenance={"command": "test"})
    model = SparseModel.from_pretrained(tmp_path / "m")
    assert same_weights(model.net, r.model) and model.density() == pytest.approx(r.sparsifier.density())
    assert evaluate(model, data.x_test, data.y_test) == r.accuracy
    masks = model.mask_dict()
    assert all(torch.equal(masks[layer.name], layer.mask) for layer in r.sparsifier.layers)
    fast, ref = condense(model), condense(r.model, r.sparsifier)
    with torch.no_grad():
        assert torch.equal(fast(data.x_test), ref(data.x_test))
    prov = json.loads((tmp_path / "m" / "provenance.json").read_text())
    assert prov["steps"] == r.steps and prov["test_accuracy"] == r.accuracy and prov["command"] == "test"
    rows = [json.loads(line) for line in (tmp_path / "logs" / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows if "lr" in row] == list(range(1, r.steps + 1))
    assert (
        sum("density" in row for row in rows[:-1]) == len(r.log) and rows[-1]["test_accuracy"] == r.accuracy
    )


def test_your_own_tensors_datasets_and_loaders_give_the_same_run(data):
    ref = train(CFG, data)
    train_ds = TensorDataset(data.x_train, data.y_train)
    pairs = [
        ((data.x_train, data.y_train), (data.x_test, data.y_test)),
        (train_ds, DataLoader(TensorDataset(data.x_test, data.y_test), batch_size=50)),
        (DataLoader(train_ds, batch_size=64), TensorDataset(data.x_test, data.y_test)),
    ]
    for pair in pairs:
        r = train(CFG, pair)
        assert r.accuracy == ref.accuracy and same_weights(r.model, ref.model) and r.log == ref.log


def test_your_own_data_of_the_wrong_kind_is_one_clear_error(data):
    x, y = data.x_train, data.y_train
    test = (data.x_test, data.y_test)
    with pytest.raises(InputError, match="field"):
        train(CFG, (TensorDataset(x), test))
    with pytest.raises(InputError, match="integer class indices"):
        train(CFG, ((x, y.float() + 0.5), test))
    with pytest.raises(InputError, match="different lengths"):
        train(CFG, ((x, y[:10]), test))
    with pytest.raises(InputError, match="empty"):
        train(CFG, (DataLoader(TensorDataset(x[:0], y[:0]), batch_size=4), test))
    with pytest.raises(InputError, match="NaN"):
        train(CFG, ((x * float("nan"), y), test))


def test_a_folder_that_is_not_a_sparse_model_is_refused(tmp_path):
    with pytest.raises(InputFileError, match="config.json"):
        SparseModel.from_pretrained(tmp_path)
    with pytest.raises(InputError, match="not parameters"):
        SparseModel(masked=["nope.weight"])


def test_auto_says_once_which_kernel_runs_and_why(monkeypatch, caplog, data):
    monkeypatch.setattr(convert_mod, "_auto_logged", False)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    with caplog.at_level(logging.INFO, logger="iclr24.srigl"):
        condense(model)
        condense(model)
        condense(model, variant="gather")
    records = [r for r in caplog.records if r.name == "iclr24.srigl" and "variant='auto'" in r.getMessage()]
    assert len(records) == 1  # once per process
    kernel, why = convert_mod.auto_kernel_report()
    msg = records[0].getMessage()
    assert why in msg and "crossovers" in msg and "2 dense" in msg  # dense weights: above every crossover
    monkeypatch.setenv("SRIGL_NO_KERNEL", "1")
    assert "disabled by SRIGL_NO_KERNEL" in convert_mod.auto_kernel_report()[1]
    monkeypatch.setenv("SRIGL_NO_NUMBA", "1")
    assert convert_mod.auto_kernel_report()[0] == "gather"


def test_build_kernel_refuses_clearly_where_it_cannot_build(monkeypatch, capsys):
    monkeypatch.setenv("SRIGL_NO_KERNEL", "1")
    assert main(["build-kernel"]) == 2
    assert "cannot be built here: disabled by SRIGL_NO_KERNEL" in capsys.readouterr().err
    monkeypatch.delenv("SRIGL_NO_KERNEL")
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    import iclr24.srigl.kernels as kernels

    if kernels.kernel_status() != "built":
        assert main(["build-kernel"]) == 2
        assert "no C++ compiler" in capsys.readouterr().err


def test_cli_train_writes_the_folder_logs_resumes_and_condense_reads_it(tmp_path, capsys):
    out = tmp_path / "run"
    flags = ["--data", "digits", "--epochs", "2", "--delta-t", "10", "--out", str(out), "--quiet"]
    assert main(["train", *flags, "--log-dir", str(tmp_path / "logs")]) == 0
    assert "SparseModel.from_pretrained" in capsys.readouterr().out
    prov = json.loads((out / "model" / "provenance.json").read_text())
    assert prov["command"].startswith("srigl train --data digits") and prov["data"] == "digits"
    assert (out / "train_state.pt").is_file() and (tmp_path / "logs" / "metrics.jsonl").is_file()
    before = json.loads((out / "train.json").read_text())["accuracy"]
    assert main(["train", *flags, "--resume"]) == 0  # complete: nothing left, the same model
    assert json.loads((out / "train.json").read_text())["accuracy"] == before
    capsys.readouterr()
    for ck in (out / "model", out / "checkpoint.pt"):
        assert main(["condense", str(ck), "--out", str(tmp_path / ck.name), "--quiet"]) == 0
    a, b = (json.loads((tmp_path / n / "condense.json").read_text()) for n in ("model", "checkpoint.pt"))
    assert a["accuracy_condensed"] == b["accuracy_condensed"] == before
    assert main(["train", "--data", "digits", "--out", str(tmp_path / "fresh"), "--resume"]) == 2
    assert "nothing to resume" in capsys.readouterr().err
