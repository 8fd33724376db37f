"""Model folders (save_pretrained / from_pretrained), step logging, your own DataLoader, exact resume of source
training and adaptation, and the CLI's folders."""

import copy
import json

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader
from torch.utils.data import TensorDataset

from iclr24.paperkit import load_pretrained
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.runner.testing_workflow import Stopped
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.runner.testing_workflow import stop_at
from iclr24.paperkit.tracking import read_jsonl
from iclr24.sfda2 import SFDA2Config
from iclr24.sfda2 import SFDAModel
from iclr24.sfda2 import SourceConfig
from iclr24.sfda2 import adapt
from iclr24.sfda2 import digits_domains
from iclr24.sfda2 import digits_model
from iclr24.sfda2 import pointnet_model
from iclr24.sfda2 import split_timm
from iclr24.sfda2 import train_source
from iclr24.sfda2.cli import load_source
from iclr24.sfda2.cli import main
from iclr24.sfda2.cli import save_checkpoint
from iclr24.sfda2.model import Bottleneck
from iclr24.sfda2.model import weight_norm_classifier

TINY = SFDA2Config(lr=1e-2, alpha_2=1.0, max_epoch=3, batch_size=16, interval=3)
SRC = SourceConfig(lr=1e-2, epochs=4, batch_size=16)


def _digits(n=96):
    d = digits_domains(seed=0)
    return d.source_x[:n], d.source_y[:n], d.target_x[:n], d.target_y[:n]


@pytest.mark.parametrize(
    "build, x",
    [
        (lambda: digits_model(num_classes=10, bottleneck_dim=16, width=8), torch.rand(4, 1, 8, 8)),
        (lambda: pointnet_model(num_classes=4, bottleneck_dim=8, width=8), torch.rand(4, 3, 20)),
        (lambda: split_timm("resnet18", num_classes=5, bottleneck_dim=8), torch.rand(2, 3, 32, 32)),
    ],
)
def test_models_round_trip_through_a_model_folder(tmp_path, build, x):
    torch.manual_seed(0)
    model = build()
    model.class_names = [f"c{i}" for i in range(model.num_classes)]
    with torch.no_grad():  # move the BN statistics off their init, so the buffers are checked too
        model.train()(x)
    model.save_pretrained(tmp_path / "m", provenance={"steps": 0})
    back = SFDAModel.from_pretrained(tmp_path / "m")
    assert same_weights(model, back) and not back.training and back.class_names == model.class_names
    with torch.no_grad():
        assert torch.equal(model.eval()(x), back(x))
    assert same_weights(model, load_pretrained(tmp_path / "m"))


def test_bad_models_and_folders_are_clear_errors(tmp_path):
    own = SFDAModel(nn.Sequential(nn.Linear(5, 8)), Bottleneck(8, 4), weight_norm_classifier(4, 3))
    with pytest.raises(InputError, match="your own modules"):
        own.save_pretrained(tmp_path / "own")
    assert not (tmp_path / "own").exists()
    with pytest.raises(InputError, match="arch must be"):
        SFDAModel(arch="vgg")
    with pytest.raises(InputError, match="not both"):
        SFDAModel(nn.Linear(2, 2), arch="digits")
    with pytest.raises(InputError, match="give arch"):
        SFDAModel(nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), width=3)
    with pytest.raises(InputError, match="class_names"):
        SFDAModel(arch="digits", num_classes=3, class_names=["a", "b"])
    with pytest.raises(InputError, match="arch='digits'"):
        SFDAModel(arch="digits", depth=3)
    with pytest.raises(InputFileError, match="does not exist"):
        SFDAModel.from_pretrained(tmp_path / "missing")
    digits_model(num_classes=3, bottleneck_dim=4, width=4).save_pretrained(tmp_path / "m")
    with pytest.raises(InputFileError, match="class_names"):
        load_source(tmp_path / "m")  # a folder the CLI cannot use: it names no classes


