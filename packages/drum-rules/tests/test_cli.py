from iclr24.drum_rules.cli import main
from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing_workflow import check_help_lists
from iclr24.paperkit.runner.testing_workflow import check_usage_errors


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_help_exits_zero():
    check_help_lists(main, ("reproduce",))


def test_modes_and_device_only_where_they_mean_something(capsys):
    check_usage_errors(
        main, ["eval", "--smoke"], ["train", "family:3", "--device", "cpu"], ["check", "--out", "x"]
    )


def test_bench_smoke(tmp_path, capsys):
    assert main(["bench", "--smoke", "--out", str(tmp_path)]) == 0
    assert "speedup" in capsys.readouterr().out and (tmp_path / "bench.json").exists()


def test_bad_argument_exits_2():
    check_usage_errors(main, ["reproduce", "--seed", "-1"])


def test_cli_end_to_end(tmp_path, capsys):
    model = ["--model", str(tmp_path / "train" / "model")]
    common = [*model, "--quiet"]
    assert (
        main(
            [
                "train",
                "family:3",
                "--aggregation",
                "mm",
                "--rank",
                "2",
                "--embed-dim",
                "8",
                "--hidden-dim",
                "8",
                "--epochs",
                "2",
                "--batch-size",
                "8",
                "--lr",
                "0.01",
                "--loss",
                "nll",
                "--no-train-norm",
                "--out",
                str(tmp_path / "train"),
                "--quiet",
            ]
        )
        == 0
    )
    assert "beta =" in capsys.readouterr().out
    assert main(["eval", *common]) == 0
    assert '"mrr"' in capsys.readouterr().out
    assert main(["extract", "--variant", "mm", *common, "--out", str(tmp_path / "ex")]) == 0
    text = capsys.readouterr().out
    assert "complete" in text and (tmp_path / "ex" / "rules.dl").exists()
    assert main(["check", "--datasets", "4", *common, "--rules", str(tmp_path / "ex" / "rules.json")]) == 0
    assert "FAITHFUL" in capsys.readouterr().out.splitlines()[-1]
    from iclr24.drum_rules import synthetic

    kg = synthetic.family(3, seed=0).kg
    h, t = kg.entities[0], kg.entities[1]
    assert main(["explain", f"uncle({h},{t})", *common]) == 0
    assert "score" in capsys.readouterr().out
    assert main(["explain", "uncle(nobody,x)", *common]) == 2
    assert "unknown entity" in capsys.readouterr().err
    assert (
        main(["extract", "--variant", "drum", *common, "--out", str(tmp_path / "ex2")]) == 2
    )  # not an MM model
    assert main(["eval", "--model", str(tmp_path / "missing.pt"), "--quiet"]) == 2
    assert main(["train", str(tmp_path / "nowhere"), "--out", str(tmp_path / "t2"), "--quiet"]) == 2


def test_cli_defaults_are_the_configs():
    from iclr24.drum_rules.checkpoint import load_official_checkpoint
    from iclr24.drum_rules.cli import app
    from iclr24.drum_rules.extract import faithful_rules
    from iclr24.drum_rules.model import DRUM
    from iclr24.drum_rules.train import TrainConfig

    check_app_defaults(app, {"train": (TrainConfig, DRUM), "extract": faithful_rules,
                             "convert": load_official_checkpoint})  # fmt: skip
