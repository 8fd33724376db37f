"""Data, feature extraction, probing and fine-tuning plumbing (acceptance checks 4, 6, 7) and bad input."""

import json

import numpy as np
import pytest
import torch

from iclr24.sufo.data import TextDataset
from iclr24.sufo.data import icd10cm_chapters
from iclr24.sufo.data import load_labelled
from iclr24.sufo.data import split
from iclr24.sufo.data import synthetic_reports
from iclr24.sufo.features import extract_features
from iclr24.sufo.features import load_encoder
from iclr24.sufo.features import tiny_encoder
from iclr24.sufo.finetune import balanced_sampler
from iclr24.sufo.probing import freeze_for_probe
from iclr24.sufo.probing import logistic_probe


@pytest.fixture(scope="module")
def tiny():
    return tiny_encoder(num_labels=3, seed=0)


def test_synthetic_reports_are_seeded_imbalanced_and_planted():
    a, b = synthetic_reports(600, seed=1), synthetic_reports(600, seed=1)
    assert a.texts == b.texts and (a.labels == b.labels).all()
    share = np.bincount(a.labels, minlength=3) / len(a)
    assert share[0] > share[1] > share[2]
    assert 0.01 < a.planted.mean() < 0.1
    assert all("deferred" in t for t, p in zip(a.texts, a.planted) if p)
    assert not any("gleason" in t for t, p in zip(a.texts, a.planted) if p)
    tr, te = split(a, 0.25, seed=0)
    assert len(tr) + len(te) == 600 and abs(len(te) - 150) <= 1


def test_icd10cm_is_real_short_text():
    ds = icd10cm_chapters(300, seed=0)
    assert len(ds) == 300 and ds.n_classes >= 15 and not ds.planted.any()
    assert all(isinstance(t, str) and len(t) > 3 for t in ds.texts)


def test_features_have_l_plus_1_layers_and_layer0_is_embeddings(tiny):
    model, tok = tiny
    texts = ["gleason score 3+4.", "benign tissue is present in the cores."]
    f = extract_features(model, tok, texts, max_length=16)
    assert f.shape == (3, 2, 32) and f.dtype == np.float32
    b = tok(texts, padding=True, truncation=True, max_length=16, return_tensors="pt")
    with torch.no_grad():
        emb = model.base_model.embeddings(input_ids=b["input_ids"], token_type_ids=b["token_type_ids"])
    np.testing.assert_allclose(f[0], emb[:, 0].numpy(), atol=1e-5)  # [CLS] is position 0
    assert extract_features(model, tok, texts, layers=[-1], pooling="mean", max_length=16).shape == (1, 2, 32)


def test_length_sorted_batches_keep_each_text_at_its_own_row(tiny):
    """Batches are formed by token count (shortest padding); every row must come back to its text's position and
    match the text encoded alone (no padding at all), and predictions likewise."""
    from iclr24.sufo.features import length_sorted_batches
    from iclr24.sufo.finetune import predict

    model, tok = tiny
    texts = [
        "a",
        "gleason score 3+4 with many more words here.",
        "b c",
        "benign tissue.",
        "one two three four",
    ]
    batched = extract_features(model, tok, texts, batch_size=2, max_length=16)
    alone = np.concatenate([extract_features(model, tok, [t], max_length=16) for t in texts], axis=1)
    np.testing.assert_allclose(batched, alone, atol=1e-5)
    lens = [int(b["attention_mask"].sum(1).max()) for _, b in length_sorted_batches(tok, texts, 2, 16)]
    assert lens == sorted(lens)  # short texts share a batch
    seen = np.concatenate([i for i, _ in length_sorted_batches(tok, texts, 2, 16)])
    assert sorted(seen.tolist()) == list(range(len(texts)))
    one_by_one = np.concatenate([predict(model, tok, [t], max_length=16) for t in texts])
    np.testing.assert_array_equal(predict(model, tok, texts, batch_size=2, max_length=16), one_by_one)


def test_feature_cache_is_reused(tiny, tmp_path):
    model, tok = tiny
    a = extract_features(model, tok, ["a b c", "d e f"], cache_dir=tmp_path, max_length=8)
    assert len(list(tmp_path.glob("features-*.npz"))) == 1
    np.testing.assert_array_equal(
        a, extract_features(model, tok, ["a b c", "d e f"], cache_dir=tmp_path, max_length=8)
    )


