import json

import pytest
import torch

from iclr24.fastervit.train import TrainConfig
from iclr24.fastervit.train import _decay_groups
from iclr24.fastervit.train import _lr_at
from iclr24.fastervit.train import train

TINY = {"dim": 16, "in_dim": 8, "depths": [1, 1, 2, 1], "window_size": [7, 7, 2, 1]}


def test_lr_schedule_warmup_then_cosine():
    lrs = [_lr_at(s, 100, 10, 1.0, 0.0) for s in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:])) and lrs[-1] < 0.01


def test_training_on_builtin_digits_learns_and_writes_a_loadable_checkpoint(tmp_path):
    import timm

    cfg = TrainConfig(
        epochs=2,
        batch_size=64,
        lr=2e-3,
        warmup_epochs=0.2,
        img_size=32,
        model_kwargs=TINY,
        max_steps_per_epoch=8,
    )
    m = train(cfg, "digits", out=tmp_path, show_progress=False)
    assert m["final"]["n"] == 360 and m["final"]["top5"] >= m["final"]["top1"]
    assert m["final"]["top1"] > 0.3  # chance is 0.1
    ck = torch.load(tmp_path / "checkpoint.pth", weights_only=True)
    model = timm.create_model(
        "faster_vit_0_224",
        num_classes=10,
        checkpoint_path=str(tmp_path / "checkpoint.pth"),
        **ck["model_kwargs"],
    )
    assert model.head.out_features == 10
    assert json.loads((tmp_path / "metrics.json").read_text())["world_size"] == 1


@pytest.mark.slow
def test_torchrun_two_processes(tmp_path):
    from iclr24.paperkit.distributed import run_torchrun

    proc = run_torchrun(
        [
            "-m",
            "iclr24.fastervit.cli",
            "train",
            "digits",
            "--img-size",
            "32",
            "--epochs",
            "1",
            "--batch-size",
            "16",
            "--max-steps-per-epoch",
            "3",
            "--lr",
            "1e-3",
            "--quiet",
            "--model-kwargs",
            json.dumps(TINY),
            "--out",
            str(tmp_path),
        ],
        nproc=2,
        timeout=300,
    )
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["world_size"] == 2
    assert metrics["final"]["n"] == 360  # the validation split is covered once across both ranks
    assert proc.stdout.count("checkpoint in") == 1  # the summary from rank 0 only


def test_weight_decay_skips_biases_norms_and_layer_scale_gammas():
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 4)
            self.norm = torch.nn.LayerNorm(4)
            self.gamma_1 = torch.nn.Parameter(torch.ones(2, 4))  # a 2-D layer scale: no decay by its name

    m = Block()
    decay, no_decay = _decay_groups(m, 0.05)
    assert decay["weight_decay"] == 0.05 and no_decay["weight_decay"] == 0.0
    assert [id(p) for p in decay["params"]] == [id(m.fc.weight)]
    assert {id(p) for p in no_decay["params"]} == {
        id(m.fc.bias),
        id(m.norm.weight),
        id(m.norm.bias),
        id(m.gamma_1),
    }
