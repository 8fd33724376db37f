"""Train -> model folder -> from_pretrained -> evaluate, your own Dataset/DataLoader, per-step logging and exact
resume of `train`."""

import json

import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import RandomSampler
from torch.utils.data import TensorDataset

from iclr24.fastervit import FasterViT
from iclr24.fastervit import read_state_dict
from iclr24.fastervit.data import digits_dataset
from iclr24.fastervit.predict import predict
from iclr24.fastervit.train import TrainConfig
from iclr24.fastervit.train import evaluate
from iclr24.fastervit.train import train
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.runner.testing_workflow import same_weights

TINY = {"dim": 16, "in_dim": 8, "depths": [1, 1, 2, 1], "window_size": [7, 7, 2, 1]}


def _cfg(**kw):
    base = dict(epochs=2, batch_size=32, lr=2e-3, warmup_epochs=0.2, img_size=32, model_kwargs=TINY)
    return TrainConfig(**{**base, "max_steps_per_epoch": 3, **kw})


class _Stop(Exception):
    pass


def test_interrupted_and_resumed_run_equals_the_uninterrupted_one(tmp_path):
    # mixup (numpy RNG), random erasing (torch + python RNG), drop path and EMA: every RNG the loop draws from
    cfg = _cfg(mixup=0.8, reprob=0.25, model_ema_decay=0.9)
    full = train(cfg, "digits", out=tmp_path / "full", show_progress=False)

    def stop_in_epoch_2(step, metrics):
        if step == 5 and "loss" in metrics:
            raise _Stop

    with pytest.raises(_Stop):
        train(cfg, "digits", out=tmp_path / "cut", show_progress=False, callbacks=stop_in_epoch_2)
    assert (tmp_path / "cut" / "train_state.pt").is_file() and not (tmp_path / "cut" / "model").exists()
    resumed = train(cfg, "digits", out=tmp_path / "cut", show_progress=False, resume=True)
    assert resumed["resumed_from_epoch"] == 1 and full["resumed_from_epoch"] is None
    assert resumed["history"] == full["history"]  # every loss and accuracy, bit for bit
    for folder in ("model", "model_ema"):
        a = FasterViT.from_pretrained(tmp_path / "full" / folder)
        b = FasterViT.from_pretrained(tmp_path / "cut" / folder)
        assert same_weights(a, b)
    prov = json.loads((tmp_path / "cut" / "model" / "provenance.json").read_text())
    assert (
        prov["resumed_from_epoch"] == 1
        and prov["steps"] == 6
        and prov["classes"] == [str(i) for i in range(10)]
    )


def test_resume_refuses_nothing_to_resume_and_another_run(tmp_path):
    with pytest.raises(InputFileError, match="nothing to resume"):
        train(_cfg(), "digits", out=tmp_path / "none", show_progress=False, resume=True)
    train(_cfg(epochs=1), "digits", out=tmp_path / "a", show_progress=False)
    with pytest.raises(InputError, match="epochs"):
        train(_cfg(epochs=3), "digits", out=tmp_path / "a", show_progress=False, resume=True)
    with pytest.raises(InputError, match="resume must be"):
        train(_cfg(), "digits", out=tmp_path / "a", show_progress=False, resume=3)


