import json

import numpy as np
import pytest

from iclr24.sufo.cli import main
from iclr24.sufo.data import split
from iclr24.sufo.data import synthetic_reports
from iclr24.sufo.dynamics import feature_dynamics
from iclr24.sufo.features import tiny_encoder
from iclr24.sufo.finetune import FineTuneConfig


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-bert")
    model, tok = tiny_encoder(3, seed=0)
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


def test_feature_dynamics_records_every_checkpoint():
    ds = synthetic_reports(60, seed=1)
    train, test = split(ds, 0.3, seed=1)
    fit, val = split(train, 0.2, seed=1)
    model, tok = tiny_encoder(ds.n_classes, seed=0)
    cfg = FineTuneConfig(lr=1e-3, batch_size=8, epochs=2, max_length=32)
    dyn = feature_dynamics(model, tok, fit, val, test, cfg)
    assert dyn.epochs == [0, 1, 2]  # epoch 0 = before any update
    assert len(dyn.projections) == 3 and dyn.projections[0].shape == (len(test), 2)
    assert all(-1 <= s <= 1 for s in dyn.silhouette) and all(0 <= v <= 1 for v in dyn.evr_top2)
    assert dyn.finetune.best_epoch in (1, 2)
    # the checkpoint series changes: the projection after training differs from the one before
    assert not np.allclose(np.abs(dyn.projections[0]), np.abs(dyn.projections[-1]))
    json.dumps(dyn.to_dict())


def test_kept_layers_of_the_best_epoch_are_the_returned_models_features():
    """``keep_layers=True`` replaces two extra passes in the reproduction: epoch 0 must be the pre-trained model's
    features and the best epoch's must be those of the model fine_tune leaves behind (its best weights)."""
    from iclr24.sufo.features import extract_features

    ds = synthetic_reports(48, seed=2)
    train, test = split(ds, 0.3, seed=2)
    fit, val = split(train, 0.2, seed=2)
    model, tok = tiny_encoder(ds.n_classes, seed=0)
    before = extract_features(model, tok, test.texts, max_length=32)
    cfg = FineTuneConfig(lr=1e-3, batch_size=8, epochs=2, max_length=32)
    dyn = feature_dynamics(model, tok, fit, val, test, cfg, keep_layers=True)
    assert len(dyn.features) == 3 and dyn.features[0].shape == before.shape
    np.testing.assert_allclose(dyn.features[0], before, atol=1e-5)
    after = extract_features(model, tok, test.texts, max_length=32)
    np.testing.assert_allclose(dyn.features[dyn.finetune.best_epoch], after, atol=1e-5)
    assert not np.allclose(before, after)


def test_feature_dynamics_rejects_a_probe_with_one_class():
    ds = synthetic_reports(40, seed=0)
    one = ds.subset(np.flatnonzero(ds.labels == ds.labels[0])[:5])
    model, tok = tiny_encoder(ds.n_classes, seed=0)
    with pytest.raises(ValueError, match="2 classes"):
        feature_dynamics(model, tok, ds, ds, one, FineTuneConfig(epochs=1, max_length=16))