def test_probe_freezing_leaves_only_pooler_and_classifier(tiny):
    model, _ = tiny
    freeze_for_probe(model, model.config.num_hidden_layers)
    trainable = {
        n.split(".")[0] if n.startswith("classifier") else ".".join(n.split(".")[:2])
        for n, p in model.named_parameters()
        if p.requires_grad
    }
    assert trainable == {"bert.pooler", "classifier"}
    with pytest.raises(ValueError, match="freeze_layer_count"):
        freeze_for_probe(model, 3)
    for p in model.parameters():
        p.requires_grad = True


def test_weighted_sampler_balances_classes_in_expectation():
    labels = np.r_[np.zeros(600, int), np.ones(300, int), np.full(100, 2)]
    draws = np.array(list(balanced_sampler(labels, num_samples=10_000, seed=0)))
    share = np.bincount(labels[draws], minlength=3) / len(draws)
    assert np.all(np.abs(share - 1 / 3) < 0.05)


def test_logistic_probe_on_separable_features():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 50)
    x = rng.standard_normal((100, 4)) * 10 + 300 * y[:, None]  # unscaled: standardisation makes it work
    assert logistic_probe(x[::2], y[::2], x[1::2], y[1::2]) == pytest.approx(1.0)


def test_bad_input(tmp_path, tiny):
    model, tok = tiny
    (tmp_path / "nocfg").mkdir()
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_encoder(tmp_path / "nocfg")
    (tmp_path / "notok").mkdir()
    (tmp_path / "notok" / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="tokenizer"):
        load_encoder(tmp_path / "notok")
    with pytest.raises(ValueError, match="same length"):
        TextDataset(["a", "b"], np.array([0]), ["x", "y"], np.zeros(2, bool))
    with pytest.raises(ValueError, match="layers must be"):
        extract_features(model, tok, ["a"], layers=[9])
    with pytest.raises(ValueError, match="two classes"):
        logistic_probe(np.zeros((4, 2)), np.zeros(4), np.zeros((2, 2)), np.zeros(2))
    j = tmp_path / "d.jsonl"
    j.write_text(json.dumps({"text": "a", "label": "x"}) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"d\.jsonl:2: not valid JSON"):
        load_labelled(j)
    c = tmp_path / "d.csv"
    c.write_text("text,label\nhello,a\nworld,a\n")
    with pytest.raises(ValueError, match="single class"):
        load_labelled(c)
    c.write_text("words,label\nhello,a\n")
    with pytest.raises(ValueError, match="header must name"):
        load_labelled(c)
    with pytest.raises(FileNotFoundError):
        load_labelled(tmp_path / "missing.csv")


def test_load_labelled_roundtrip(tmp_path):
    c = tmp_path / "d.csv"
    c.write_text("text,label\nhello there,pos\nbad day,neg\nok,pos\n")
    ds = load_labelled(c)
    assert ds.label_names == ["neg", "pos"] and ds.labels.tolist() == [1, 0, 1]


def test_split_falls_back_to_unstratified_when_a_side_cannot_hold_every_class():
    # 10 classes x 2 texts: a 20% test side (4 texts) cannot hold all 10 classes, so sklearn would refuse to stratify
    ds = TextDataset(
        [f"text {i}" for i in range(20)],
        np.repeat(np.arange(10), 2),
        [str(i) for i in range(10)],
        np.zeros(20, dtype=bool),
    )
    tr, te = split(ds, 0.2, seed=0)
    assert len(te) == 4 and len(tr) == 16 and sorted(tr.texts + te.texts) == sorted(ds.texts)
    big = synthetic_reports(100, seed=0)
    _, te = split(big, 0.3, seed=0)  # still stratified when it can be
    assert abs(np.bincount(te.labels, minlength=3)[0] - 0.3 * np.bincount(big.labels)[0]) <= 1


def test_official_probe_on_cached_states_is_the_frozen_model_step(tiny):
    """The official probe with every layer frozen (freeze_for_probe(model, L)) trains only the pooler and the
    classifier; on the cached last-layer [CLS] states the head gives the same logits and the same gradients as the
    whole model (dropout off)."""
    from iclr24.sufo.probing import probe_head

    model, tok = tiny
    model.eval()
    head = probe_head(model).eval()
    texts = ["gleason score 3+4.", "primary gleason grade: five; secondary gleason grade: three."]
    states = torch.as_tensor(extract_features(model, tok, texts, layers=[-1], max_length=32)[-1])
    batch = tok(texts, padding=True, return_tensors="pt")
    freeze_for_probe(model, model.config.num_hidden_layers)
    labels = torch.tensor([0, 2])
    loss_model = model(**batch, labels=labels).loss
    loss_model.backward()
    logits_head = head(states)
    loss_head = torch.nn.functional.cross_entropy(logits_head, labels)
    loss_head.backward()
    assert torch.allclose(logits_head, model(**batch).logits, atol=1e-5)
    assert torch.allclose(head.classifier.weight.grad, model.classifier.weight.grad, atol=1e-5)
    assert torch.allclose(head.pooler.dense.weight.grad, model.bert.pooler.dense.weight.grad, atol=1e-5)
    model.zero_grad()
    for p in model.parameters():
        p.requires_grad = True


