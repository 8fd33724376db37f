import json

import numpy as np
import pytest

from iclr24.maxent_moco import TabularMDP
from iclr24.maxent_moco import cliffwalk
from iclr24.maxent_moco.cli import main
from iclr24.maxent_moco.data import load_env
from iclr24.maxent_moco.data import load_mdp
from iclr24.maxent_moco.data import save_mdp
from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing_workflow import check_help_lists
from iclr24.paperkit.runner.testing_workflow import check_usage_errors


def test_cli_contract(tmp_path):
    check_cli_contract(
        main, tmp_path
    )  # --help everywhere, help on every option, bad flag -> 2, --out at a file


def test_help_exits_zero():
    check_help_lists(main, ("reproduce", "run", "bench"))


def test_common_flags_per_command(capsys):
    for cmd, has, lacks in (
        ("reproduce", ("--smoke", "--out", "--data-dir"), ("--device",)),
        ("bench", ("--smoke", "--out", "--paper-scale", "--device"), ()),  # --device: for --paper-scale only
        ("run", ("--out", "--seed", "--osdyna-variant", "--wait-for-values"), ("--smoke", "--device")),
    ):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        text = capsys.readouterr().out
        assert all(f in text for f in has) and not any(f in text for f in lacks), cmd


def test_bench_smoke_writes_report(tmp_path, capsys):
    assert main(["bench", "--smoke", "--out", str(tmp_path)]) == 0
    rep = json.loads((tmp_path / "bench.json").read_text())
    assert rep["mode"] == "smoke" and rep["results"] and rep["notes"]
    assert (tmp_path / "bench.md").exists() and "MoCoDyna" in capsys.readouterr().out


def test_bad_argument_exits_2():
    check_usage_errors(main, ["reproduce", "--seed", "-1"], ["run", "--lam", "1.5"])


def test_run_end_to_end_exact_and_sample(tmp_path, capsys):
    assert (
        main(
            [
                "run",
                "--env",
                "cliffwalk",
                "--lam",
                "1.0",
                "--algo",
                "all",
                "--d",
                "2",
                "--iters",
                "12",
                "--out",
                str(tmp_path),
                "--quiet",
            ]
        )
        == 0
    )
    res = json.loads((tmp_path / "run.json").read_text())["results"]
    assert set(res) == {"MoCoVI(d=2)", "VI", "MBRL", "OS-VI"}
    assert res["MoCoVI(d=2)"]["errors"][10] < 1e-6 < res["MBRL"]["errors"][10]
    assert "MoCoVI(d=2)" in capsys.readouterr().out
    assert (
        main(
            [
                "run",
                "--algo",
                "mocodyna",
                "--mode",
                "control",
                "--steps",
                "3000",
                "--planning-interval",
                "500",
                "--queue-interval",
                "500",
                "--eval-every",
                "1000",
                "--out",
                str(tmp_path / "dyna"),  # a second run: its own folder
            ]
        )
        == 0
    )
    res = json.loads((tmp_path / "dyna" / "run.json").read_text())["results"]["MoCoDyna(d=2)"]
    assert res["steps"] == [0, 1000, 2000, 3000]


def test_run_user_mdp_and_user_errors(tmp_path, capsys):
    rng = np.random.default_rng(0)
    mdp = TabularMDP(rng.dirichlet(np.ones(6), size=(6, 2)), rng.normal(size=(6, 2)), 0.9)
    path = save_mdp(mdp, tmp_path / "mine.npz")
    assert np.array_equal(load_mdp(path).P, mdp.P)
    assert main(["run", "--mdp", str(path), "--iters", "5", "--out", str(tmp_path / "o")]) == 0
    assert main(["run", "--mdp", str(tmp_path / "missing.npz")]) == 2
    assert "no MDP file" in capsys.readouterr().err
    np.savez(tmp_path / "bad.npz", P=mdp.P)
    assert main(["run", "--mdp", str(tmp_path / "bad.npz")]) == 2
    assert "lacks the arrays ['R', 'gamma']" in capsys.readouterr().err
    assert main(["run", "--algo", "qlearning", "--mode", "pe", "--out", str(tmp_path / "o")]) == 2


def test_load_env():
    assert np.array_equal(load_env("cliffwalk").P, cliffwalk().P)
    assert load_env("garnet", seed=3).name == "garnet3"
    with pytest.raises(ValueError, match="unknown environment"):
        load_env("mountaincar")


def test_corrupt_or_foreign_npz_is_one_clear_line(tmp_path, capsys):
    rng = np.random.default_rng(0)
    mdp = TabularMDP(rng.dirichlet(np.ones(4), size=(4, 2)), rng.normal(size=(4, 2)), 0.9)
    good = save_mdp(mdp, tmp_path / "good.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(good[: len(good) // 2])  # truncated
    (tmp_path / "text.npz").write_text("P R gamma\n1 2 3\n")  # not an archive at all
    for name in ("cut.npz", "text.npz"):
        with pytest.raises(ValueError, match="not a readable .npz archive|damaged"):
            load_mdp(tmp_path / name)
        assert main(["run", "--mdp", str(tmp_path / name), "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and name in err
        assert "allow_pickle" not in err and "BadZipFile" not in err


def test_bad_number_message_has_no_internal_name(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--lam", "abc"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "_unit" not in err and "expected a number in [0, 1], got 'abc'" in err


def test_zero_reward_mdp_runs_and_reports_absolute_error(tmp_path, capsys):
    rng = np.random.default_rng(1)
    mdp = TabularMDP(rng.dirichlet(np.ones(5), size=(5, 2)), np.zeros((5, 2)), 0.9)
    path = save_mdp(mdp, tmp_path / "zero.npz")
    assert (
        main(["run", "--mdp", str(path), "--iters", "4", "--algo", "all", "--out", str(tmp_path / "o")]) == 0
    )
    out = json.loads((tmp_path / "o" / "run.json").read_text())
    assert out["error"].startswith("absolute")
    assert all(np.isfinite(r["errors"]).all() for r in out["results"].values())
    assert "absolute value error" in capsys.readouterr().out


def test_maze_and_sample_model_options_from_the_cli(tmp_path):
    args = ["--steps", "1500", "--planning-interval", "500", "--eval-every", "500", "--mode", "control"]
    assert (
        main(["run", "--env", "maze33", "--algo", "all", "--iters", "6", "--out", str(tmp_path / "a")]) == 0
    )
    assert set(json.loads((tmp_path / "a" / "run.json").read_text())["results"]) >= {"MoCoVI(d=2)", "OS-VI"}
    for extra in (
        ["--algo", "osdyna"],
        ["--algo", "mocodyna", "--model", "adversarial", "--wait-for-values"],
    ):
        assert main(["run", *args, *extra, "--out", str(tmp_path / extra[1]), "--quiet"]) == 0


def test_cli_defaults_are_the_configs():
    from iclr24.maxent_moco.algorithms import MoCoVI
    from iclr24.maxent_moco.cli import app
    from iclr24.maxent_moco.data import load_env
    from iclr24.maxent_moco.sample import MoCoDyna
    from iclr24.maxent_moco.sample import OSDyna

    renamed = {"lam": "alpha", "mode_rl": "mode", "iters": "K", "queue_interval": "val_queue_interval",
               "osdyna_variant": "variant", "garnet_seed": "seed"}  # fmt: skip
    check_app_defaults(app, {"run": (MoCoVI, MoCoVI.run, MoCoDyna, OSDyna, load_env)}, dests=renamed)
