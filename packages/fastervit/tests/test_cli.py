import json

from PIL import Image

from iclr24.fastervit.cli import main
from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing_workflow import check_help_lists
from iclr24.paperkit.runner.testing_workflow import check_usage_errors

TINY = json.dumps({"dim": 16, "in_dim": 8, "depths": [1, 1, 1, 1], "window_size": [7, 7, 2, 1]})


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_flags_only_where_they_mean_something():
    check_usage_errors(
        main,
        ["info", "faster_vit_0_224", "--smoke"],
        ["info", "faster_vit_0_224", "--device", "cpu"],
        ["predict", "x.png", "--checkpoint", "c.pth", "--out", "x"],
        ["reproduce", "--device", "cpu"],
        ["train", "digits", "--quick"],
    )


def test_help_exits_zero():
    check_help_lists(main, ("info", "bench", "train", "predict", "validate", "reproduce"))


def test_bad_argument_exits_2():
    check_usage_errors(main, ["reproduce", "--seed", "-1"])


def test_user_errors_exit_2_with_one_line(capsys, tmp_path):
    assert main(["info", "faster_vit_9_224", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "unknown FasterViT variant" in err and "faster_vit_0_224" in err and "Traceback" not in err
    assert main(["info", "faster_vit_0_224", "--img-size", "200", "--out", str(tmp_path / "o")]) == 2
    assert "stride 32" in capsys.readouterr().err
    assert main(["train", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert main(["predict", str(tmp_path / "x.png"), "--checkpoint", str(tmp_path / "c.pth")]) == 2
    capsys.readouterr()
    # an unknown --model-kwargs key: one line naming it, before any data is read (the data path does not exist)
    assert (
        main(["train", str(tmp_path / "nope"), "--model-kwargs", '{"dimm": 8}', "--out", str(tmp_path / "o")])
        == 2
    )
    err = capsys.readouterr().err
    assert (
        "unknown model keyword(s) 'dimm'" in err
        and "dim, in_dim" in err
        and len(err.strip().splitlines()) == 1
    )
    # --out naming a file: refused before training starts
    (tmp_path / "afile").write_text("x")
    assert main(["train", "digits", "--epochs", "1", "--out", str(tmp_path / "afile")]) == 2
    assert "is a file" in capsys.readouterr().err
    # recipe flags out of range, and RandAugment on tensor data
    assert main(["train", "digits", "--reprob", "1.5", "--out", str(tmp_path / "o")]) == 2
    assert main(["train", "digits", "--mixup", "0.8", "--batch-size", "7", "--out", str(tmp_path / "o")]) == 2
    assert "even" in capsys.readouterr().err
    assert main(["validate", "--checkpoint", str(tmp_path / "c.pth"), "--data", str(tmp_path)]) == 2
    assert "c.pth does not exist" in capsys.readouterr().err


def test_train_then_predict_end_to_end_on_an_image_folder(tmp_path, capsys):
    for cls, colour in (("red", (220, 10, 10)), ("blue", (10, 10, 220))):
        d = tmp_path / "data" / cls
        d.mkdir(parents=True)
        for i in range(6):
            Image.new("RGB", (40, 40), tuple(max(0, c - 10 * i) for c in colour)).save(d / f"{i}.png")
    out = tmp_path / "run"
    rc = main(
        [
            "train",
            str(tmp_path / "data"),
            "--img-size",
            "32",
            "--epochs",
            "2",
            "--batch-size",
            "4",
            "--lr",
            "1e-3",
            "--model-kwargs",
            TINY,
            "--out",
            str(out),
            "--quiet",
            # the paper's recipe parts, timm's implementations
            "--mixup",
            "0.8",
            "--cutmix",
            "1.0",
            "--rand-augment",
            "rand-m9-mstd0.5-inc1",
            "--reprob",
            "0.25",
            "--model-ema-decay",
            "0.9",
        ]
    )
    assert rc == 0
    assert "top-1" in capsys.readouterr().out
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["classes"] == 2 and 0.0 <= metrics["final"]["top1"] <= 1.0
    assert 0.0 <= metrics["final"]["ema_top1"] <= 1.0 and metrics["config"]["mixup"] == 0.8
    rc = main(
        ["validate", "--checkpoint", str(out / "checkpoint.pth"), "--data", str(tmp_path / "data")]
        + ["--out", str(tmp_path / "val"), "--quiet"]
    )
    assert rc == 0 and "top-5" in capsys.readouterr().out
    val = json.loads((tmp_path / "val" / "validate.json").read_text())
    assert val["n"] == 12 and val["data_config"]["interpolation"] == "bicubic"
    rc = main(
        [
            "predict",
            str(tmp_path / "data" / "red" / "0.png"),
            "--checkpoint",
            str(out / "checkpoint.pth"),
            "--topk",
            "2",
        ]
    )
    assert rc == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("top-2 of") and lines[1].split() == ["rank", "probability", "index", "class"]
    assert len(lines) == 4 and {ln.split()[-1] for ln in lines[2:]} == {"red", "blue"}


def test_info_reports_params_and_macs(tmp_path, capsys):
    assert (
        main(["info", "faster_vit_0_224", "--img-size", "64", "--repeats", "1", "--out", str(tmp_path)]) == 0
    )
    info = json.loads((tmp_path / "info_faster_vit_0_224.json").read_text())
    assert info["params"] > 20e6 and info["macs"] > 0 and len(info["stages"]) == 4
    assert "parameters" in capsys.readouterr().out


def test_train_writes_the_model_folder_logs_and_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    flags = [
        "digits",
        "--img-size",
        "32",
        "--epochs",
        "1",
        "--batch-size",
        "32",
        "--max-steps-per-epoch",
        "2",
    ]
    flags += ["--model-kwargs", TINY, "--out", str(out), "--quiet"]
    assert main(["train", *flags, "--log-dir", str(tmp_path / "logs")]) == 0
    assert "model folder" in capsys.readouterr().out
    prov = json.loads((out / "model" / "provenance.json").read_text())
    assert prov["command"].startswith("fastervit train digits") and "--log-dir" in prov["command"]
    assert (tmp_path / "logs" / "metrics.jsonl").is_file()
    # the run is complete: --resume continues at the end (no step left) and reports the same numbers
    before = json.loads((out / "metrics.json").read_text())["final"]
    assert main(["train", *flags, "--resume"]) == 0
    assert "resumed after epoch 1" in capsys.readouterr().out
    assert json.loads((out / "metrics.json").read_text())["final"] == before
    img = tmp_path / "x.png"
    Image.new("RGB", (32, 32), (200, 30, 30)).save(img)
    assert main(["predict", str(img), "--checkpoint", str(out / "model"), "--topk", "2"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 4
    assert main(["train", *flags, "--resume", "--checkpoint", str(out / "model"), "--overwrite"]) == 2
    assert "give one of them" in capsys.readouterr().err
    assert main(["train", *flags[:-3], "--out", str(tmp_path / "fresh"), "--resume"]) == 2
    assert "nothing to resume" in capsys.readouterr().err


def test_cli_defaults_are_the_configs():
    from iclr24.fastervit.cli import app
    from iclr24.fastervit.train import TrainConfig

    check_app_defaults(app, {"train": TrainConfig}, dests={"checkpoint": "init_checkpoint"})