def test_official_probe_learns_separable_states_and_picks_the_epoch_on_validation():
    from iclr24.sufo.probing import ProbeConfig
    from iclr24.sufo.probing import frozen_encoder_probe
    from iclr24.sufo.probing import probe_head

    model, _ = tiny_encoder(num_labels=2, seed=1, hidden=16)
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 40)
    x = (rng.standard_normal((80, 16)) + 2.0 * (2 * y[:, None] - 1)).astype(np.float32)
    cfg = ProbeConfig(lr=1e-2, epochs=6, seed=0)
    r = frozen_encoder_probe(probe_head(model), x[::2], y[::2], x[1::4], y[1::4], x[3::4], y[3::4], cfg)
    assert r.test_macro_f1 == pytest.approx(1.0) and 1 <= r.best_epoch <= 6 and len(r.history) == 6
    best = max(h["val_accuracy"] for h in r.history)
    assert r.best_val_score == best and r.history[r.best_epoch - 1]["val_accuracy"] == best
    # the official lr (7.6e-6) barely moves a fresh head in 6 epochs: far worse, so the lr matters
    slow = frozen_encoder_probe(
        probe_head(model), x[::2], y[::2], x[1::4], y[1::4], x[3::4], y[3::4], ProbeConfig(epochs=1)
    )
    assert slow.history[0]["loss"] > r.history[-1]["loss"]
    with pytest.raises(ValueError, match="labels must lie in"):
        frozen_encoder_probe(probe_head(model), x, y + 1, x, y, x, y, cfg)
    with pytest.raises(ValueError, match="best_metric"):
        ProbeConfig(best_metric="loss")


def test_probe_head_needs_a_bert_style_classifier():
    from iclr24.sufo.probing import probe_head

    with pytest.raises(ValueError, match="pooler and a linear classifier"):
        probe_head(torch.nn.Linear(3, 2))


def test_a_test_class_without_training_text_is_said(tmp_path):
    x = np.random.default_rng(0).standard_normal((6, 2))
    with pytest.warns(UserWarning, match=r"test labels \[2\] have no training example"):
        logistic_probe(x[:4], np.array([0, 1, 0, 1]), x[4:], np.array([2, 0]))


def test_fine_tuning_picks_the_epoch_by_validation_accuracy_as_the_official_code():
    from iclr24.sufo.finetune import FineTuneConfig
    from iclr24.sufo.finetune import fine_tune

    ds = synthetic_reports(40, seed=3)
    train, val = split(ds, 0.3, seed=3)
    model, tok = tiny_encoder(3, seed=0)
    res = fine_tune(model, tok, train, val, FineTuneConfig(lr=1e-3, epochs=2, max_length=32))
    assert res.best_metric == "accuracy" and {"val_accuracy", "val_macro_f1"} <= set(res.history[0])
    assert res.best_val_score == max(h["val_accuracy"] for h in res.history)
    with pytest.raises(ValueError, match="best_metric"):
        FineTuneConfig(best_metric="auc")


def test_encoder_weights_are_loaded_from_safetensors_only(tmp_path, tiny):
    """A corrupt model.safetensors is one clear error; a folder with only pytorch_model.bin (a pickle) is refused
    before anything is unpickled."""
    model, tok = tiny
    d = tmp_path / "m"
    model.save_pretrained(d)
    tok.save_pretrained(d)
    load_encoder(d, num_labels=3)  # the saved folder loads
    (d / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken")
    with pytest.raises(ValueError, match="the weights cannot be loaded") as info:
        load_encoder(d, num_labels=3)
    assert "\n" not in str(info.value)
    (d / "model.safetensors").unlink()
    torch.save({"x": torch.zeros(1)}, d / "pytorch_model.bin")
    with pytest.raises(ValueError, match="pytorch_model.bin but no model.safetensors"):
        load_encoder(d, num_labels=3)
    load_encoder(d, num_labels=3, random_init=True)  # the control needs no weights
    (d / "pytorch_model.bin").unlink()
    with pytest.raises(FileNotFoundError, match="no model.safetensors"):
        load_encoder(d, num_labels=3)
    (d / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="config or tokenizer cannot be read"):
        load_encoder(d, num_labels=3, random_init=True)
