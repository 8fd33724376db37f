"""paperkit's model-folder format (save_pretrained / from_pretrained) and the step-logging hook."""

import json

import pytest
import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.pretrained import PretrainedMixin
from iclr24.paperkit.pretrained import load_pretrained
from iclr24.paperkit.pretrained import read_model_folder
from iclr24.paperkit.tracking import StepLog
from iclr24.paperkit.tracking import read_jsonl


class Tiny(PretrainedMixin, nn.Module):
    def __init__(self, d_in: int = 3, *, hidden: int = 4, act: str = "tanh"):
        super().__init__()
        self.a = nn.Linear(d_in, hidden)
        self.b = nn.Linear(hidden, 1)
        self.b.weight = nn.Parameter(self.b.weight)  # a plain parameter
        self.act = act

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


class Tied(PretrainedMixin, nn.Module):
    def __init__(self, n: int = 5):
        super().__init__()
        self.emb = nn.Embedding(n, 3)
        self.out = nn.Linear(3, n, bias=False)
        self.out.weight = self.emb.weight


def test_round_trip_rebuilds_the_same_model_and_records_provenance(tmp_path):
    torch.manual_seed(0)
    m = Tiny(5, hidden=7)
    folder = m.save_pretrained(tmp_path / "m", provenance={"command": "demo train", "steps": 3})
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors", "provenance.json"]
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["config"] == {"d_in": 5, "hidden": 7, "act": "tanh"} and cfg["class"].endswith("Tiny")
    prov = json.loads((folder / "provenance.json").read_text())
    assert prov["command"] == "demo train" and prov["steps"] == 3 and len(prov["weights_sha256"]) == 64
    back = Tiny.from_pretrained(folder)
    x = torch.randn(2, 5)
    assert torch.equal(back(x), m(x)) and back.a.out_features == 7
    assert torch.equal(load_pretrained(folder)(x), m(x))
    # saving again replaces the folder whole
    Tiny(5, hidden=2).save_pretrained(folder)
    assert Tiny.from_pretrained(folder).a.out_features == 2


def test_tied_weights_save_and_load(tmp_path):
    t = Tied()
    back = Tied.from_pretrained(t.save_pretrained(tmp_path / "t"))
    assert torch.equal(back.emb.weight, t.emb.weight)


class Built(PretrainedMixin, nn.Module):
    """A model whose constructor takes modules: a factory and from_pretrained_config rebuild it."""

    def __init__(self, body: nn.Module):
        super().__init__()
        self.body = body
        self.width = body.out_features

    def pretrained_config(self) -> dict:
        return {"width": self.width}

    @classmethod
    def from_pretrained_config(cls, *, width: int) -> "Built":
        if width < 1:
            raise InputError(f"width must be positive, got {width}")
        return cls(nn.Linear(2, width))


def test_a_factory_built_model_rebuilds_through_from_pretrained_config(tmp_path):
    m = Built(nn.Linear(2, 3))
    folder = m.save_pretrained(tmp_path / "b")
    x = torch.randn(4, 2)
    for back in (Built.from_pretrained(folder), load_pretrained(folder)):
        assert torch.equal(back.body(x), m.body(x))
    cfg = json.loads((folder / "config.json").read_text())
    cfg["config"]["width"] = 0  # the factory's own check: one error naming config.json
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(InputFileError, match="config.json: its config does not build"):
        Built.from_pretrained(folder)


def test_a_changed_weight_file_is_refused(tmp_path):
    folder = Tiny().save_pretrained(tmp_path / "m")
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[-1] ^= 1
    (folder / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(InputFileError, match="does not match its provenance"):
        Tiny.from_pretrained(folder)


@pytest.mark.parametrize("fault", ["missing", "file", "no_config", "bad_json", "foreign", "empty_weights"])
def test_broken_folders_give_one_clear_error(tmp_path, fault):
    folder = Tiny().save_pretrained(tmp_path / "m")
    if fault == "missing":
        folder = tmp_path / "nope"
    elif fault == "file":
        folder = tmp_path / "f.txt"
        folder.write_text("x")
    elif fault == "no_config":
        (folder / "config.json").unlink()
    elif fault == "bad_json":
        (folder / "config.json").write_bytes(b"\xff\xfe{")
    elif fault == "foreign":
        (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))
    elif fault == "empty_weights":
        (folder / "model.safetensors").write_bytes(b"")
    with pytest.raises(InputFileError) as e:
        read_model_folder(folder)
    assert str(folder.name) in str(e.value) and "weights_only" not in str(e.value)


def test_wrong_class_and_non_json_config_are_refused(tmp_path):
    folder = Tiny().save_pretrained(tmp_path / "m")
    with pytest.raises(InputFileError, match="not a"):
        Tied.from_pretrained(folder)
    with pytest.raises(InputError, match="JSON"):
        Tiny(act=object()).save_pretrained(tmp_path / "x")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(InputFileError, match="holds no model"):
        Tiny().save_pretrained(tmp_path / "busy")


def test_step_log_writes_jsonl_calls_callbacks_and_logging(tmp_path, caplog):
    seen = []

    class CB:
        def on_step(self, step, metrics):
            seen.append((step, metrics["loss"]))

        def on_end(self, summary):
            seen.append(("end", summary["acc"]))

    import logging

    caplog.set_level(logging.DEBUG, logger="iclr24.demo")
    with StepLog(tmp_path / "logs", [CB(), lambda s, m: seen.append(("fn", s))], name="demo", every=2) as log:
        for step in range(4):
            log(step, {"loss": torch.tensor(1.0 / (step + 1)), "lr": 0.1, "note": "x", "bad": float("nan")})
        log.close({"acc": 0.9})
    rows = read_jsonl(tmp_path / "logs" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 2, -1] and rows[1]["loss"] == pytest.approx(1 / 3)
    assert rows[0]["bad"] is None and rows[0]["note"] == "x" and rows[-1]["acc"] == 0.9
    assert (4, 0.25) not in seen and (3, 0.25) in seen and ("end", 0.9) in seen and ("fn", 3) in seen
    assert any("step 2" in r.getMessage() for r in caplog.records)


def test_step_log_refuses_bad_arguments(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputFileError, match="is a file"):
        StepLog(tmp_path / "f")
    with pytest.raises(InputError, match="callback"):
        StepLog(None, [42])
    with pytest.raises(InputError, match="callbacks must be"):
        StepLog(None, 42)  # neither callable nor a list
    for bad in (3.5, "on_step"):
        with pytest.raises(InputError, match="callbacks must be"):
            StepLog(None, bad)
    with pytest.raises(InputError, match="every"):
        StepLog(None, every=0)


def test_tensorboard_event_files_when_installed(tmp_path):
    pytest.importorskip("tensorboard")
    with StepLog(tmp_path / "tb", name="demo") as log:
        log(0, {"loss": 1.0})
        log(1, {"loss": 0.5})
    events = list((tmp_path / "tb").glob("events.out.tfevents.*"))
    assert events and events[0].stat().st_size > 0
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    assert [e.value for e in acc.Scalars("loss")] == [1.0, 0.5]