def test_train_source_from_a_dataset_or_loader_equals_the_tensor_path():
    x, y, _, _ = _digits()
    torch.manual_seed(0)
    init = digits_model(bottleneck_dim=16, width=8)
    ref = train_source(copy.deepcopy(init), x, y, SRC, seed=1)
    for data in (TensorDataset(x, y), DataLoader(TensorDataset(x, y), batch_size=5, shuffle=True)):
        assert same_weights(ref, train_source(copy.deepcopy(init), data, config=SRC, seed=1))
    pairs = [(x[i], int(y[i])) for i in range(len(y))]  # a plain list Dataset of (x, label) items
    assert same_weights(ref, train_source(copy.deepcopy(init), pairs, config=SRC, seed=1))


def test_train_source_bad_user_data_is_one_input_error():
    x, y, _, _ = _digits()
    m = digits_model(bottleneck_dim=16, width=8)
    with pytest.raises(InputError, match="labels y are missing"):
        train_source(m, x, config=SRC)
    with pytest.raises(InputError, match=r"\(x, y\) pairs"):
        train_source(m, [x[i] for i in range(10)], config=SRC)
    with pytest.raises(InputError, match="class index"):
        train_source(m, [(x[i], 0.5) for i in range(10)], config=SRC)
    with pytest.raises(InputError, match="must lie in"):
        train_source(m, TensorDataset(x, y + 10), config=SRC)
    with pytest.raises(InputError, match="resume=True needs checkpoint"):
        train_source(m, x, y, SRC, resume=True)


def test_train_source_logs_each_iteration_and_changes_no_weight(tmp_path):
    x, y, _, _ = _digits()
    torch.manual_seed(0)
    init = digits_model(bottleneck_dim=16, width=8)
    ref = train_source(copy.deepcopy(init), x, y, SRC, seed=1)
    rows = []
    got = train_source(copy.deepcopy(init), x, y, SRC, seed=1, callbacks=lambda s, m: rows.append((s, m)),
                       log_dir=tmp_path / "log")  # fmt: skip
    assert same_weights(ref, got)
    assert [s for s, _ in rows] == list(range(4 * 6)) and [m["epoch"] for _, m in rows][::6] == [0, 1, 2, 3]
    assert all(m["loss"] > 0 and m["lr"] > 0 for _, m in rows)
    assert len(read_jsonl(tmp_path / "log" / "metrics.jsonl")) == 24 + 1


def test_train_source_resumes_exactly(tmp_path):
    x, y, _, _ = _digits()
    torch.manual_seed(0)
    init = digits_model(bottleneck_dim=16, width=8)
    ref = train_source(copy.deepcopy(init), x, y, SRC, seed=1)
    state = tmp_path / "state.pt"
    with pytest.raises(Stopped):  # interrupted in the third epoch: the state holds two
        train_source(copy.deepcopy(init), x, y, SRC, seed=1, checkpoint=state, callbacks=stop_at(15))
    torch.manual_seed(123)  # another process: other global RNG state, other weights
    resumed = train_source(digits_model(bottleneck_dim=16, width=8), x, y, SRC, seed=1, checkpoint=state,
                           resume=True)  # fmt: skip
    assert resumed.resumed_from_epoch_ == 2 and same_weights(ref, resumed)
    with pytest.raises(InputError, match="the saved run has"):
        train_source(copy.deepcopy(init), x, y, SourceConfig(lr=1e-2, epochs=5, batch_size=16), seed=1,
                     checkpoint=state, resume=True)  # fmt: skip


@pytest.mark.parametrize("method", ["sfda2", "shot-im"])
def test_adapt_resumes_exactly(tmp_path, method):
    x, y, xt, yt = _digits()
    torch.manual_seed(0)
    source = train_source(digits_model(bottleneck_dim=16, width=8), x, y, SRC, seed=1)
    cfg = SFDA2Config(**{**TINY.__dict__, "method": method})
    ref = adapt(copy.deepcopy(source), xt, cfg, labels=yt, seed=2)
    state = tmp_path / "adapt.pt"
    with pytest.raises(Stopped):  # interrupted in the second pass: the state holds the first (6 iterations)
        adapt(copy.deepcopy(source), xt, cfg, labels=yt, seed=2, checkpoint=state, callbacks=stop_at(9))
    torch.manual_seed(7)
    got = adapt(copy.deepcopy(source), xt, cfg, labels=yt, seed=2, checkpoint=state, resume=True)
    assert got.history == ref.history and got.evals == ref.evals and same_weights(ref.model, got.model)
    with pytest.raises(InputError, match="the saved run has"):
        adapt(copy.deepcopy(source), xt, SFDA2Config(**{**cfg.__dict__, "K": 4}), labels=yt, seed=2,
              checkpoint=state, resume=True)  # fmt: skip


