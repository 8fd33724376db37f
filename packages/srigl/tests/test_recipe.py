"""The official training config group: lr schedules with warm-up, label smoothing, crop + flip, CIFAR-10 loading."""

import json
import pickle
import pickletools
import struct

import numpy as np
import pytest
import torch

from iclr24.srigl.cli import main
from iclr24.srigl.data import cifar10_split
from iclr24.srigl.data import load_data
from iclr24.srigl.train import CIFAR10_RECIPE
from iclr24.srigl.train import IMAGENET_RECIPE
from iclr24.srigl.train import TrainConfig
from iclr24.srigl.train import augment_batch
from iclr24.srigl.train import lr_lambda


def test_step_schedule_with_warm_up_closed_form():
    cfg = TrainConfig(epochs=10, scheduler="step", warmup_epochs=2, milestones=(5, 8), gamma=0.1)
    f = lr_lambda(cfg, steps_per_epoch=4)  # warm-up = 8 steps, milestones at steps 20 and 32
    assert [f(t) for t in (0, 3, 7)] == pytest.approx([1 / 8, 4 / 8, 1.0])
    assert [f(t) for t in (8, 19, 20, 31, 32, 39)] == pytest.approx([1, 1, 0.1, 0.1, 0.01, 0.01])


def test_cosine_with_warm_up_and_the_default_is_torch_cosine():
    cfg = TrainConfig(epochs=10, warmup_epochs=1)
    f = lr_lambda(cfg, steps_per_epoch=10)
    assert f(9) == pytest.approx(1.0) and f(10) == pytest.approx(1.0)
    assert f(55) == pytest.approx(0.5) and f(99) == pytest.approx(0.5 * (1 + np.cos(np.pi * 89 / 90)))
    # no warm-up: the same multipliers as torch's CosineAnnealingLR (which train() uses then)
    g = lr_lambda(TrainConfig(epochs=3), steps_per_epoch=5)
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=15)
    for t in range(15):
        assert opt.param_groups[0]["lr"] == pytest.approx(g(t), abs=1e-12)
        opt.step()
        sched.step()


def test_recipes_carry_the_official_values():
    assert (CIFAR10_RECIPE.lr, CIFAR10_RECIPE.weight_decay, CIFAR10_RECIPE.batch_size) == (0.1, 5e-4, 128)
    assert (CIFAR10_RECIPE.epochs, CIFAR10_RECIPE.label_smoothing, CIFAR10_RECIPE.warmup_epochs) == (
        250,
        0.0,
        0,
    )
    assert CIFAR10_RECIPE.scheduler == "cosine" and CIFAR10_RECIPE.delta_t == 100 and CIFAR10_RECIPE.augment
    assert (IMAGENET_RECIPE.warmup_epochs, IMAGENET_RECIPE.milestones, IMAGENET_RECIPE.gamma) == (
        5,
        (30, 70, 90),
        0.1,
    )
    assert IMAGENET_RECIPE.label_smoothing == 0.1 and IMAGENET_RECIPE.lr == 0.2


def test_bad_recipe_values_are_refused():
    for kw, msg in (
        (dict(scheduler="linear"), "scheduler"),
        (dict(warmup_epochs=60), "warmup_epochs"),
        (dict(label_smoothing=1.0), "label_smoothing"),
        (dict(gamma=0.0), "gamma"),
    ):
        with pytest.raises(ValueError, match=msg):
            TrainConfig(**kw)


def test_augment_is_a_shifted_window_of_the_padded_image_and_flips_some():
    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8).repeat(16, 1, 1, 1)
    y = augment_batch(x, torch.Generator().manual_seed(0))
    assert y.shape == x.shape
    padded = torch.nn.functional.pad(x, (4, 4, 4, 4))
    for i in range(len(x)):
        wins = [padded[i, :, a : a + 8, b : b + 8] for a in range(9) for b in range(9)]
        assert any(torch.equal(y[i], w) or torch.equal(y[i], w.flip(-1)) for w in wins)
    assert not torch.equal(y, x)


def _py2_str(b: bytes) -> bytes:
    """A Python 2 ``str`` as protocol 2 writes it (SHORT_BINSTRING / BINSTRING): the official release's keys."""
    return (b"U" + bytes([len(b)]) if len(b) < 256 else b"T" + struct.pack("<i", len(b))) + b


def _py2_int(v: int) -> bytes:
    return b"K" + bytes([v]) if 0 <= v < 256 else b"J" + struct.pack("<i", v)


