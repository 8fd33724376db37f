"""Toy manifolds and loaders from a user path (tiny files written here in the real formats)."""

import math

import numpy as np
import pytest
import torch

from iclr24.fif.data import check_data, load_array, load_tabular, toy_dataset, toy_splits


def test_sine_lies_on_its_manifold():
    x = toy_dataset("sine", 500, seed=0)
    assert x.shape == (500, 2)
    assert torch.allclose(x[:, 1], torch.sin(math.pi * x[:, 0] / 2), atol=1e-6)
    tr, te, d = toy_splits("s_curve", 300, 100, seed=1)
    assert tr.shape == (300, 3) and te.shape == (100, 3) and d == 2
    assert torch.allclose(tr.mean(0), torch.zeros(3), atol=1e-5)
    with pytest.raises(ValueError, match="unknown toy dataset"):
        toy_dataset("moons", 10)
    with pytest.raises(ValueError, match="int >= 1"):
        toy_dataset("sine", 0)


def test_load_array_formats(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.save(tmp_path / "a.npy", a)
    np.savez(tmp_path / "a.npz", x=a)
    (tmp_path / "a.csv").write_text("c1,c2,c3\n" + "\n".join(",".join(str(v) for v in r) for r in a) + "\n")
    for name in ("a.npy", "a.npz", "a.csv"):
        assert torch.equal(load_array(tmp_path / name), torch.as_tensor(a))


def test_load_array_bad_inputs(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        load_array(tmp_path / "missing.npy")
    (tmp_path / "bad.npy").write_bytes(b"not an array")
    with pytest.raises(ValueError, match="not a readable"):
        load_array(tmp_path / "bad.npy")
    (tmp_path / "x.pkl").write_bytes(b"\x80\x04N.")
    with pytest.raises(ValueError, match="pickle"):
        load_array(tmp_path / "x.pkl")
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="NaN or inf"):
        load_array(tmp_path / "nan.npy")
    np.save(tmp_path / "empty.npy", np.zeros((0, 3)))
    with pytest.raises(ValueError, match="empty"):
        load_array(tmp_path / "empty.npy")
    with pytest.raises(ValueError, match="directory"):
        load_array(tmp_path)
    with pytest.raises(ValueError, match="shape"):
        check_data(torch.zeros(3))


def test_load_tabular(tmp_path):
    (tmp_path / "power").mkdir()
    np.save(tmp_path / "power" / "data.npy", np.random.default_rng(0).standard_normal((10, 6)))
    assert load_tabular("POWER", tmp_path).shape == (10, 6)
    with pytest.raises(FileNotFoundError, match="gas/data.npy"):
        load_tabular("gas", tmp_path)
    (tmp_path / "miniboone").mkdir()
    np.save(tmp_path / "miniboone" / "data.npy", np.zeros((5, 7)))
    with pytest.raises(ValueError, match="D=43"):
        load_tabular("miniboone", tmp_path)
    with pytest.raises(ValueError, match="unknown tabular"):
        load_tabular("cifar", tmp_path)
