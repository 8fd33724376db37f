"""Fine-tune -> save_encoder -> load_encoder -> predict, your own Dataset/DataLoader, per-step logging, exact
resume of fine_tune, and the warning for [CLS] pooling on a causal decoder."""

import json
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import Dataset

import iclr24.sufo.features as features_mod
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.runner.testing_workflow import Stopped
from iclr24.paperkit.runner.testing_workflow import stop_at
from iclr24.sufo import CLSPoolingWarning
from iclr24.sufo import FineTuneConfig
from iclr24.sufo import TextDataset
from iclr24.sufo import extract_features
from iclr24.sufo import fine_tune
from iclr24.sufo import load_encoder
from iclr24.sufo import predict
from iclr24.sufo import save_encoder
from iclr24.sufo import split
from iclr24.sufo import synthetic_reports
from iclr24.sufo import tiny_encoder
from iclr24.sufo.cli import main

CFG = FineTuneConfig(lr=1e-3, epochs=3, max_length=32, batch_size=8)


@pytest.fixture(scope="module")
def data():
    ds = synthetic_reports(48, seed=3)
    return split(ds, 0.3, seed=3)


def _weights(model) -> list[torch.Tensor]:
    return [t.clone() for t in model.state_dict().values()]


def _same(a, b) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


class _Pairs(Dataset):
    def __init__(self, ds):
        self.ds = ds

    def __len__(self):
        return len(self.ds.texts)

    def __getitem__(self, i):
        return self.ds.texts[i], int(self.ds.labels[i])


