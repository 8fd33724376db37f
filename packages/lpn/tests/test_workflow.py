"""Train -> model folder -> from_pretrained / load_model -> evaluate, your own Dataset/DataLoader, per-step logging,
and bit-for-bit resume."""

import json

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import TensorDataset

from iclr24.lpn import ICNN
from iclr24.lpn import MLPLPN
from iclr24.lpn import ConvLPN28
from iclr24.lpn import TrainConfig
from iclr24.lpn import load_model
from iclr24.lpn import train
from iclr24.lpn.cli import main
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.pretrained import load_pretrained
from iclr24.paperkit.runner.testing_workflow import Stopped
from iclr24.paperkit.runner.testing_workflow import check_unlabelled_data_forms
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.runner.testing_workflow import stop_at

DATA = torch.rand(60, 4, generator=torch.Generator().manual_seed(0))
CFG = TrainConfig(
    num_steps=12, num_steps_pretrain=4, num_stages=2, batch_size=10, checkpoint_every=4, lr=1e-3
)


def _model():
    torch.manual_seed(0)
    return MLPLPN(in_dim=4, hidden=8, layers=2, alpha=0.01)


def test_interrupted_and_resumed_run_equals_the_uninterrupted_one_bit_for_bit(tmp_path):
    full = _model()
    ref = train(full, DATA, CFG, show_progress=False)

    stop = stop_at(7)  # after the checkpoint of step 4, inside the proximal-matching stages

    cfg = TrainConfig(**{**CFG.to_dict(), "checkpoint_dir": str(tmp_path)})
    with pytest.raises(Stopped):
        train(_model(), DATA, cfg, show_progress=False, callbacks=stop)
    resumed = _model()
    res = train(resumed, DATA, cfg, show_progress=False)
    assert res.start_step == 4 and res.end_step == 12
    assert res.losses == ref.losses[4:] and same_weights(resumed, full)


def test_your_own_dataset_or_dataloader_gives_the_same_run():
    def run(data):
        m = _model()
        return train(m, data, CFG, show_progress=False).losses, m

    check_unlabelled_data_forms(run, DATA, batch_size=7)
    with pytest.raises(InputError, match="sample shape"):
        train(_model(), TensorDataset(torch.rand(20, 5)), CFG, show_progress=False)
    with pytest.raises(InputError, match="empty"):
        train(_model(), DataLoader(TensorDataset(DATA[:0]), batch_size=4), CFG, show_progress=False)


def test_model_folder_round_trip_and_logs(tmp_path):
    model = _model()
    res = train(model, DATA, CFG, show_progress=False, log_dir=tmp_path / "logs")
    model.save_pretrained(tmp_path / "m", provenance={"steps": res.end_step})
    for back in (MLPLPN.from_pretrained(tmp_path / "m"), ICNN.from_pretrained(tmp_path / "m"),
                 load_model(tmp_path / "m"), load_pretrained(tmp_path / "m")):  # fmt: skip
        assert isinstance(back, MLPLPN) and back.config() == model.config() and same_weights(back, model)
        noisy = DATA[:8] + 0.1
        assert torch.equal(back.eval()(noisy), model.eval()(noisy))
    conv = ConvLPN28(in_channels=1, hidden=4)
    conv.save_pretrained(tmp_path / "c")
    assert same_weights(load_model(tmp_path / "c", arch="conv28"), conv)
    with pytest.raises(InputError, match="architecture"):
        load_model(tmp_path / "c", arch="mlp")
    with pytest.raises(InputFileError, match="holds a"):
        MLPLPN.from_pretrained(tmp_path / "c")  # a ConvLPN28 folder
    rows = [json.loads(line) for line in (tmp_path / "logs" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "lr" in r] == list(range(1, 13))
    assert [r["loss"] for r in rows if "lr" in r] == res.losses
    assert all("gamma" in r for r in rows if "lr" in r and r["step"] > 4)  # the proximal-matching stages


def test_a_folder_that_is_not_a_model_folder_is_refused(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(InputFileError):
        load_model(tmp_path)
    with pytest.raises(InputFileError):
        MLPLPN.from_pretrained(tmp_path / "missing")


def test_cli_train_writes_the_model_folder_and_logs_and_denoise_reads_it(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["train", "--data", "digits", "--steps", "6", "--pretrain-steps", "3", "--batch-size", "20",
               "--hidden", "16", "--out", str(out), "--quiet", "--log-dir", str(tmp_path / "logs")])  # fmt: skip
    assert rc == 0 and "model folder" in capsys.readouterr().out
    prov = json.loads((out / "model" / "provenance.json").read_text())
    assert (
        prov["command"].startswith("lpn train --data digits")
        and prov["steps"] == 6
        and prov["cpu_seconds"] > 0
    )
    assert list(prov["losses"]) == ["1", "2", "3", "4", "5", "6"]  # {str(step): loss}
    assert all(isinstance(v, float) for v in prov["losses"].values())
    assert (tmp_path / "logs" / "metrics.jsonl").is_file()
    assert same_weights(
        load_model(out / "model"), load_model(out)
    )  # the folder and the checkpoint: the same weights
    img = np.random.default_rng(0).random((8, 8)).astype(np.float32)
    np.save(tmp_path / "digit.npy", img)
    for ck in (out / "model", out):
        assert main(["denoise", "--checkpoint", str(ck), "--input", str(tmp_path / "digit.npy"),
                     "--output", str(tmp_path / f"{ck.name}.npy"), "--quiet"]) == 0  # fmt: skip
    a, b = np.load(tmp_path / "model.npy"), np.load(tmp_path / "run.npy")
    assert np.array_equal(a, b) and a.shape == img.shape
