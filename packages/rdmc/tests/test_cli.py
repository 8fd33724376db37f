import json

import numpy as np
import pytest

from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing_workflow import check_help_lists
from iclr24.paperkit.runner.testing_workflow import check_usage_errors
from iclr24.rdmc.cli import main


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_flags_only_where_they_mean_something(tmp_path):
    check_usage_errors(main, ["sample", "--smoke"], ["reproduce", "--device", "cpu"])
    # bench has --device for --paper-scale only: the benchmarks themselves run on the CPU (a usage error, exit 2)
    assert main(["bench", "--smoke", "--device", "mps", "--out", str(tmp_path / "b")]) == 2
    assert not (tmp_path / "b").exists()


def test_sample_help_calls_out_a_folder_and_samples_a_file(capsys):
    with pytest.raises(SystemExit):
        main(["sample", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--out DIR" in text and "output folder" in text and "--samples FILE" in text
    start = text.index("--samples FILE the samples file")
    samples_help = text[start : text.index("--plot also", start)]
    assert "a file, not a folder" in samples_help and "OUT/samples.npz" in samples_help
    assert "(default: None)" not in samples_help  # no second, contradicting default


def test_help_exits_zero():
    check_help_lists(main, ("reproduce", "sample", "bench"))


def test_bad_argument_exits_2():
    check_usage_errors(main, ["reproduce", "--seed", "-1"])


def test_sample_end_to_end(tmp_path, capsys):
    out = tmp_path / "s.npz"
    rc = main(
        [
            "sample",
            "--target",
            "gmm2d",
            "--n",
            "50",
            "--budget",
            "200",
            "--K",
            "10",
            "--samples",
            str(out),
            "--out",
            str(tmp_path / "unused"),
            "--plot",
            "--quiet",
        ]
    )
    assert rc == 0
    with np.load(out) as f:
        assert f["samples"].shape == (50, 2)
        info = json.loads(str(f["info"]))
    assert info["logp_calls_per_sample"] == 200 and info["grad_calls_per_sample"] == 0
    assert out.with_suffix(".png").is_file() and out.with_suffix(".json").is_file()
    assert "mode_tv" in capsys.readouterr().out


def test_sample_with_a_user_mixture_file(tmp_path):
    path = tmp_path / "mix.npz"
    np.savez(
        path,
        means=np.array([[0.0, 0.0], [3.0, 0.0]]),
        covs=np.array([1.0, 1.0]),
        weights=np.array([0.5, 0.5]),
    )
    assert (
        main(
            [
                "sample",
                "--target",
                str(path),
                "--method",
                "mala",
                "--n",
                "20",
                "--budget",
                "40",
                "--out",
                str(tmp_path / "out"),
                "--quiet",
            ]
        )
        == 0
    )
    assert (tmp_path / "out" / "samples.npz").is_file()


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["--target", "banana"], "unknown target"),
        (["--target", "missing.npz"], "not found"),
        (["--budget", "5"], "below K"),
        (["--T", "-1"], "--T must be"),
        (["--samples", "x.txt"], "ending in .npz"),
    ],
)
def test_sample_user_errors_exit_2(tmp_path, capsys, argv, msg):
    rc = main(["sample", *argv, "--n", "10", "--out", str(tmp_path), "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err


def test_bench_smoke(tmp_path, capsys):
    assert main(["bench", "--smoke", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "rdmc-is" in out and "samples/s" in out and "memory" in out
    res = json.loads((tmp_path / "bench.json").read_text())
    assert len(res["results"]) == 3 and any("n=2,000 particles" in n for n in res["notes"])
    assert (tmp_path / "bench.md").is_file()


def test_cli_defaults_are_the_configs():
    from iclr24.rdmc.cli import app
    from iclr24.rdmc.recipes import BudgetSettings

    check_app_defaults(app, {"sample": BudgetSettings})
