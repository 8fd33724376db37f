"""Model folders (save_pretrained / from_pretrained / save_model / load_model), the step log, your own triples as a
Dataset or DataLoader, and exact resume of an interrupted training."""

import json

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import Dataset
from torch.utils.data import TensorDataset

from iclr24.drum_rules import DRUM
from iclr24.drum_rules import TrainConfig
from iclr24.drum_rules import load_model
from iclr24.drum_rules import save_checkpoint
from iclr24.drum_rules import save_model
from iclr24.drum_rules import synthetic
from iclr24.drum_rules import train
from iclr24.drum_rules.cli import main
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.pretrained import load_pretrained
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.tracking import read_jsonl

CFG = TrainConfig(epochs=3, min_epochs=3, batch_size=16, lr=1e-2)


@pytest.fixture(scope="module")
def data():
    return synthetic.family(3, seed=0)


def _model(data, **kw):
    return DRUM(data.kg.n_relations, rank=2, steps=2, embed_dim=8, hidden_dim=8, seed=0, **kw)


def test_save_pretrained_round_trip_scores_the_same(tmp_path, data):
    m = _model(data, aggregation="mm")
    train(m, data, TrainConfig(epochs=1, min_epochs=1, batch_size=32))
    m.eval()
    folder = m.save_pretrained(tmp_path / "mm", provenance={"seed": 0})
    assert {p.name for p in folder.iterdir()} == {"model.safetensors", "config.json", "provenance.json"}
    back = DRUM.from_pretrained(folder)
    assert same_weights(m, back) and back.config() == m.config()
    assert back.head_relations == m.head_relations == sorted(set(data.train[:, 1].tolist()))
    assert np.array_equal(back.score_triples(data.test, data.kg), m.score_triples(data.test, data.kg))
    assert isinstance(load_pretrained(folder), DRUM)
    # a copy analysed in another semantics is saved as it is now
    nn_folder = m.copy_with(normalize=True, aggregation="sm").save_pretrained(tmp_path / "sm")
    assert (DRUM.from_pretrained(nn_folder).normalize, DRUM.from_pretrained(nn_folder).aggregation) == (
        True,
        "sm",
    )


def test_fixed_attention_survives_the_folder(tmp_path, make_attention):
    rng = np.random.default_rng(0)
    m = DRUM.with_fixed_attention({0: make_attention(rng, 2, 2, 3), 4: make_attention(rng, 2, 2, 3)}, 3)
    back = DRUM.from_pretrained(m.save_pretrained(tmp_path / "fixed"))
    assert back.has_fixed_attention and back.fixed_attention.dtype == torch.float64
    assert torch.equal(back.fixed_attention, m.fixed_attention) and torch.equal(back.fixed_mask, m.fixed_mask)
    assert back.head_relations == [0] and np.array_equal(back.attention_for(4), m.attention_for(4))


def test_save_model_records_beta_and_data_and_old_files_keep_loading(tmp_path, data, capsys):
    m = _model(data)
    save_model(tmp_path / "run" / "model", m, 0.25, "family:3", provenance={"command": "x"})
    prov = json.loads((tmp_path / "run" / "model" / "provenance.json").read_text())
    assert (prov["beta"], prov["data"], prov["command"]) == (0.25, "family:3", "x")
    for where in (tmp_path / "run" / "model", tmp_path / "run"):  # the model folder or its run folder
        back, beta, spec = load_model(where)
        assert (beta, spec) == (0.25, "family:3") and same_weights(back, m) and not back.training
    old = save_checkpoint(tmp_path / "old" / "model.pt", m, 0.5, "family:3")
    for where in (old, old.parent):
        back, beta, spec = load_model(where)
        assert (beta, spec) == (0.5, "family:3") and same_weights(back, m)
    assert main(["eval", "--model", str(old), "--quiet"]) == 0  # the CLI reads the old file format
    assert '"mrr"' in capsys.readouterr().out
    bare = m.save_pretrained(tmp_path / "bare")  # no beta recorded: load_model says so, the CLI refuses
    assert load_model(bare)[1:] == (None, None)
    assert main(["eval", "--model", str(bare), "--quiet"]) == 2
    assert "records no beta" in capsys.readouterr().err


