"""The CLI: the common contract, train-source -> adapt end to end on tiny settings, and user errors."""

import json

import pytest

from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.sfda2.cli import main


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


@pytest.fixture(scope="module")
def source_ckpt(tmp_path_factory):
    out = tmp_path_factory.mktemp("src")
    rc = main(["train-source", "--epochs", "1", "--out", str(out), "--quiet"])
    assert rc == 0
    return out / "source"  # the model folder


def test_train_source_then_adapt(source_ckpt, tmp_path, capsys):
    cfg = json.loads((source_ckpt / "config.json").read_text())["config"]
    assert cfg["num_classes"] == 10 and cfg["arch"] == "digits" and cfg["class_names"] == list("0123456789")
    rc = main(
        [
            "adapt",
            "--source-ckpt",
            str(source_ckpt),
            "--epochs",
            "1",
            "--method",
            "aad",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    assert rc == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["method"] == "aad" and summary["nonfinite_iterations"] == 0
    assert (summary["config"]["lr"], summary["config"]["alpha_2"]) == (1e-3, 10.0)  # official defaults
    assert (tmp_path / "target" / "model.safetensors").is_file() and (tmp_path / "history.json").is_file()
    assert "target accuracy" in capsys.readouterr().out


def test_adapt_user_errors(source_ckpt, tmp_path, capsys):
    assert main(["adapt", "--source-ckpt", str(tmp_path / "missing.pt"), "--out", str(tmp_path / "o")]) == 2
    assert "not found" in capsys.readouterr().err
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    assert main(["adapt", "--source-ckpt", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "not a file this package wrote" in capsys.readouterr().err
    rc = main(
        ["adapt", "--source-ckpt", str(source_ckpt), "--num-classes", "12", "--out", str(tmp_path / "o")]
    )
    assert rc == 2 and "has 10 classes" in capsys.readouterr().err
    empty = tmp_path / "empty_target"
    empty.mkdir()
    rc = main(
        ["adapt", "--source-ckpt", str(source_ckpt), "--target", str(empty), "--out", str(tmp_path / "o")]
    )
    assert rc == 2 and "empty" in capsys.readouterr().err
    rc = main(
        [
            "adapt",
            "--source-ckpt",
            str(source_ckpt),
            "--k",
            "5000",
            "--epochs",
            "1",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert rc == 2 and "larger than the target set" in capsys.readouterr().err
    assert not (tmp_path / "o" / "target").exists()


def test_bench_smoke(tmp_path, capsys):
    assert main(["bench", "--smoke", "--out", str(tmp_path), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "SF(DA)^2/AaD time" in text and "explicit M=16/implicit" in text
    assert (tmp_path / "bench.json").is_file()


def test_adapt_a_folder_of_real_format_images(tmp_path, capsys):
    """synthetic-visda -> train-source -> adapt on a folder of JPEGs, through the lazy loader and official views."""
    data = tmp_path / "visda"
    assert (
        main(
            ["synthetic-visda", "--images", "24", "--min-side", "20", "--max-side", "40", "--out", str(data)]
        )
        == 0
    )
    assert len(list(data.glob("*/*.jpg"))) == 24
    src = tmp_path / "src"
    common = ["--quiet", "--batch-size", "8"]
    rc = main(
        [
            "train-source",
            "--source",
            str(data),
            "--arch",
            "timm:resnet18",
            "--size",
            "32",
            "--bottleneck",
            "16",
        ]
        + ["--epochs", "1", "--out", str(src), *common]
    )
    assert rc == 0 and json.loads((src / "source.json").read_text())["num_classes"] == 12
    out = tmp_path / "adapt"
    rc = main(
        ["adapt", "--source-ckpt", str(src / "source"), "--target", str(data), "--epochs", "1"]
        + ["--out", str(out), *common]
    )
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (
        summary["nonfinite_iterations"] == 0
        and len(json.loads((out / "history.json").read_text())["history"]) == 3
    )
    capsys.readouterr()
    rc = main(["synthetic-visda", "--images", "5", "--out", str(tmp_path / "few")])
    assert rc == 2 and "--images >= 12" in capsys.readouterr().err and not (tmp_path / "few").exists()


def test_cli_defaults_are_the_configs():
    from iclr24.sfda2.adapt import SOURCE_CPU
    from iclr24.sfda2.adapt import SFDA2Config
    from iclr24.sfda2.cli import app

    check_app_defaults(app, {"train-source": SOURCE_CPU, "adapt": SFDA2Config})
