"""Model folders (MLP / SmallCNN / Student save_pretrained and from_pretrained), the step log, your own data as a
Dataset or DataLoader, and exact resume of an interrupted training."""

import json
import math

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import Dataset
from torch.utils.data import TensorDataset

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.runner.testing_workflow import Stopped
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.runner.testing_workflow import stop_at
from iclr24.paperkit.tracking import read_jsonl
from iclr24.task_geometry import MLP
from iclr24.task_geometry import SmallCNN
from iclr24.task_geometry import Student
from iclr24.task_geometry import TrainConfig
from iclr24.task_geometry import train_cnn
from iclr24.task_geometry import train_students
from iclr24.task_geometry import walsh_cube
from iclr24.task_geometry.cli import main

CFG = TrainConfig(width=16, epochs=3)


@pytest.fixture(scope="module")
def task():
    return walsh_cube(3, k=1, a=1.0, n_samples=200, seed=0)


def _images(n=96, side=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 1, side, side, generator=g), torch.randint(0, 10, (n,), generator=g)


def test_students_and_models_round_trip_through_folders(tmp_path, task):
    (st,) = train_students([task], ["relu"], [3], CFG)
    folder = st.save_pretrained(tmp_path / "relu", provenance={"command": "test"})
    assert {p.name for p in folder.iterdir()} == {"model.safetensors", "config.json", "provenance.json"}
    back = Student.from_pretrained(folder)
    assert (back.act, back.seed, back.config, back.losses, back.epochs_run) == (
        st.act, st.seed, st.config, st.losses, st.epochs_run
    )  # fmt: skip
    assert same_weights(back.model, st.model) and not back.model.training
    assert np.array_equal(back.representation(task.means), st.representation(task.means))
    bare = MLP.from_pretrained(folder)
    assert bare.act_name == "relu" and same_weights(bare, st.model)
    fixed = MLP(5, 2, width=8, depth=2, act="tanh", fixed_readout=True)
    again = MLP.from_pretrained(fixed.save_pretrained(tmp_path / "fixed"))
    assert same_weights(again, fixed) and not again.readout.weight.requires_grad
    cnn = SmallCNN(2, act="relu", side=8, width=16)
    assert same_weights(SmallCNN.from_pretrained(cnn.save_pretrained(tmp_path / "cnn")), cnn)


def test_bad_folders_are_one_input_file_error(tmp_path, task):
    with pytest.raises(InputFileError, match="does not exist"):
        Student.from_pretrained(tmp_path / "nowhere")
    bare = MLP(4, 1, width=4).save_pretrained(tmp_path / "bare")  # no student provenance
    with pytest.raises(InputFileError, match="does not describe a trained student"):
        Student.from_pretrained(bare)
    cnn = SmallCNN(1, side=8, width=4).save_pretrained(tmp_path / "cnn")
    with pytest.raises(InputFileError, match="not a .*MLP"):
        MLP.from_pretrained(cnn)


def test_step_log_every_step_changes_nothing(tmp_path, task):
    seen = []
    a = train_students([task, task], ["tanh", "relu"], [0, 1], CFG, callbacks=lambda s, m: seen.append((s, m)),
                       log_dir=tmp_path / "log")  # fmt: skip
    b = train_students([task, task], ["tanh", "relu"], [0, 1], CFG)
    assert all(same_weights(x.model, y.model) and x.losses == y.losses for x, y in zip(a, b, strict=True))
    steps = [s for s, m in seen if "loss" in m]
    assert steps == list(range(1, 3 * math.ceil(200 / 64) + 1))
    first = seen[0][1]
    assert first["loss"] == pytest.approx((first["loss/0"] + first["loss/1"]) / 2)
    rows = read_jsonl(tmp_path / "log" / "metrics.jsonl")
    assert len(rows) == len(seen) + 1 and rows[-1]["event"] == "end"
    assert [r["epoch_loss"] for r in rows if "epoch_loss" in r] == pytest.approx(
        [(x + y) / 2 for x, y in zip(a[0].losses, a[1].losses, strict=True)]
    )


class _Pairs(Dataset):
    def __init__(self, X, Y):
        self.X, self.Y = X, Y

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        return self.X[i], self.Y[i]