def test_adapt_logs_steps_and_evaluations(tmp_path):
    x, y, xt, yt = _digits()
    torch.manual_seed(0)
    source = train_source(digits_model(bottleneck_dim=16, width=8), x, y, SRC, seed=1)
    ref = adapt(copy.deepcopy(source), xt, TINY, labels=yt, seed=2)
    rows, old = [], []
    got = adapt(copy.deepcopy(source), xt, TINY, labels=yt, seed=2, log_dir=tmp_path / "log",
                callbacks=lambda s, m: rows.append((s, m)), callback=lambda s, m: old.append(s))  # fmt: skip
    assert got.history == ref.history and got.evals == ref.evals
    assert [s for s, _ in rows] == list(range(19)) and old == list(range(19))  # step 0: the source model
    assert rows[0][1]["acc"] == ref.evals[0]["acc"] and "total" in rows[1][1]
    assert [m["acc"] for _, m in rows if "acc" in m] == [e["acc"] for e in ref.evals]
    assert read_jsonl(tmp_path / "log" / "metrics.jsonl")[-1]["final_acc"] == ref.final_acc


def test_cli_folders_resume_and_the_old_checkpoint_file(tmp_path, capsys):
    src = tmp_path / "src"
    train = ["train-source", "--epochs", "2", "--out", str(src), "--quiet"]
    assert main([*train, "--log-dir", str(tmp_path / "logs")]) == 0
    prov = json.loads((src / "source" / "provenance.json").read_text())
    assert prov["command"] == "sfda2 " + " ".join([*train, "--log-dir", str(tmp_path / "logs")])
    assert prov["seed"] == 0 and prov["steps"] == 2 * 15 and prov["epochs"] == 2 and prov["cpu_seconds"] > 0
    assert [r["step"] for r in prov["losses"]][:3] == [0, 1, 2] and prov["resumed_from_epoch"] == 0
    assert len(read_jsonl(tmp_path / "logs" / "metrics.jsonl")) == 30 + 1
    assert (src / "train_state.pt").is_file()
    # --resume of a finished run trains nothing more and writes the same model; another recipe is refused
    model = SFDAModel.from_pretrained(src / "source")
    assert main([*train, "--resume"]) == 0
    assert same_weights(model, SFDAModel.from_pretrained(src / "source"))
    capsys.readouterr()
    assert main(["train-source", "--epochs", "3", "--out", str(src), "--quiet", "--resume"]) == 2
    assert "the saved run has" in capsys.readouterr().err
    # adapt reads the folder and the old checkpoint file alike
    old = save_checkpoint(tmp_path / "source.pt", model, {"arch": "digits", "num_classes": 10, "bottleneck_dim": 64,
                          "class_names": list("0123456789"), "size": 224})  # fmt: skip
    runs = {}
    for name, ck in (("folder", src / "source"), ("file", old)):
        out = tmp_path / name
        argv = ["adapt", "--source-ckpt", str(ck), "--epochs", "1", "--out", str(out), "--quiet"]
        assert main([*argv, "--log-dir", str(out / "logs")]) == 0
        runs[name] = json.loads((out / "summary.json").read_text())
        assert SFDAModel.from_pretrained(out / "target").class_names == list("0123456789")
    assert runs["folder"]["accuracy"] == runs["file"]["accuracy"]
    assert len(read_jsonl(tmp_path / "folder" / "logs" / "metrics.jsonl")) == 15 + 1 + 1  # step 0, 15, end
