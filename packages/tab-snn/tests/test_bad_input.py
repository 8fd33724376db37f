"""Bad input at the Python API raises InputError / InputFileError naming what was wrong (issue 62)."""

import pytest
import torch

import iclr24.tab_snn as ts
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError


def _task(**change):
    args = dict(
        name="d",
        x_train=torch.rand(6, 4),
        y_train=torch.arange(6) % 3,
        x_test=torch.rand(3, 4),
        y_test=torch.arange(3),
        num_classes=3,
        T=2,
    )
    args.update(change)
    return ts.TemporalData(**args)


def test_temporal_data_checks_its_tensors():
    assert _task().in_features == 4
    with pytest.raises(InputError, match="y_train must lie in"):
        _task(y_train=torch.arange(6))
    with pytest.raises(InputError, match="y_test must be a 1-D integer tensor"):
        _task(y_test=torch.rand(3))
    with pytest.raises(InputError, match="x_train contains NaN"):
        _task(x_train=torch.full((6, 4), float("nan")))
    with pytest.raises(InputError, match="share their per-sample shape"):
        _task(x_test=torch.rand(3, 5))
    with pytest.raises(InputError, match="T must be"):
        _task(T=0)


def test_train_config_bounds():
    with pytest.raises(InputError, match="epochs"):
        ts.TrainConfig(epochs=10**20)
    with pytest.raises(InputError, match="batch_size"):
        ts.TrainConfig(batch_size=2.5)
    with pytest.raises(InputError, match="lr"):
        ts.TrainConfig(lr=float("nan"))


def test_training_entry_points_check_their_arguments():
    cfg = ts.TrainConfig(epochs=1, batch_size=3)
    with pytest.raises(InputError, match="data must be a TemporalData"):
        ts.train_on((torch.rand(6, 4), torch.arange(6)), "tab", cfg, progress=False)
    with pytest.raises(InputError, match="cfg must be a TrainConfig"):
        ts.train_on(_task(), "tab", {"epochs": 1}, progress=False)
    with pytest.raises(InputError, match="model must be an nn.Module"):
        ts.train_model(
            object(), torch.rand(6, 4), torch.arange(6) % 3, torch.rand(3, 4), torch.arange(3), cfg
        )
    with pytest.raises(InputError, match="seeds"):
        ts.train_packed(_task(), ["tab"], [1.5], cfg, hidden=(4,), progress=False)


def test_load_cifar_names_a_corrupt_batch(tmp_path):
    for name in ("train", "test"):
        (tmp_path / name).write_bytes(b"\x00not a pickle")
    with pytest.raises(InputFileError, match="not a CIFAR python batch"):
        ts.load_cifar(tmp_path, num_classes=100)
    with pytest.raises(InputError, match="max_per_split"):
        ts.load_cifar(tmp_path, num_classes=100, max_per_split=0)
    with pytest.raises(InputFileError):
        ts.load_cifar(tmp_path / "missing")