def test_cli_dynamics_and_report(tmp_path, tiny_dir, capsys):
    common = ["--model", str(tiny_dir), "--max-examples", "60", "--max-length", "32", "--quiet"]
    common += ["--epochs", "1", "--lr", "1e-3", "--batch-size", "8"]
    assert main(["dynamics", *common, "--out", str(tmp_path / "d")]) == 0
    d = json.loads((tmp_path / "d" / "dynamics.json").read_text())
    assert d["epochs"] == [0, 1] and (tmp_path / "d" / "dynamics.png").stat().st_size > 0
    assert main(["report", *common, "--out", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "report.md").read_text()
    for part in ("## S:", "## U:", "## F:", "## O:", "dynamics.png", "analyses.png", "test texts flagged"):
        assert part in md
    assert all(
        (tmp_path / "r" / f).stat().st_size > 0 for f in ("analyses.png", "dynamics.png", "report.json")
    )
    rep = json.loads((tmp_path / "r" / "report.json").read_text())
    assert len(rep["rsa_per_layer"]) == 3 and rep["dynamics"]["epochs"] == [0, 1]
    assert ("Planted outliers" in md) == (rep["n_planted"] > 0)


def test_cli_report_refuses_too_few_texts(tmp_path, tiny_dir, capsys):
    csv = tmp_path / "few.csv"
    csv.write_text("text,label\na,x\nb,y\nc,x\n")
    assert main(["report", "--model", str(tiny_dir), "--data", str(csv), "--out", str(tmp_path / "r")]) == 2
    assert "at least 10" in capsys.readouterr().err
    assert not (tmp_path / "r" / "report.md").exists()


def test_cli_report_on_the_builtin_icd10cm_task(tmp_path):
    from iclr24.sufo.data import icd10cm_chapters

    k = icd10cm_chapters(30, seed=0).n_classes  # the chapters kept, whatever the subset
    d = tmp_path / "tiny-icd"
    model, tok = tiny_encoder(k, seed=0)
    model.save_pretrained(d)
    tok.save_pretrained(d)
    args = ["report", "--task", "icd10cm", "--model", str(d), "--max-examples", "120", "--max-length", "24"]
    args += ["--epochs", "1", "--lr", "1e-3", "--batch-size", "16", "--quiet", "--out", str(tmp_path / "r")]
    assert main(args) == 0
    md = (tmp_path / "r" / "report.md").read_text()
    assert md.startswith("# SUFO report: ICD-10-CM descriptions -> chapter")
    assert f"{k} classes" in md and "Planted outliers" not in md  # real data: nothing planted
    rep = json.loads((tmp_path / "r" / "report.json").read_text())
    assert rep["n_planted"] == 0 and rep["planted_accuracy"] is None


def test_macro_f1_is_sklearns():
    """finetune.macro_f1 replaces sklearn's f1_score(average="macro") on the run's hot path: the same numbers,
    classes missing from one side included."""
    from sklearn.metrics import f1_score

    from iclr24.sufo.finetune import macro_f1

    rng = np.random.default_rng(0)
    for _ in range(200):
        n, k = int(rng.integers(1, 30)), int(rng.integers(1, 5))
        y, p = rng.integers(0, k, n), rng.integers(0, k + 1, n)
        assert macro_f1(y, p) == pytest.approx(f1_score(y, p, average="macro", zero_division=0), abs=1e-12)
    assert macro_f1([0, 1, 2], [2, 0, 1]) == 0.0
    with pytest.raises(ValueError, match="one length"):
        macro_f1([0, 1], [0])


def test_predictions_from_the_cls_states_are_the_models_own():
    """The reproduction scores the fine-tuned classifier from the best checkpoint's [CLS] states it has already
    extracted (pooler -> classifier) instead of a second pass over the test texts: the model's own logits, hence
    the same class ids."""
    import torch

    from iclr24.sufo.features import extract_features
    from iclr24.sufo.finetune import predict
    from iclr24.sufo.probing import probe_head
    from iclr24.sufo.reproduce import predict_from_cls

    ds = synthetic_reports(40, seed=3)
    model, tok = tiny_encoder(ds.n_classes, seed=1)
    with torch.no_grad():  # a random classifier of large weights, so that a wrong path shows in the logits
        model.classifier.weight.normal_(0.0, 30.0, generator=torch.Generator().manual_seed(0))
    cls = extract_features(model, tok, ds.texts, layers=[-1], max_length=32)[-1]
    with torch.no_grad():
        own = model(**tok(ds.texts, padding=True, truncation=True, max_length=32, return_tensors="pt")).logits
        from_cls = probe_head(model).eval()(torch.as_tensor(cls))
    np.testing.assert_allclose(from_cls.numpy(), own.numpy(), atol=1e-4)
    np.testing.assert_array_equal(predict_from_cls(model, cls), predict(model, tok, ds.texts, max_length=32))


def test_report_copies_figures_already_drawn(tmp_path):
    """`sufo reproduce` passes the two figures it drew for its claims; write_report copies them byte for byte and
    draws only what it is not given; a missing or unknown figure is refused before anything is written."""
    from iclr24.sufo.report import write_report

    ds = synthetic_reports(40, seed=4)
    train, test = split(ds, 0.3, seed=4)
    fit, val = split(train, 0.2, seed=4)
    model, tok = tiny_encoder(ds.n_classes, seed=0)
    dyn = feature_dynamics(model, tok, fit, val, test, FineTuneConfig(lr=1e-3, epochs=1, max_length=32))
    rng = np.random.default_rng(0)
    res = {
        "_dynamics": dyn,
        "rsa_per_layer": [None, 0.9, 0.5],
        "projection": rng.normal(size=(len(test), 2)).tolist(),
        "labels": test.labels.tolist(),
        "planted": test.planted.tolist(),
        "probe_pretrained": 0.5,
        "probe_random": 0.3,
        "finetuned_macro_f1": 0.6,
        "finetune": dyn.finetune.to_dict(),
        "evr_top2_before": 0.4,
        "evr_top2_after": 0.6,
        "outliers_flagged": 0,
        "planted_accuracy": None,
        "layers": 3,
    }
    drawn = tmp_path / "drawn.png"
    drawn.write_bytes(b"\x89PNG not really")
    write_report(res, tmp_path / "r", "t", "m", "task", {"analyses.png": drawn})
    assert (tmp_path / "r" / "analyses.png").read_bytes() == drawn.read_bytes()
    assert (tmp_path / "r" / "dynamics.png").read_bytes()[:4] == b"\x89PNG"  # drawn here
    with pytest.raises(FileNotFoundError, match="not a file"):
        write_report(res, tmp_path / "s", "t", "m", "task", {"dynamics.png": tmp_path / "missing.png"})
    with pytest.raises(ValueError, match="may only name"):
        write_report(res, tmp_path / "s", "t", "m", "task", {"other.png": drawn})
    assert not (tmp_path / "s").exists()