def test_cls_pooling_on_a_causal_decoder_warns_once_and_mean_pooling_does_not(monkeypatch):
    from transformers import LlamaConfig
    from transformers import LlamaForSequenceClassification

    bert, tok = tiny_encoder(3, seed=0)
    cfg = LlamaConfig(vocab_size=tok.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, num_labels=3, pad_token_id=0)  # fmt: skip
    torch.manual_seed(0)
    llama = LlamaForSequenceClassification(cfg).eval()
    assert features_mod.is_causal_decoder(llama) and not features_mod.is_causal_decoder(bert)
    texts = synthetic_reports(12, seed=0).texts
    monkeypatch.setattr(features_mod, "_warned_cls", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        extract_features(bert, tok, texts, max_length=48)  # an encoder: no warning
        mean = extract_features(llama, tok, texts, max_length=48, pooling="mean")
        cls = extract_features(llama, tok, texts, max_length=48)
        extract_features(llama, tok, texts, max_length=48)  # once per process
    ours = [w for w in caught if issubclass(w.category, CLSPoolingWarning)]
    assert len(ours) == 1 and "pooling='mean'" in str(ours[0].message) and "llama" in str(ours[0].message)
    # what the warning is about: position 0 of a causal model saw only the first token, the same for every text
    assert float(cls[-1].std(0).max()) < 1e-4 < float(mean[-1].std(0).max())


def test_interrupted_and_resumed_fine_tuning_equals_the_uninterrupted_one(tmp_path, data):
    train, val = data
    model, tok = tiny_encoder(3, seed=0)
    full = fine_tune(model, tok, train, val, CFG)
    ref = _weights(model)
    steps_per_epoch = -(-len(train) // CFG.batch_size)

    stop = stop_at(steps_per_epoch + 2)  # inside epoch 2

    model, tok = tiny_encoder(3, seed=0)
    with pytest.raises(Stopped):
        fine_tune(model, tok, train, val, CFG, checkpoint=tmp_path / "state.pt", callbacks=stop)
    model, tok = tiny_encoder(3, seed=0)
    resumed = fine_tune(model, tok, train, val, CFG, checkpoint=tmp_path / "state.pt", resume=True)
    assert resumed.history == full.history and resumed.best_epoch == full.best_epoch
    assert _same(_weights(model), ref)
    with pytest.raises(InputError, match="epochs"):
        fine_tune(model, tok, train, val, CFG.__class__(**{**CFG.__dict__, "epochs": 4}),
                  checkpoint=tmp_path / "state.pt", resume=True)  # fmt: skip


def test_your_own_dataset_or_dataloader_gives_the_same_fine_tuning(data):
    train, val = data
    model, tok = tiny_encoder(3, seed=0)
    one = CFG.__class__(**{**CFG.__dict__, "epochs": 1})
    ref = fine_tune(model, tok, train, val, one)
    ref_w = _weights(model)
    for tr, va in (
        (_Pairs(train), DataLoader(_Pairs(val), batch_size=5)),
        (list(zip(train.texts, train.labels)), val),
    ):
        model, tok = tiny_encoder(3, seed=0)
        res = fine_tune(model, tok, tr, va, one)
        assert res.history == ref.history and _same(_weights(model), ref_w)
    assert TextDataset.from_data(DataLoader(_Pairs(train), batch_size=4)).texts == train.texts


def test_your_own_data_of_the_wrong_kind_is_one_clear_error(data):
    train, val = data
    model, tok = tiny_encoder(3, seed=0)
    for bad, match in (
        (np.zeros((4, 3)), "TextDataset"),
        ([("a text", 0.5)], "integer class ids"),
        ([("a text", 0, 1)], r"\(text, label\) pair"),
        ([("", 0)], "non-empty string"),
        (DataLoader(_Pairs(SimpleNamespace(texts=[], labels=[])), batch_size=2), "empty"),
    ):
        with pytest.raises(InputError, match=match):
            fine_tune(model, tok, bad, val, CFG)


def test_saved_model_folder_loads_back_with_the_same_predictions_and_logs(tmp_path, data):
    train, val = data
    model, tok = tiny_encoder(3, seed=0)
    res = fine_tune(model, tok, train, val, CFG, log_dir=tmp_path / "logs")
    save_encoder(model, tok, tmp_path / "ft", provenance={"command": "test", "best_epoch": res.best_epoch})
    back, tok2 = load_encoder(tmp_path / "ft", num_labels=3)
    assert np.array_equal(
        predict(back, tok2, val.texts, max_length=32), predict(model, tok, val.texts, max_length=32)
    )
    prov = json.loads((tmp_path / "ft" / "provenance.json").read_text())
    assert prov["best_epoch"] == res.best_epoch and len(prov["weights_sha256"]) == 64
    rows = [json.loads(line) for line in (tmp_path / "logs" / "metrics.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in rows if "lr" in r]
    assert steps == list(range(1, len(steps) + 1)) and sum("val_accuracy" in r for r in rows) == CFG.epochs
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with pytest.raises(InputFileError, match="holds no model"):
        save_encoder(model, tok, tmp_path / "other")


def test_cli_dynamics_saves_the_fine_tuned_model_and_logs(tmp_path, capsys):
    model, tok = tiny_encoder(3, seed=0)
    model.save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")
    out = tmp_path / "d"
    args = [
        "dynamics",
        "--model",
        str(tmp_path / "tiny"),
        "--max-examples",
        "60",
        "--max-length",
        "32",
        "--quiet",
    ]
    args += [
        "--epochs",
        "1",
        "--lr",
        "1e-3",
        "--out",
        str(out),
        "--save-model",
        "--log-dir",
        str(tmp_path / "l"),
    ]
    assert main(args) == 0
    assert "wrote the fine-tuned model" in capsys.readouterr().out
    prov = json.loads((out / "model" / "provenance.json").read_text())
    assert prov["command"].startswith("sufo dynamics") and prov["epochs"] == 1
    assert (tmp_path / "l" / "metrics.jsonl").is_file()
    assert main(["probe", "--model", str(out / "model"), "--max-examples", "40", "--max-length", "32",
                 "--quiet", "--out", str(tmp_path / "p")]) == 0  # fmt: skip