def _py2_uint8_array(a: np.ndarray) -> bytes:
    """numpy's Python 2 pickle of a uint8 array: ``_reconstruct(ndarray, (0,), 'b')``, then BUILD with the state
    ``(1, shape, dtype('u1'), False, raw bytes as a Python 2 str)``."""
    head = b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n" + _py2_int(0) + b"\x85" + _py2_str(b"b")
    head += b"\x87R"
    dtype = b"cnumpy\ndtype\n" + _py2_str(b"u1") + _py2_int(0) + _py2_int(1) + b"\x87R"
    dtype += b"(" + _py2_int(3) + _py2_str(b"|") + b"NNN" + _py2_int(-1) + _py2_int(-1) + _py2_int(0) + b"tb"
    shape = b"(" + b"".join(_py2_int(d) for d in a.shape) + b"t"
    return head + b"(" + _py2_int(1) + shape + dtype + b"\x89" + _py2_str(a.tobytes()) + b"tb"


def _py2_cifar_batch(data: np.ndarray, labels: list[int], name: str) -> bytes:
    """A batch file byte for byte in the layout of ``cifar-10-python.tar.gz`` (pickled by Python 2, protocol 2):
    a dict with str keys ``batch_label``, ``labels``, ``data`` (uint8 ``(N, 3072)``) and ``filenames``."""
    out = b"\x80\x02}(" + _py2_str(b"batch_label") + _py2_str(name.encode())
    out += _py2_str(b"labels") + b"](" + b"".join(_py2_int(v) for v in labels) + b"e"
    out += _py2_str(b"data") + _py2_uint8_array(data)
    out += (
        _py2_str(b"filenames")
        + b"]("
        + b"".join(_py2_str(b"img_%d.png" % i) for i in range(len(data)))
        + b"e"
    )
    return out + b"u."


def _write_cifar(root, n=6):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        (folder / name).write_bytes(_py2_cifar_batch(data, [k % 10 for k in range(n)], name))
    return folder


def test_cifar10_test_batches_are_python2_pickles_of_the_official_layout(tmp_path):
    folder = _write_cifar(tmp_path, n=2)
    raw = (folder / "data_batch_1").read_bytes()
    ops = {op.name for op, _, _ in pickletools.genops(raw)}
    assert "SHORT_BINSTRING" in ops and "SHORT_BINUNICODE" not in ops and "BINUNICODE" not in ops
    obj = pickle.loads(raw, encoding="bytes")  # how the CIFAR page says to read the release
    assert sorted(obj) == [b"batch_label", b"data", b"filenames", b"labels"]
    assert obj[b"data"].dtype == np.uint8 and obj[b"data"].shape == (2, 3072) and obj[b"labels"] == [0, 1]
    x = cifar10_split(folder).x_train  # channel-major rows: red 0..1023, green 1024.., blue 2048..
    assert torch.allclose(
        x[0, :, 0, 1], torch.tensor(obj[b"data"][0, [1, 1025, 2049]] / 255.0, dtype=x.dtype)
    )


def test_cifar10_from_a_user_path_and_a_recipe_run_end_to_end(tmp_path):
    folder = _write_cifar(tmp_path)
    d = cifar10_split(folder)
    assert d.x_train.shape == (30, 3, 32, 32) and d.x_test.shape == (6, 3, 32, 32)
    assert 0.0 <= float(d.x_train.min()) and float(d.x_train.max()) <= 1.0 and d.n_classes == 10
    assert load_data(f"cifar10:{tmp_path}", flatten=True).x_train.shape == (30, 3072)
    out = tmp_path / "run"
    args = ["train", "--data", f"cifar10:{folder}", "--model", "cnn", "--epochs", "2", "--batch-size", "8"]
    args += ["--scheduler", "step", "--warmup-epochs", "1", "--milestones", "1", "--gamma", "0.5"]
    args += ["--label-smoothing", "0.1", "--augment", "--delta-t", "2", "--out", str(out), "--quiet"]
    assert main(args) == 0
    cfg = json.loads((out / "train.json").read_text())
    assert cfg["invariants_ok"] and cfg["steps"] == 8


def test_cifar10_missing_batches_is_one_line(tmp_path, capsys):
    (tmp_path / "cifar-10-batches-py").mkdir()
    assert main(["train", "--data", f"cifar10:{tmp_path}", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "data_batch_1" in capsys.readouterr().err