def test_a_users_dataset_or_loader_trains_like_the_tensors(task):
    (ref,) = train_students([task], ["tanh"], [0], CFG)
    for data in (DataLoader(TensorDataset(task.X, task.Y), batch_size=37), _Pairs(task.X, task.Y)):
        (st,) = train_students([data], ["tanh"], [0], CFG)
        assert same_weights(st.model, ref.model) and st.losses == ref.losses, type(data).__name__
    for bad, match in (
        (DataLoader(TensorDataset(task.X, task.Y, task.Y), batch_size=8), "3 field"),
        (DataLoader(TensorDataset(task.X, task.Y * 2), batch_size=8), "0/1"),
    ):
        with pytest.raises(InputError, match=match):
            train_students([bad], ["tanh"], [0], CFG)
    x, y = _images()
    T = np.stack([np.arange(10) % 2], 1).astype(float)
    kw = dict(side=8, epochs=2, batch_size=32)
    ref = train_cnn(x, y, T, **kw)
    mine = train_cnn(DataLoader(TensorDataset(x, y), batch_size=10), None, T, **kw)
    assert same_weights(mine, ref)
    with pytest.raises(InputError, match="labels=None"):
        train_cnn(TensorDataset(x, y), y, T, **kw)
    with pytest.raises(InputError, match="targets"):
        train_cnn(x, y, **kw)


def test_interrupted_students_resumed_equal_the_uninterrupted_run(tmp_path, task):
    cfg = TrainConfig(width=16, epochs=4, stop_tol=1e-9, record_every=3)
    tasks, acts, seeds = [task, task], ["tanh", "relu"], [0, 1]
    ref = train_students(tasks, acts, seeds, cfg)
    with pytest.raises(Stopped):
        train_students(tasks, acts, seeds, cfg, checkpoint=tmp_path / "s.pt", callbacks=stop_at(9))  # epoch 3
    torch.manual_seed(99)
    steps = []
    got = train_students(tasks, acts, seeds, cfg, checkpoint=tmp_path / "s.pt", resume=True,
                         callbacks=lambda s, m: steps.append(s))  # fmt: skip
    assert steps[0] == 9  # continued after epoch 2 (4 steps an epoch)
    for x, y in zip(got, ref, strict=True):
        assert same_weights(x.model, y.model) and x.losses == y.losses and x.epochs_run == y.epochs_run
        assert [s for s, _, _ in x.snapshots] == [s for s, _, _ in y.snapshots]
        assert all(np.array_equal(a[1], b[1]) for a, b in zip(x.snapshots, y.snapshots, strict=True))
    with pytest.raises(InputError, match="seeds"):
        train_students(tasks, acts, [0, 2], cfg, checkpoint=tmp_path / "s.pt", resume=True)
    with pytest.raises(InputError, match="checkpoint="):
        train_students(tasks, acts, seeds, cfg, resume=True)
    with pytest.raises(InputFileError, match="folder"):
        train_students(tasks, acts, seeds, cfg, checkpoint=tmp_path)


def test_interrupted_cnn_resumed_equals_the_uninterrupted_run(tmp_path):
    x, y = _images()
    T = np.stack([np.arange(10) % 2, np.arange(10) >= 5], 1).astype(float)
    kw = dict(side=8, epochs=3, batch_size=32, seed=4)
    ref = train_cnn(x, y, T, **kw)
    with pytest.raises(Stopped):
        train_cnn(x, y, T, **kw, checkpoint=tmp_path / "c.pt", callbacks=stop_at(5))  # in epoch 2
    got = train_cnn(x, y, T, **kw, checkpoint=tmp_path / "c.pt", resume=True)
    assert same_weights(got, ref)
    with pytest.raises(InputError, match="lr"):
        train_cnn(x, y, T, **{**kw, "epochs": 3}, lr=1e-2, checkpoint=tmp_path / "c.pt", resume=True)


def test_cli_run_saves_students_logs_and_resumes(tmp_path, capsys):
    out = tmp_path / "rk"
    args = ["run", "--task", "random", "--P", "8", "--k", "2", "--alignment", "0.4", "--act", "tanh", "relu",
            "--seeds", "1", "--epochs", "2", "--n-samples", "64", "--width", "16", "--out", str(out), "--quiet"]  # fmt: skip
    assert main([*args, "--log-dir", str(tmp_path / "log")]) == 0
    names = sorted(p.name for p in (out / "models").iterdir())
    assert names == ["relu-seed0", "tanh-seed0"]
    st = Student.from_pretrained(out / "models" / "tanh-seed0")
    assert st.act == "tanh" and st.epochs_run == 2 and st.config.width == 16
    prov = json.loads((out / "models" / "tanh-seed0" / "provenance.json").read_text())
    assert prov["command"].startswith("task-geometry run --task random") and prov["steps"] == 2
    assert prov["task"]["kind"] == "random_kernel" and prov["cpu_seconds_ensemble"] > 0
    assert sum("loss" in r for r in read_jsonl(tmp_path / "log" / "metrics.jsonl")) == 2
    rows = json.loads((out / "results.json").read_text())["rows"]
    capsys.readouterr()
    assert main(args) == 2 and "--overwrite" in capsys.readouterr().err
    assert main([*args, "--resume"]) == 0  # nothing left to train: the same students, the same geometry
    assert json.loads((out / "results.json").read_text())["rows"] == rows
    assert same_weights(Student.from_pretrained(out / "models" / "tanh-seed0").model, st.model)
    assert main([*args, "--resume", "--width", "8"]) == 2
