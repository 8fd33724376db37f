"""Paper scale (issue 48): PAPER_SCALE is the CIFAR-10 CNN, and one micro-step of it runs at a tiny size on a folder
in CIFAR-10's python format."""

import pickle

import numpy as np

from iclr24.paperkit.data.standins import write_cifar10_batches
from iclr24.paperkit.scale import measure_paper_scale
from iclr24.task_geometry.paper_scale import PAPER_SCALE
from iclr24.task_geometry.reproduce import PAPER


def test_paper_scale_config_is_the_cifar10_cnn():
    c = PAPER_SCALE
    assert (c.train_images, c.side, c.in_channels) == (50_000, 32, 3)  # CIFAR-10
    assert (c.width, c.batch_size, c.lr) == (128, 64, 1e-3)  # the authors' width and batch; train_cnn's Adam
    assert c.activations == ("tanh", "relu") and c.epochs == 100
    assert PAPER.paper_scale is not None


def test_one_micro_step_at_a_tiny_size():
    spec = PAPER.paper_scale("cpu", train_images=100, batch=16)
    row = measure_paper_scale(spec, steps=2, warmup=0)
    assert row["micro_batch"] == 16 and row["accumulation"] == 1
    assert row["paper_steps"] == 100 * 782 * 2  # epochs x ceil(50,000 / 64) x (Tanh, ReLU)
    # at least the first conv's forward: 2 x 16 images x 32 x 32 x 16 channels x 3 x 5 x 5 MACs
    assert row["flops_per_paper_step"] >= 2 * 16 * 32 * 32 * 16 * 3 * 25
    assert "SmallCNN" in row["config"] and row["seconds_per_micro_step"] > 0


def test_standin_is_in_the_cifar10_python_format(tmp_path):
    from iclr24.paperkit.data import load_cifar10

    folder = write_cifar10_batches(tmp_path, 50, 10)
    assert folder.name == "cifar-10-batches-py"
    assert sorted(p.name for p in folder.iterdir()) == ["batches.meta"] + [
        f"data_batch_{i}" for i in range(1, 6)
    ] + ["test_batch"]
    with open(folder / "data_batch_1", "rb") as fh:
        d = pickle.load(fh, encoding="bytes")  # the real files' keys, as bytes
    assert d[b"data"].dtype == np.uint8 and d[b"data"].shape == (10, 3072) and len(d[b"labels"]) == 10
    data = load_cifar10(tmp_path)
    assert data["train"][0].shape == (50, 32, 32, 3) and data["test"][0].shape == (10, 32, 32, 3)
