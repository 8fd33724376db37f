"""The stand-in writers write what paperkit's readers (and torchvision's) read as the real sets."""

import pickle

import numpy as np
import pytest

from iclr24.paperkit.data import CIFAR10_CLASSES
from iclr24.paperkit.data import image_folder
from iclr24.paperkit.data import load_cifar10
from iclr24.paperkit.data.standins import write_cifar10_batches
from iclr24.paperkit.data.standins import write_imagenet_folder


def test_cifar10_batches_round_trip_through_load_cifar10(tmp_path):
    folder = write_cifar10_batches(tmp_path, train=23, test=4, seed=1)
    assert folder == tmp_path / "cifar-10-batches-py"
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["batches.meta", *[f"data_batch_{i}" for i in range(1, 6)], "test_batch"]
    data = load_cifar10(tmp_path)  # the folder that holds it, as the real route
    (x, y), (xt, yt) = data["train"], data["test"]
    assert x.shape == (23, 32, 32, 3) and x.dtype == np.uint8
    assert y.shape == (23,) and xt.shape == (4, 32, 32, 3)
    assert set(np.unique(np.concatenate([y, yt]))) <= set(range(10))
    with open(folder / "data_batch_1", "rb") as fh:
        raw = pickle.load(fh, encoding="bytes")  # the real files' keys read as bytes
    assert raw[b"data"].shape == (5, 3072) and len(raw[b"labels"]) == len(raw[b"filenames"]) == 5
    with open(folder / "batches.meta", "rb") as fh:
        meta = pickle.load(fh, encoding="bytes")
    assert [n.decode() for n in meta[b"label_names"]] == list(CIFAR10_CLASSES)
    again = load_cifar10(write_cifar10_batches(tmp_path / "again", train=23, test=4, seed=1))
    assert np.array_equal(again["train"][0], x)  # seeded


def test_imagenet_folder_round_trips_through_image_folder_and_torchvision(tmp_path):
    root = write_imagenet_folder(tmp_path, classes=3, per_class=2, val_per_class=1, size=(40, 30))
    files = sorted(p.relative_to(root).as_posix() for p in (root / "train").rglob("*.JPEG"))
    assert files == [f"train/n{c:08d}/n{c:08d}_{k}.JPEG" for c in range(3) for k in range(2)]
    images, labels, classes = image_folder(root / "train")
    assert images.shape == (6, 30, 40, 3) and labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert classes == ["n00000000", "n00000001", "n00000002"]
    assert image_folder(root / "val")[0].shape == (3, 30, 40, 3)
    tv = pytest.importorskip("torchvision")
    ds = tv.datasets.ImageFolder(str(root / "train"))
    img, label = ds[5]
    assert img.size == (40, 30) and img.mode == "RGB" and label == 2 and ds.classes == classes


def test_imagenet_folder_without_val_writes_train_only(tmp_path):
    root = write_imagenet_folder(tmp_path, classes=2, per_class=1, size=(16, 12))
    assert sorted(p.name for p in root.iterdir()) == ["train"]
