"""Loaders on tiny files written in the real formats, and the imbalance protocol."""

import numpy as np
import pytest
import torch

from iclr24.sfda2.data import digits_domains
from iclr24.sfda2.data import image_folder_domain
from iclr24.sfda2.data import imbalanced_indices
from iclr24.sfda2.data import mnist_as_digits
from iclr24.sfda2.data import mnist_to_digits
from iclr24.sfda2.data import point_cloud_folder
from iclr24.sfda2.data import rsut_indices


def test_digits_domains_shapes_and_shift():
    d = digits_domains(seed=0)
    assert d.source_x.shape[1:] == (1, 8, 8) and d.target_x.shape[1:] == (1, 8, 8)
    assert len(d.source_x) + len(d.target_x) + len(d.test_x) == 1797
    assert float(d.target_x.min()) >= 0 and float(d.target_x.max()) <= 1
    assert d.num_classes == 10


def test_mnist_as_digits():
    x = np.zeros((2, 784), np.float32)
    x[0].reshape(28, 28)[4:24, 4:24] = 0.5
    out = mnist_as_digits(x)
    assert out.shape == (2, 1, 8, 8)
    assert float(out[0].max()) == pytest.approx(1.0) and float(out[1].max()) == 0.0
    with pytest.raises(ValueError, match="784"):
        mnist_as_digits(np.zeros((2, 100)))


def test_mnist_to_digits_from_a_tiny_pickle(tmp_path, tiny_mnist):
    tiny_mnist(tmp_path)
    d = mnist_to_digits(tmp_path, n_source=50)
    assert d.source_x.shape == (50, 1, 8, 8) and torch.bincount(d.source_y).tolist() == [5] * 10
    assert d.target_x.shape == (1797, 1, 8, 8)


def test_mnist_missing_names_the_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="iclr24 data get mnist"):
        mnist_to_digits(tmp_path / "nowhere")


def test_image_folder_domain(tmp_path):
    from PIL import Image

    for c in ("back_pack", "bike"):
        (tmp_path / c).mkdir()
        for i in range(2):
            Image.fromarray(np.full((10, 12, 3), 40 * i, np.uint8)).save(tmp_path / c / f"{i}.png")
    x, y, names = image_folder_domain(tmp_path, size=16)
    assert x.shape == (4, 3, 16, 16) and y.tolist() == [0, 0, 1, 1] and names == ["back_pack", "bike"]
    with pytest.raises(ValueError, match="source model has 3"):
        image_folder_domain(tmp_path, size=16, class_names=["a", "back_pack", "bike"])
    with pytest.raises(FileNotFoundError, match="not found"):
        image_folder_domain(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="empty"):
        image_folder_domain(tmp_path / "empty")


def test_point_cloud_folder(tmp_path):
    rng = np.random.default_rng(0)
    for c in ("bed", "chair"):
        (tmp_path / c / "train").mkdir(parents=True)
        np.save(tmp_path / c / "train" / "a.npy", rng.normal(size=(40, 3)) * 3 + 1)
    x, y, names = point_cloud_folder(tmp_path, num_points=64, split="train")
    assert x.shape == (2, 3, 64) and y.tolist() == [0, 1] and names == ["bed", "chair"]
    assert float(x.norm(dim=1).max()) <= 1 + 1e-5
    np.save(tmp_path / "chair" / "train" / "bad.npy", np.zeros((5, 2)))
    with pytest.raises(ValueError, match=r"\(P, 3\)"):
        point_cloud_folder(tmp_path, split="train")


def test_imbalanced_and_rsut():
    y = np.repeat(np.arange(3), 100)
    idx = imbalanced_indices(y, imbalance_ratio=100)
    counts = np.bincount(y[idx.numpy()], minlength=3)
    assert counts.tolist() == [100, 10, 1]
    s, t = rsut_indices(y, y, imbalance_ratio=100)
    assert np.bincount(y[s.numpy()]).tolist() == [1, 10, 100]
    assert np.bincount(y[t.numpy()]).tolist() == [100, 10, 1]
    with pytest.raises(ValueError, match="imbalance_ratio"):
        imbalanced_indices(y, 0.5)
