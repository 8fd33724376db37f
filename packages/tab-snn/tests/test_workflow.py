"""Model folders (save_pretrained / from_pretrained), the step log, your own Dataset/DataLoader, and exact resume of
an interrupted training."""

import json

import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import TensorDataset

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.pretrained import load_pretrained
from iclr24.paperkit.runner.testing_workflow import Stopped
from iclr24.paperkit.runner.testing_workflow import check_finished_run_folder
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.runner.testing_workflow import stop_at
from iclr24.paperkit.tracking import read_jsonl
from iclr24.tab_snn import SpikingMLP
from iclr24.tab_snn import SpikingResNet19
from iclr24.tab_snn import SpikingVGG9
from iclr24.tab_snn import TrainConfig
from iclr24.tab_snn import seq_digits
from iclr24.tab_snn import train_model
from iclr24.tab_snn import train_on
from iclr24.tab_snn.cli import main

CFG = TrainConfig(epochs=2, batch_size=32)


@pytest.fixture(scope="module")
def digits():
    d = seq_digits()
    return d.x_train[:160], d.y_train[:160], d.x_test[:64], d.y_test[:64]


def _mlp(seed=0, norm="tab"):
    torch.manual_seed(seed)
    return SpikingMLP(8, 10, 8, hidden=(16, 16), norm=norm)


def _images(n=48, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 1, 8, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


@pytest.mark.filterwarnings("ignore:.*never seen a training batch")
def test_trained_networks_round_trip_through_folders(tmp_path, digits):
    data = seq_digits()
    res = train_on(data, "tab", TrainConfig(epochs=1, batch_size=256), hidden=(16,), progress=False)
    m = res.model
    folder = m.save_pretrained(tmp_path / "mlp", provenance={"test_acc": res.test_acc})
    back = SpikingMLP.from_pretrained(folder)
    assert same_weights(back, m) and back.norm == "tab" and back.T == 8
    x = digits[2]
    m.eval(), back.eval()
    assert torch.equal(back(x), m(x))  # running statistics included
    assert isinstance(load_pretrained(folder), SpikingMLP)
    assert "model" not in res.to_dict() and res.steps == -(-len(data.x_train) // 256)
    for net in (SpikingVGG9(3, 2, in_channels=1, input_size=8, norm="tebn", width=0.0625),
                SpikingResNet19(3, 2, in_channels=1, input_size=8, norm="bntt", width=0.03125, blocks=(1, 1, 1))):  # fmt: skip
        again = type(net).from_pretrained(net.save_pretrained(tmp_path / type(net).__name__))
        xi = _images(4)[0]
        net.eval(), again.eval()
        assert same_weights(again, net) and torch.equal(again(xi), net(xi))
    with pytest.raises(InputFileError, match="not a .*SpikingVGG9"):
        SpikingVGG9.from_pretrained(folder)


def test_step_log_every_step_changes_nothing(tmp_path, digits):
    seen = []
    a, b = _mlp(), _mlp()
    ra = train_model(a, *digits, CFG, progress=False, callbacks=lambda s, m: seen.append((s, m)),
                     log_dir=tmp_path / "log")  # fmt: skip
    rb = train_model(b, *digits, CFG, progress=False)
    assert same_weights(a, b) and ra.train_loss == rb.train_loss and ra.test_acc == rb.test_acc
    steps = [s for s, m in seen if "loss" in m]
    assert steps == list(range(1, 11)) and ra.steps == 10
    assert seen[0][1]["lr"] == CFG.lr and seen[-2][1]["lr"] < CFG.lr  # the cosine schedule, as it stepped
    assert [m["train_loss"] for _, m in seen if "train_loss" in m] == ra.train_loss
    rows = read_jsonl(tmp_path / "log" / "metrics.jsonl")
    assert len(rows) == len(seen) + 1 and rows[-1]["test_acc"] == ra.test_acc


def test_a_users_loader_trains_like_the_tensors(digits):
    xtr, ytr, xte, yte = digits
    ref, m = _mlp(), _mlp()
    r0 = train_model(ref, *digits, CFG, progress=False)
    r1 = train_model(m, DataLoader(TensorDataset(xtr, ytr), batch_size=50), None, TensorDataset(xte, yte), None,
                     CFG, progress=False)  # fmt: skip
    assert same_weights(m, ref) and r1.train_loss == r0.train_loss and r1.test_acc == r0.test_acc
    with pytest.raises(InputError, match="labels as None"):
        train_model(_mlp(), TensorDataset(xtr, ytr), ytr, xte, yte, CFG, progress=False)
    with pytest.raises(InputError, match="3 field"):
        train_model(_mlp(), TensorDataset(xtr, ytr, ytr), None, xte, yte, CFG, progress=False)
    with pytest.raises(InputError, match="integer"):
        train_model(_mlp(), TensorDataset(xtr, ytr.float()), None, xte, yte, CFG, progress=False)


def test_an_interrupted_training_resumed_equals_the_uninterrupted_one(tmp_path):
    """VGG-9 (dropout: torch's global RNG) with crop/flip augmentation (its own generator) and BN statistics."""
    x, y = _images()
    xt, yt = _images(16, seed=1)
    cfg = TrainConfig(epochs=3, batch_size=16, seed=5)

    def net():
        torch.manual_seed(5)
        return SpikingVGG9(3, 2, in_channels=1, input_size=8, norm="tab", width=0.0625)

    kw = dict(progress=False, augment=True, pad_fill=[0.0])
    ref = net()
    full = train_model(ref, x, y, xt, yt, cfg, **kw)

    stop = stop_at(5)  # the middle of the second epoch (3 steps an epoch)

    with pytest.raises(Stopped):
        train_model(net(), x, y, xt, yt, cfg, **kw, checkpoint=tmp_path / "s.pt", callbacks=stop)
    torch.manual_seed(1234)  # another process, another global RNG: the saved one is restored
    resumed = net()
    got = train_model(resumed, x, y, xt, yt, cfg, **kw, checkpoint=tmp_path / "s.pt", resume=True)
    assert same_weights(resumed, ref) and got.train_loss == full.train_loss and got.test_acc == full.test_acc
    assert got.steps == full.steps == 9
    with pytest.raises(InputError, match="config"):
        train_model(net(), x, y, xt, yt, TrainConfig(epochs=3, batch_size=8, seed=5), **kw,
                    checkpoint=tmp_path / "s.pt", resume=True)  # fmt: skip
    with pytest.raises(InputError, match="checkpoint="):
        train_model(net(), x, y, xt, yt, cfg, resume=True)


def test_cli_train_writes_a_model_folder_logs_and_resumes(tmp_path):
    out = tmp_path / "run"
    args = ["train", "--data", "seq-digits", "--epochs", "2", "--limit", "128", "--quiet", "--out", str(out)]
    assert main([*args, "--log-dir", str(tmp_path / "log")]) == 0
    prov = json.loads((out / "model" / "provenance.json").read_text())
    assert prov["command"].startswith("tab-snn train --data seq-digits") and prov["steps"] == 4
    assert prov["seed"] == 0 and prov["cpu_seconds"] > 0 and len(prov["losses"]) == 2
    assert sum("loss" in r for r in read_jsonl(tmp_path / "log" / "metrics.jsonl")) == 4
    # the finished run's folder again: refused; --resume trains nothing more; --resume with other settings refused
    check_finished_run_folder(
        main, args, lambda: SpikingMLP.from_pretrained(out / "model"), same_weights, ["--lr", "0.05"]
    )
