"""The official training config group: lr schedules with warm-up, label smoothing, crop + flip, CIFAR-10 loading."""

import json
import pickle

import numpy as np
import pytest
import torch

from iclr24.srigl.cli import main
from iclr24.srigl.data import cifar10_split, load_data
from iclr24.srigl.train import CIFAR10_RECIPE, IMAGENET_RECIPE, TrainConfig, augment_batch, lr_lambda


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


def _write_cifar(root, n=6):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {
            "data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
            "labels": [k % 10 for k in range(n)],
        }
        with open(folder / name, "wb") as fh:
            pickle.dump(batch, fh, protocol=2)
    return folder


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
