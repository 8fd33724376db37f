"""The model folder (save_pretrained / from_pretrained), your own Dataset or DataLoader, step callbacks and exact
resume of train."""

import json

import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import TensorDataset

from iclr24.lace import LaceConfig
from iclr24.lace import encode_layout
from iclr24.lace import generate
from iclr24.lace import load_any_checkpoint
from iclr24.lace import load_checkpoint
from iclr24.lace import synthetic_aligned_layouts
from iclr24.lace import train
from iclr24.lace.model import LayoutDenoiser
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.pretrained import load_pretrained
from iclr24.paperkit.runner.testing_workflow import Stopped
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.runner.testing_workflow import stop_at
from iclr24.paperkit.tracking import read_jsonl

CFG = dict(dim=8, heads=2, layers=1, ff=16, batch_size=8)


@pytest.fixture(scope="module")
def layouts():
    return synthetic_aligned_layouts(24, seed=0)


def _tokens(cfg, layouts):
    return encode_layout(*layouts, cfg.num_classes, cfg.max_elements)


def test_a_users_dataset_or_loader_trains_the_same_model(layouts):
    cfg = LaceConfig(**CFG)
    tok = _tokens(cfg, layouts)
    ref, ref_hist = train(cfg, tok, steps=3)
    for data in (TensorDataset(tok), DataLoader(TensorDataset(tok), batch_size=5), TensorDataset(*layouts),
                 DataLoader(TensorDataset(*layouts), batch_size=7)):  # fmt: skip
        model, hist = train(cfg, data, steps=3)
        assert hist == ref_hist and same_weights(model, ref)


def test_a_wrong_loader_is_one_input_error(layouts):
    cfg = LaceConfig(**CFG)
    bbox, labels, mask = layouts
    with pytest.raises(InputError, match="fields"):
        train(cfg, TensorDataset(bbox, labels), steps=1)
    with pytest.raises(InputError, match="tokens"):
        train(cfg, TensorDataset(bbox), steps=1)  # boxes are not tokens
    with pytest.raises(InputError):
        train(cfg, TensorDataset(bbox, labels + 100, mask), steps=1)  # labels out of range
    with pytest.raises(InputError, match="empty"):
        train(cfg, DataLoader(TensorDataset(bbox[:0])), steps=1)


@pytest.mark.parametrize("kw", [{}, {"time_embedding": "sinusoidal", "ema": 0.9}])
def test_save_pretrained_round_trip(layouts, tmp_path, kw):
    cfg = LaceConfig(**CFG, **kw, ddim_steps=7)
    model, _ = train(cfg, _tokens(cfg, layouts), steps=3)
    folder = model.save_pretrained(tmp_path / "m", provenance={"steps": 3})
    saved = json.loads((folder / "config.json").read_text())["config"]["lace_config"]
    assert saved["dim"] == 8 and saved["ddim_steps"] == 7 and saved["categories"] == list(cfg.categories)
    cond = tuple(t[:3] for t in layouts)
    want = generate(model, cfg, "c", layouts=cond, steps=4, seed=1)
    state = torch.get_rng_state()
    for back, bcfg in ((m := LayoutDenoiser.from_pretrained(folder), m.lace_config), load_checkpoint(folder),
                       load_any_checkpoint(folder), ((p := load_pretrained(folder)), p.lace_config)):  # fmt: skip
        assert same_weights(back, model) and bcfg == model.lace_config == cfg
        got = generate(back.eval(), bcfg, "c", layouts=cond, steps=4, seed=1)
        assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert torch.equal(state, torch.get_rng_state())  # loading draws nothing from the global RNG
    with pytest.raises(InputError, match="categories"):
        load_checkpoint(folder, categories=("a", "b"))


def test_a_plain_denoiser_round_trips_and_bad_folders_are_refused(tmp_path):
    plain = LayoutDenoiser(9, 6, dim=8, heads=2, layers=1, ff=16, num_timesteps=50)
    folder = plain.save_pretrained(tmp_path / "plain")
    assert json.loads((folder / "config.json").read_text())["config"]["seq_dim"] == 9
    assert same_weights(LayoutDenoiser.from_pretrained(folder), plain)
    with pytest.raises(InputFileError, match="without its LaceConfig"):
        load_checkpoint(folder)
    cfg = LaceConfig(**CFG)
    folder = train(cfg, torch.zeros(4, cfg.max_elements, cfg.seq_dim), steps=1)[0].save_pretrained(
        tmp_path / "m"
    )
    doc = json.loads((folder / "config.json").read_text())
    for change, match in (
        ({"dim": 7}, "divisible"),
        ({"nope": 1}, "nope"),
        ({"dim": 16, "ff": 32}, "does not fit"),
    ):
        (folder / "config.json").write_text(
            json.dumps({**doc, "config": {"lace_config": {**doc["config"]["lace_config"], **change}}})
        )
        with pytest.raises(InputFileError, match=match):
            load_checkpoint(folder)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputFileError, match="config.json is missing"):
        load_any_checkpoint(tmp_path / "empty")


def test_callbacks_and_log_dir_see_every_step(layouts, tmp_path):
    cfg = LaceConfig(**CFG)
    tok = _tokens(cfg, layouts)
    seen = []
    model, hist = train(
        cfg, tok, steps=4, callbacks=lambda s, m: seen.append((s, m["loss"])), log_dir=tmp_path / "l"
    )
    assert seen == [(h["step"], h["loss"]) for h in hist]
    rows = read_jsonl(tmp_path / "l" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3, -1] and rows[2]["rec"] == hist[2]["rec"]
    plain, plain_hist = train(cfg, tok, steps=4)
    assert plain_hist == hist and same_weights(plain, model)  # logging changes nothing


def test_an_interrupted_train_resumed_equals_the_uninterrupted_train(layouts, tmp_path):
    cfg = LaceConfig(**CFG, ema=0.5)
    tok = _tokens(cfg, layouts)
    ref, ref_hist = train(cfg, tok, steps=9)

    stop = stop_at(7)

    path = tmp_path / "state.pt"
    with pytest.raises(Stopped):
        train(cfg, tok, steps=9, checkpoint=path, checkpoint_every=3, callbacks=stop)
    seen = []
    model, hist = train(
        cfg, tok, steps=9, checkpoint=path, resume=True, callbacks=lambda s, m: seen.append(s)
    )
    assert seen == [6, 7, 8] and hist == ref_hist and same_weights(model, ref)  # the EMA model, continued
    with pytest.raises(InputError, match="steps"):
        train(cfg, tok, steps=12, checkpoint=path, resume=True)
    with pytest.raises(InputError, match="needs checkpoint"):
        train(cfg, tok, steps=9, resume=True)
    with pytest.raises(InputFileError, match="folder"):
        train(cfg, tok, steps=9, checkpoint=tmp_path)
