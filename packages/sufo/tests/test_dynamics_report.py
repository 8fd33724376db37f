import json

import numpy as np
import pytest

from iclr24.sufo.cli import main
from iclr24.sufo.data import split, synthetic_reports
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
