"""Loaders: built-in digits tasks, and the paper's datasets from tiny files written here in the real formats."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from iclr24.tab_snn.data import events_to_frames
from iclr24.tab_snn.data import load_cifar
from iclr24.tab_snn.data import load_dvs_cifar10
from iclr24.tab_snn.data import seq_digits
from iclr24.tab_snn.data import static_digits


def test_digits_tasks():
    d = seq_digits()
    assert d.x_train.shape[1:] == (8, 8) and d.T == 8 and len(d.x_train) + len(d.x_test) == 1797
    assert float(d.x_train.max()) <= 1.0
    # the rows drift: the mean intensity differs across time steps
    row_means = d.x_train.mean(dim=(0, 2))
    assert float(row_means.max() - row_means.min()) > 0.05
    s = static_digits(T=4)
    assert s.x_train.shape[1:] == (64,) and s.T == 4


def _write_cifar100(root, n=6):
    root.mkdir()
    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        d = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"fine_labels": list(range(n))}
        (root / split).write_bytes(pickle.dumps(d, protocol=2))


def _write_cifar10(root, n=4):
    root.mkdir()
    rng = np.random.default_rng(0)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        d = {"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), "labels": list(range(n))}
        (root / name).write_bytes(pickle.dumps(d, protocol=2))


def test_cifar_python_format(tmp_path):
    _write_cifar100(tmp_path / "c100")
    d = load_cifar(tmp_path / "c100", num_classes=100)
    assert d.x_train.shape == (6, 3, 32, 32) and d.y_test.tolist() == list(range(6)) and d.num_classes == 100
    _write_cifar10(tmp_path / "c10")
    d = load_cifar(tmp_path / "c10", num_classes=10)
    assert d.x_train.shape == (20, 3, 32, 32) and d.x_test.shape == (4, 3, 32, 32)
    # the official dataloader.py's constants: (129.3, 124.1, 112.4) / 255 and (68.2, 65.4, 70.4) / 255
    px = np.random.default_rng(0).integers(0, 256, (4, 3072), dtype=np.uint8)[0].reshape(3, 32, 32)
    expect = (px[:, 0, 0] / 255.0 - np.array([129.3, 124.1, 112.4]) / 255) / (
        np.array([68.2, 65.4, 70.4]) / 255
    )
    assert np.allclose(d.x_train[0, :, 0, 0].numpy(), expect, atol=1e-5)
    assert np.allclose(d.pad_fill, -np.array([129.3, 124.1, 112.4]) / np.array([68.2, 65.4, 70.4]))


def test_cifar_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="cs.toronto.edu"):
        load_cifar(tmp_path / "nowhere", num_classes=100)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "train").write_bytes(b"\x80\x04not a pickle")
    (tmp_path / "c" / "test").write_bytes(b"")
    with pytest.raises(ValueError, match="not a CIFAR python batch"):
        load_cifar(tmp_path / "c", num_classes=100)
    evil = tmp_path / "e"
    evil.mkdir()
    (evil / "train").write_bytes(pickle.dumps({"data": print}))
    (evil / "test").write_bytes(pickle.dumps({"data": print}))
    with pytest.raises(ValueError, match="not a CIFAR python batch"):
        load_cifar(evil, num_classes=100)
    with pytest.raises(ValueError, match="10 or 100"):
        load_cifar(tmp_path, num_classes=7)


def test_events_to_frames_split_by_number():
    t = np.array([5, 1, 2, 3])
    x = np.array([0, 1, 2, 3])
    y = np.zeros(4, dtype=int)
    p = np.array([1, 0, 1, 0])
    f = events_to_frames(t, x, y, p, T=2, H=2, W=4)
    assert f.shape == (2, 2, 2, 4) and f.sum() == 4
    # time order: t=1 (x=1, p=0), t=2 (x=2, p=1) in frame 0; t=3 (x=3, p=0), t=5 (x=0, p=1) in frame 1
    assert f[0, 0, 0, 1] == 1 and f[0, 1, 0, 2] == 1 and f[1, 0, 0, 3] == 1 and f[1, 1, 0, 0] == 1
    with pytest.raises(ValueError, match="out of range"):
        events_to_frames(t, x + 10, y, p, T=2, H=2, W=4)


def test_dvs_folder_frames_and_events(tmp_path):
    rng = np.random.default_rng(0)
    for c in ("airplane", "cat"):
        (tmp_path / c).mkdir()
        for i in range(3):
            np.savez(tmp_path / c / f"f{i}.npz", frames=rng.random((10, 2, 64, 64)).astype(np.float32))
        n = 50
        np.savez(
            tmp_path / c / "ev.npz",
            t=np.arange(n),
            x=rng.integers(0, 128, n),
            y=rng.integers(0, 128, n),
            p=rng.integers(0, 2, n),
        )
    d = load_dvs_cifar10(tmp_path, T=10, size=48, test_fraction=0.25)
    assert (
        d.x_train.shape[1:] == (10, 2, 48, 48) and len(d.x_train) + len(d.x_test) == 8 and d.num_classes == 2
    )
    assert torch.isfinite(d.x_train).all()
    bad = tmp_path / "bad" / "x"
    bad.mkdir(parents=True)
    np.savez(bad / "a.npz", other=np.zeros(3))
    with pytest.raises(ValueError, match="frames"):
        load_dvs_cifar10(tmp_path / "bad")
    with pytest.raises(FileNotFoundError, match="class"):
        load_dvs_cifar10(tmp_path / "missing")
