"""The model folder (save_pretrained / from_pretrained, and what `asmr fit` writes), your own Dataset or DataLoader
of points, the step callbacks and exact resume of fit."""

import json
import shlex

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import TensorDataset

from iclr24.asmr import ASMR
from iclr24.asmr import SIREN
from iclr24.asmr import fit
from iclr24.asmr import grid_coords
from iclr24.asmr import save_signal
from iclr24.asmr import signal_from_points
from iclr24.asmr.cli import load_checkpoint
from iclr24.asmr.cli import main
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.pretrained import load_pretrained
from iclr24.paperkit.runner.testing_workflow import Stopped
from iclr24.paperkit.runner.testing_workflow import run_interrupted
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.runner.testing_workflow import stop_at
from iclr24.paperkit.tracking import read_jsonl

BASES = [[2, 2, 4], [2, 2, 4]]


@pytest.fixture(scope="module")
def img():
    return np.random.default_rng(0).random((16, 16)).astype(np.float32)


def _asmr(seed=0, **kw):
    torch.manual_seed(seed)
    return ASMR(2, 1, (16, 16), BASES, hidden=8, **kw)


def test_a_users_dataset_or_loader_of_points_fits_the_same_model(img):
    ref = _asmr()
    ref_res = fit(ref, img, 5, lr=1e-3)
    coords = grid_coords((16, 16))
    vals = torch.from_numpy(img).reshape(-1, 1)
    perm = torch.randperm(256, generator=torch.Generator().manual_seed(1))
    for data in (
        TensorDataset(coords, vals),
        DataLoader(TensorDataset(coords, vals), batch_size=50),
        TensorDataset(coords[perm], vals[perm, 0]),
    ):  # any order; scalar values for one channel
        m = _asmr()
        res = fit(m, data, 5, lr=1e-3)
        assert res.losses == ref_res.losses and same_weights(m, ref)
    assert torch.equal(signal_from_points(TensorDataset(coords[perm], vals[perm]), (16, 16), 1)[..., 0],
                       torch.from_numpy(img))  # fmt: skip
    with pytest.raises(InputError, match="once each"):
        fit(_asmr(), TensorDataset(coords[:-1], vals[:-1]), 1)


@pytest.mark.parametrize(
    "make", [lambda: _asmr(modulator="nonlinear"), lambda: SIREN(2, 3, (6, 10), hidden=8)]
)
def test_save_pretrained_round_trip(make, tmp_path):
    m = make()
    folder = m.save_pretrained(tmp_path / "m", provenance={"steps": 0})
    cfg = json.loads((folder / "config.json").read_text())["config"]
    assert cfg == {k: v for k, v in m.config().items() if k != "model"}
    state = torch.get_rng_state()
    for back in (type(m).from_pretrained(folder), load_pretrained(folder)):
        assert type(back) is type(m) and same_weights(back, m) and back.config() == m.config()
        with torch.no_grad():
            assert torch.equal(back.render(), m.render())
    assert torch.equal(state, torch.get_rng_state())  # loading draws nothing from the global RNG
    cfg_doc = json.loads((folder / "config.json").read_text())
    cfg_doc["config"]["hidden"] = 0
    (folder / "config.json").write_text(json.dumps(cfg_doc))
    with pytest.raises(InputFileError, match="hidden"):
        type(m).from_pretrained(folder)


