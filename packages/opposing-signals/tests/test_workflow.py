"""The trained MLP as a model folder, your own Dataset or DataLoader, and the step callbacks (paperkit's StepLog,
with the original ``f(t, model, history)`` hook kept)."""

import json

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader
from torch.utils.data import TensorDataset

from iclr24.opposing_signals import MLP
from iclr24.opposing_signals import LossTracker
from iclr24.opposing_signals import make_mlp
from iclr24.opposing_signals import make_opposing_digits
from iclr24.opposing_signals import train
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.pretrained import load_pretrained
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.tracking import read_jsonl

FAST = dict(optimizer="gd", lr=0.3, steps=8, sharpness_every=4, sharpness_iters=5)


@pytest.fixture(scope="module")
def digits():
    d = make_opposing_digits(alpha=10.0, seed=0)
    return d.x_train[:200], d.y_train[:200]


def test_a_users_dataset_or_loader_trains_the_same_model(digits):
    x, y = digits
    ref_model = make_mlp(64, 16, 2, 10, seed=0)
    ref = train(ref_model, x, y, **FAST)
    for data in (TensorDataset(x, y), DataLoader(TensorDataset(x, y), batch_size=33), (x, y)):
        model = make_mlp(64, 16, 2, 10, seed=0)
        hist = train(model, data, **FAST)
        assert hist.loss == ref.loss and hist.sharpness == ref.sharpness
        assert same_weights(model, ref_model)
    sgd = dict(FAST, optimizer="sgd", batch_size=32)
    a, b = make_mlp(64, 16, 2, 10, seed=1), make_mlp(64, 16, 2, 10, seed=1)
    assert train(a, x, y, **sgd).loss == train(b, DataLoader(TensorDataset(x, y), batch_size=50), **sgd).loss


def test_a_wrong_loader_is_one_input_error(digits):
    x, y = digits
    model = make_mlp(64, 16, 2, 10, seed=0)
    with pytest.raises(InputError, match="2"):
        train(model, TensorDataset(x), **FAST)  # no labels
    with pytest.raises(InputError, match="integer"):
        train(model, TensorDataset(x, y.float()), **FAST)
    with pytest.raises(InputError, match="without y"):
        train(model, TensorDataset(x, y), y, **FAST)
    with pytest.raises(InputError, match="no y"):
        train(model, x, **FAST)
    with pytest.raises(InputError, match="empty"):
        train(model, TensorDataset(x[:0], y[:0]), **FAST)
    with pytest.raises(InputError, match="NaN"):
        train(model, TensorDataset(x * float("nan"), y), **FAST)


def test_the_original_callbacks_and_step_log_callbacks_see_every_step(digits, tmp_path):
    x, y = digits
    old, new, ended = [], [], []

    def hook(t, model, history):  # the package's original callback: (t, model, history)
        old.append((t, history.loss[-1], isinstance(model, nn.Module)))

    class Obj:
        def on_step(self, step, metrics):
            new.append((step, dict(metrics)))

        def on_end(self, summary):
            ended.append(summary)

    model = make_mlp(64, 16, 2, 10, seed=0)
    hist = train(
        model, x, y, callbacks=[hook, Obj(), lambda step, metrics: None], log_dir=tmp_path / "logs", **FAST
    )
    assert [t for t, _, _ in old] == list(range(9)) and [lv for _, lv, _ in old] == hist.loss and old[0][2]
    assert [m["loss"] for _, m in new] == hist.loss and [m["accuracy"] for _, m in new] == hist.accuracy
    assert [s for s, m in new if "sharpness" in m] == hist.sharpness_steps == [0, 4, 8]
    assert ended[0]["final_loss"] == hist.loss[-1]
    rows = read_jsonl(tmp_path / "logs" / "metrics.jsonl")
    assert [r["loss"] for r in rows[:-1]] == hist.loss and rows[-1]["step"] == -1
    # a lone callable works, logging changes nothing, and a callback of another arity is refused
    plain = make_mlp(64, 16, 2, 10, seed=0)
    assert train(plain, x, y, callbacks=hook, **FAST).loss == hist.loss
    with pytest.raises(InputError, match="callback"):
        train(plain, x, y, callbacks=[lambda a: None], **FAST)
    with pytest.raises(InputError, match="callback"):
        train(plain, x, y, callbacks=[3], **FAST)


def test_mlp_save_pretrained_round_trip(digits, tmp_path):
    x, y = digits
    model = make_mlp(64, 16, 2, 10, seed=3)
    tracker = LossTracker(model, (x, y))
    train(model, x, y, tracker=tracker, **FAST)
    folder = model.save_pretrained(tmp_path / "mlp", provenance={"steps": 8})
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["config"] == {"d_in": 64, "width": 16, "depth": 2, "n_classes": 10}
    for back in (MLP.from_pretrained(folder), load_pretrained(folder)):
        assert type(back) is MLP and torch.equal(back(x), model(x))
        assert list(back.state_dict()) == list(model.state_dict())
    # MLP(sizes) draws nothing from the global RNG
    state = torch.get_rng_state()
    MLP(d_in=3, width=4, depth=1, n_classes=2)
    assert torch.equal(state, torch.get_rng_state())


def test_mlp_folder_bad_input(tmp_path):
    with pytest.raises(InputError, match="not both"):
        MLP(nn.Linear(2, 2), d_in=2)
    with pytest.raises(InputError, match="width"):
        MLP(d_in=2, width=0, depth=1, n_classes=2)
    with pytest.raises(InputError, match="make_mlp architecture"):
        MLP(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 2)).save_pretrained(tmp_path / "tanh")
    with pytest.raises(InputError, match="hidden layer"):
        MLP(nn.Linear(2, 3)).save_pretrained(tmp_path / "linear")
    assert not (tmp_path / "tanh").exists()
    with pytest.raises(InputFileError, match="does not exist"):
        MLP.from_pretrained(tmp_path / "nope")
    folder = make_mlp(4, 5, 1, 3).save_pretrained(tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["config"]["width"] = 6
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(InputFileError, match="does not fit"):
        MLP.from_pretrained(folder)