def test_bad_model_folders_are_one_input_file_error(tmp_path, data):
    m = _model(data)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("x")
    with pytest.raises(InputFileError, match="folder without a model"):
        load_model(tmp_path / "junk")
    with pytest.raises(InputFileError, match="does not exist"):
        load_model(tmp_path / "nowhere")
    folder = save_model(tmp_path / "ok", m, 0.1, "family:3")
    w = folder / "model.safetensors"
    w.write_bytes(w.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(InputFileError, match="does not match its provenance"):
        load_model(folder)
    with pytest.raises(InputError, match="beta"):
        save_model(tmp_path / "neg", m, -1.0, "family:3")
    with pytest.raises(InputError, match="a DRUM"):
        save_model(tmp_path / "x", object(), 0.1, "family:3")


def test_step_log_writes_every_step_and_changes_nothing(tmp_path, data):
    seen = []
    a, b = _model(data), _model(data)
    hist = train(
        a, data, CFG, callbacks=lambda step, m: seen.append((step, dict(m))), log_dir=tmp_path / "log"
    )
    plain = train(b, data, CFG)
    assert same_weights(a, b) and hist["train_loss"] == plain["train_loss"]
    steps = [s for s, m in seen if "loss" in m]
    assert steps == list(range(1, hist["steps"] + 1)) and hist["steps"] > 0
    epochs = [m for _, m in seen if "valid_loss" in m]
    assert [m["valid_loss"] for m in epochs] == hist["valid_loss"]
    rows = read_jsonl(tmp_path / "log" / "metrics.jsonl")
    assert len(rows) == len(seen) + 1 and rows[0]["step"] == 1 and rows[0]["loss"] == seen[0][1]["loss"]
    assert rows[-1]["event"] == "end" and rows[-1]["steps"] == hist["steps"]


class _Triples(Dataset):
    """A user's map-style dataset of (h, r, t) items, three ints each."""

    def __init__(self, triples):
        self.t = triples

    def __len__(self):
        return len(self.t)

    def __getitem__(self, i):
        h, r, t = self.t[i]
        return int(h), int(r), int(t)


def test_a_users_dataset_or_loader_trains_like_the_array(data):
    ref = _model(data)
    hist = train(ref, data, CFG)
    tri = torch.as_tensor(data.train)
    for queries in (
        DataLoader(TensorDataset(tri), batch_size=7),  # (B, 3) batches
        _Triples(data.train),  # (h, r, t) items
        DataLoader(_Triples(data.train), batch_size=5),  # three (B,) fields per batch
        tri,
    ):
        m = _model(data)
        h = train(m, data, CFG, queries=queries)
        assert same_weights(m, ref) and h["train_loss"] == hist["train_loss"], type(queries).__name__
    for bad, match in (
        (DataLoader(TensorDataset(tri[:, :2]), batch_size=4), r"\(n, 3\)"),
        (DataLoader(TensorDataset(tri, tri), batch_size=4), "fields"),
        (torch.tensor([[0, 0, 10**6]]), "out of range"),
        (torch.zeros(0, 3, dtype=torch.long), "no training triples"),
        ("triples.txt", "expected a tensor"),
    ):
        with pytest.raises(InputError, match=match):
            train(_model(data), data, CFG, queries=bad)


class _Interrupt(Exception):
    pass


def test_an_interrupted_training_resumed_equals_the_uninterrupted_one(tmp_path, data):
    cfg = TrainConfig(epochs=4, min_epochs=4, batch_size=16, lr=1e-2)
    ref = _model(data)
    full = train(ref, data, cfg, checkpoint=tmp_path / "ref.pt")
    stop_at = full["steps"] // 2 + 1  # in the middle of an epoch after the first

    def interrupt(step, metrics):
        if step == stop_at:
            raise _Interrupt

    m = _model(data)
    with pytest.raises(_Interrupt):
        train(m, data, cfg, callbacks=interrupt, checkpoint=tmp_path / "state.pt")
    torch.manual_seed(123)  # the resumed process's global RNG differs: the saved state is restored
    resumed = _model(data)
    steps = []
    hist = train(
        resumed,
        data,
        cfg,
        checkpoint=tmp_path / "state.pt",
        resume=True,
        callbacks=lambda s, _: steps.append(s),
    )
    assert same_weights(resumed, ref)
    assert hist["train_loss"] == full["train_loss"] and hist["valid_loss"] == full["valid_loss"]
    assert hist["steps"] == full["steps"] and steps[0] > 1  # it continued, it did not start again
    with pytest.raises(InputError, match="lr"):
        train(_model(data), data, TrainConfig(epochs=4, min_epochs=4, batch_size=16, lr=1e-3),
              checkpoint=tmp_path / "state.pt", resume=True)  # fmt: skip
    with pytest.raises(InputError, match="checkpoint="):
        train(_model(data), data, cfg, resume=True)


def test_cli_train_writes_a_model_folder_logs_and_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", "family:3", "--rank", "2", "--embed-dim", "8", "--hidden-dim", "8", "--epochs", "2",
            "--batch-size", "16", "--out", str(out), "--quiet"]  # fmt: skip
    assert main([*args, "--log-dir", str(tmp_path / "log")]) == 0
    assert "saved" in capsys.readouterr().out
    prov = json.loads((out / "model" / "provenance.json").read_text())
    assert prov["command"].startswith("drum-rules train family:3") and "--log-dir" in prov["command"]
    assert prov["seed"] == 0 and prov["steps"] > 0 and prov["cpu_seconds"] > 0 and prov["data"] == "family:3"
    rows = read_jsonl(tmp_path / "log" / "metrics.jsonl")
    assert sum("loss" in r for r in rows) == prov["steps"]
    first, beta, _ = load_model(out / "model")
    assert beta == prov["beta"]
    assert main(args) == 2  # the run is there: --resume or --overwrite
    assert "--overwrite" in capsys.readouterr().err
    assert main([*args, "--resume"]) == 0  # nothing left to train: the same model
    assert same_weights(load_model(out / "model")[0], first)
    assert main([*args, "--resume", "--lr", "0.01"]) == 2  # another run's settings
    assert "lr" in capsys.readouterr().err