def test_callbacks_and_log_dir(img, tmp_path):
    seen = []
    res = fit(_asmr(), img, 6, lr=1e-3, callbacks=lambda s, m: seen.append((s, m)), log_dir=tmp_path / "l")
    assert [s for s, _ in seen] == list(range(6)) and [m["loss"] for _, m in seen] == res.losses
    assert seen[0][1]["lr"] == 1e-3 and seen[-1][1]["lr"] < 1e-3 and "psnr" in seen[0][1]
    rows = read_jsonl(tmp_path / "l" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [*range(6), -1]
    assert fit(_asmr(), img, 6, lr=1e-3).losses == res.losses  # logging changes nothing


@pytest.mark.parametrize(
    "kw", [{}, {"batch_size": 32}, {"batch_size": 32, "sampler": "grid", "grid_cells": (4, 4)}]
)
def test_an_interrupted_fit_resumed_equals_the_uninterrupted_fit(img, tmp_path, kw):
    steps = 16
    ref = _asmr()
    ref_res = fit(ref, img, steps, lr=1e-3, seed=3, **kw)

    stop = stop_at(10)

    path = tmp_path / "state.pt"
    with pytest.raises(Stopped):
        fit(_asmr(), img, steps, lr=1e-3, seed=3, checkpoint=path, checkpoint_every=8, callbacks=stop, **kw)
    seen = []
    m = _asmr(seed=99)  # another init: the state replaces it
    res = fit(
        m,
        img,
        steps,
        lr=1e-3,
        seed=3,
        checkpoint=path,
        resume=True,
        callbacks=lambda s, _: seen.append(s),
        **kw,
    )
    assert (
        seen == list(range(8, 16))
        and res.losses == ref_res.losses
        and same_weights(m, ref)
        and res.psnr == ref_res.psnr
    )
    with pytest.raises(InputError, match="lr"):
        fit(_asmr(), img, steps, lr=2e-3, seed=3, checkpoint=path, resume=True, **kw)
    with pytest.raises(InputError, match="needs checkpoint"):
        fit(_asmr(), img, steps, resume=True, **kw)


def test_cli_fit_writes_the_model_folder_and_resumes(tmp_path):
    save_signal(np.random.default_rng(0).random((8, 12, 3)), tmp_path / "in.png", "image")
    base = ["fit", str(tmp_path / "in.png"), "--bases", "2,2,2;2,2,3", "--hidden", "8", "--steps", "6", "--quiet",
            "--checkpoint-every", "2"]  # fmt: skip
    args = [*base, "--checkpoint", str(tmp_path / "a"), "--log-dir", str(tmp_path / "logs")]
    assert main(args) == 0
    prov = json.loads((tmp_path / "a" / "provenance.json").read_text())
    assert prov["command"] == shlex.join(["asmr", *args]) and prov["steps"] == 6 and prov["seed"] == 0
    assert prov["signal"]["kind"] == "image" and prov["signal"]["value_range"] == [0.0, 1.0]
    assert not (tmp_path / "a.train_state.pt").exists()  # removed once the fit ended
    assert [r["step"] for r in read_jsonl(tmp_path / "logs" / "metrics.jsonl")] == [*range(6), -1]
    model, meta = load_checkpoint(tmp_path / "a")
    assert isinstance(model, ASMR) and meta["kind"] == "image"
    # the older single-file checkpoint of the same fit renders the same image
    assert main([*base, "--checkpoint", str(tmp_path / "old.pt")]) == 0
    for ck, name in ((tmp_path / "a", "new"), (tmp_path / "old.pt", "old")):
        assert main(["render", str(ck), str(tmp_path / f"{name}.npy")]) == 0
    assert np.array_equal(np.load(tmp_path / "new.npy"), np.load(tmp_path / "old.npy"))
    # a fit interrupted (Ctrl-C) at step 3, continued with --resume: the uninterrupted fit's weights
    assert run_interrupted(main, [*base, "--checkpoint", str(tmp_path / "b")], at_step=3) == 130
    assert (tmp_path / "b.train_state.pt").is_file() and not (tmp_path / "b").exists()
    assert main([*base, "--checkpoint", str(tmp_path / "b"), "--resume"]) == 0
    wa, wb = ((tmp_path / n / "model.safetensors").read_bytes() for n in "ab")
    assert wa == wb
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    assert main([*base, "--checkpoint", str(tmp_path / "busy")]) == 2