def test_model_folder_round_trip_and_every_reader_takes_it(tmp_path):
    cfg = _cfg(epochs=1)
    m = train(cfg, "digits", out=tmp_path, show_progress=False, log_dir=tmp_path / "logs")
    folder = tmp_path / "model"
    assert {p.name for p in folder.iterdir()} == {"model.safetensors", "config.json", "provenance.json"}
    model = FasterViT.from_pretrained(folder)
    assert model.pretrained_cfg["architecture"] == "faster_vit_0_224"  # timm's data config comes back
    assert model.pretrained_cfg["crop_pct"] == 0.875 and model.pretrained_cfg["input_size"] == (3, 224, 224)
    _, val, _ = digits_dataset(size=32)
    assert evaluate(model, val)["top1"] == m["final"]["top1"]  # the saved weights are the evaluated ones
    # the same weights as the timm-format checkpoint.pth, read four ways
    old = read_state_dict(tmp_path / "checkpoint.pth")
    for sd in (read_state_dict(folder), read_state_dict(folder / "model.safetensors"), model.state_dict()):
        assert all(torch.equal(sd[k], old[k]) for k in old)
    import timm

    via_timm = timm.create_model(
        "faster_vit_0_224",
        num_classes=10,
        checkpoint_path=str(folder / "model.safetensors"),
        resolution=32,
        **TINY,
    )
    assert same_weights(via_timm, model)
    img = tmp_path / "digit.png"
    from PIL import Image

    Image.new("RGB", (32, 32), (200, 30, 30)).save(img)
    assert predict(img, folder, topk=3) == predict(img, tmp_path / "checkpoint.pth", topk=3)
    prov = json.loads((folder / "provenance.json").read_text())
    assert prov["steps"] == 3 and prov["seed"] == 0 and prov["cpu_seconds"] > 0 and "command" in prov
    rows = [json.loads(line) for line in (tmp_path / "logs" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "lr" in r] == [1, 2, 3]
    assert rows[-2]["val_top1"] == m["final"]["top1"] and rows[-1]["event"] == "end"


def test_a_folder_that_is_not_a_fastervit_model_folder_is_refused(tmp_path):
    with pytest.raises(InputFileError, match="config.json"):
        FasterViT.from_pretrained(tmp_path)
    import timm

    with pytest.raises(InputFileError, match="model.safetensors"):
        timm.create_model("faster_vit_0_224", checkpoint_path=str(tmp_path), **TINY)
    from PIL import Image

    Image.new("RGB", (32, 32)).save(tmp_path / "x.png")
    with pytest.raises(InputFileError, match="config.json"):
        predict(tmp_path / "x.png", tmp_path)


def test_your_own_dataset_or_dataloader_gives_the_same_run_as_the_builtin_data(tmp_path):
    cfg = _cfg(epochs=1)
    ref = train(cfg, "digits", show_progress=False)
    tr, val, classes = digits_dataset(size=32)
    own = train(cfg, tr, val_data=val, classes=classes, show_progress=False)
    assert own["history"] == ref["history"]
    # a DataLoader is iterated as given: the built-in sampler, batch and drop_last reproduce the run
    sampler = RandomSampler(tr, generator=torch.Generator().manual_seed(cfg.seed))
    dl = DataLoader(tr, batch_size=cfg.batch_size, sampler=sampler, drop_last=True)
    loader_run = train(cfg, dl, val_data=DataLoader(val, batch_size=32), classes=10, show_progress=False)
    assert loader_run["history"] == ref["history"]
    steps = []
    train(cfg, dl, val_data=val, classes=10, show_progress=False, callbacks=lambda s, m: steps.append(s))
    assert steps[:3] == [1, 2, 3]


def test_your_own_data_of_the_wrong_kind_is_one_clear_error():
    cfg = _cfg(epochs=1)
    tr, val, classes = digits_dataset(size=32)
    x, y = tr.tensors
    with pytest.raises(InputError, match="val_data"):
        train(cfg, tr, show_progress=False)
    with pytest.raises(InputError, match="classes"):
        train(cfg, TensorDataset(x, y), val_data=val, show_progress=False)
    with pytest.raises(InputError, match="expected 'digits'"):
        train(cfg, x, val_data=val, classes=10, show_progress=False)
    with pytest.raises(InputError, match="labels must be class indices"):
        train(cfg, TensorDataset(x, y + 10), val_data=val, classes=10, show_progress=False)
    with pytest.raises(InputError, match="images must be float"):
        train(cfg, TensorDataset(x[:, :1], y), val_data=val, classes=10, show_progress=False)
    with pytest.raises(InputError, match="a batch must be"):
        train(cfg, TensorDataset(x, y, y), val_data=val, classes=10, show_progress=False)
    with pytest.raises(InputError, match="evaluate needs"):
        evaluate(FasterViT(**TINY, resolution=32), x)


_RANK_SCRIPT = """
import json, os, shutil, sys
from pathlib import Path
from iclr24.fastervit.train import TrainConfig, train

folder, rank = Path(sys.argv[1]), int(os.environ["RANK"])
tiny = {"dim": 16, "in_dim": 8, "depths": [1, 1, 2, 1], "window_size": [7, 7, 2, 1]}
cfg = TrainConfig(epochs=2, batch_size=16, lr=1e-3, warmup_epochs=0.2, img_size=32, model_kwargs=tiny,
                  max_steps_per_epoch=2, reprob=0.25)
state = folder.parent / "epoch1.pt"

def snapshot(step, metrics):  # rank 0, first step of epoch 2: keep the state saved after epoch 1
    if step == 3 and "lr" in metrics:
        shutil.copy(folder / "run" / "train_state.pt", state)

if folder.name == "full":
    res = train(cfg, "digits", out=folder / "run", show_progress=False, callbacks=snapshot)
else:
    res = train(cfg, "digits", show_progress=False, resume=state)
json.dump({"history": res["history"], "from": res["resumed_from_epoch"]}, open(folder / f"r{rank}.json", "w"))
"""


@pytest.mark.slow
def test_torchrun_resume_continues_every_rank_exactly(tmp_path):
    from iclr24.paperkit.runner.testing import run_rank_script

    (tmp_path / "full").mkdir()
    (tmp_path / "resumed").mkdir()
    full = run_rank_script(_RANK_SCRIPT, tmp_path / "full", nproc=2, timeout=300)
    resumed = run_rank_script(_RANK_SCRIPT, tmp_path / "resumed", nproc=2, timeout=300)
    for a, b in zip(
        full, resumed
    ):  # each rank's own train loss (its dropout and erasing draws), the validation
        assert a["from"] is None and b["from"] == 1 and b["history"] == a["history"]
    assert full[0]["history"][-1]["train_loss"] != full[1]["history"][-1]["train_loss"]  # the ranks do differ
