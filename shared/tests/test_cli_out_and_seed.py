"""The CLI scaffold: a failed command leaves no --out folder it created itself (never touching one that existed),
and --seed is offered only where it changes something (never on bench)."""

import json
import os

import pytest

from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import arg
from iclr24.paperkit.runner.testing_workflow import fail_as


def make_app():
    app = App("demo", "A demo tool.")

    @app.command("go", "Do it.", arg("--fail", default="", help="how to fail"))
    def go(args):
        (args.out / "partial.txt").write_text("half")
        fail_as(args.fail)
        if args.fail == "rc1":
            return 1
        if args.fail == "rc1-empty":
            (args.out / "partial.txt").unlink()
            return 1
        return 0

    @app.command("early", "Fails before writing.", arg("--k", type=int, default=0))
    def early(args):
        raise ValueError(f"--k must be even, got {args.k}")

    return app


@pytest.mark.parametrize("how", ["usage", "value"])
def test_a_user_error_removes_the_out_folder_it_created_with_its_parents(tmp_path, how, capsys):
    out = tmp_path / "new" / "deeper" / "run"
    assert make_app().main(["go", "--out", str(out), "--fail", how]) == 2
    assert os.listdir(tmp_path) == []  # new/ and everything in it went: it was all this run's
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_an_early_error_leaves_no_empty_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert make_app().main(["early"]) == 2  # default --out results/demo/early
    assert os.listdir(tmp_path) == []


def test_a_folder_that_existed_is_never_removed(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "earlier.json").write_text("{}")
    # a folder of other files is refused before the command runs (it is no run folder)
    assert make_app().main(["go", "--out", str(out), "--fail", "value"]) == 2
    assert "is not empty and holds no iclr24 run" in capsys.readouterr().err
    assert os.listdir(out) == ["earlier.json"] and (out / "earlier.json").read_text() == "{}"
    # an existing parent with a new --out below: only the new part goes
    assert make_app().main(["go", "--out", str(out / "sub" / "run"), "--fail", "usage"]) == 2
    assert sorted(os.listdir(out)) == ["earlier.json"]
    # an empty folder that existed before stays too, and is empty again after a user error
    empty = tmp_path / "empty"
    empty.mkdir()
    assert make_app().main(["early", "--out", str(empty)]) == 2
    assert empty.is_dir()
    assert make_app().main(["go", "--out", str(empty), "--fail", "value"]) == 2
    assert empty.is_dir() and os.listdir(empty) == []


def test_a_success_keeps_its_folder(tmp_path):
    out = tmp_path / "a" / "b"
    assert make_app().main(["go", "--out", str(out)]) == 0
    assert (out / "partial.txt").read_text() == "half"


@pytest.mark.parametrize("how", ["interrupt", "rc1", "bug"])
def test_a_crash_or_interrupt_keeps_what_was_written(tmp_path, how):
    """Not a user error: the folder keeps its files (e.g. an interrupted training's checkpoints)."""
    out = tmp_path / "n" / "run"
    if how == "bug":
        with pytest.raises(RuntimeError):
            make_app().main(["go", "--out", str(out), "--fail", how])
    else:
        assert make_app().main(["go", "--out", str(out), "--fail", how]) in (1, 130)
    assert (out / "partial.txt").exists()
    status = json.loads((out / ".iclr24-run.json").read_text())["runs"][-1]["status"]
    assert status == {"interrupt": "interrupted", "rc1": "exit 1", "bug": "failed"}[how]


def test_a_non_zero_exit_with_nothing_written_removes_the_empty_folders(tmp_path):
    assert make_app().main(["go", "--out", str(tmp_path / "n" / "run"), "--fail", "rc1-empty"]) == 1
    assert os.listdir(tmp_path) == []


def test_an_argparse_error_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        make_app().main(["early", "--k", "x"])
    assert os.listdir(tmp_path) == []


def _flags(app, cmd, capsys):
    with pytest.raises(SystemExit):
        app.main([cmd, "--help"])
    return capsys.readouterr().out


def test_seed_only_where_declared(tmp_path, capsys):
    app = App("demo", "A demo tool.")
    seen = {}

    @app.command("rand", "Draws random numbers.")
    def rand(args):
        seen["rand"] = args.seed

    @app.command("show", "Deterministic.", seed=False)
    def show(args):
        seen["show"] = hasattr(args, "seed")

    assert "--seed" in _flags(app, "rand", capsys)
    assert "--seed" not in _flags(app, "show", capsys)
    assert app.main(["rand", "--seed", "4", "--out", str(tmp_path / "r")]) == 0
    assert app.main(["show", "--out", str(tmp_path / "s")]) == 0
    assert seen == {"rand": 4, "show": False}
    with pytest.raises(SystemExit) as e:
        app.main(["show", "--seed", "4", "--out", str(tmp_path / "s2")])
    assert e.value.code == 2
    assert "unrecognized arguments: --seed" in capsys.readouterr().err


def test_bench_offers_no_seed(tmp_path, capsys):
    from iclr24.paperkit.bench import BenchReport
    from iclr24.paperkit.bench import BenchResult

    app = App("demo", "A demo tool.")
    app.add_bench(lambda mode: BenchReport(results=[BenchResult(name="x", median_s=0.1, times_s=[0.1])]))
    assert "--seed" not in _flags(app, "bench", capsys)
    with pytest.raises(SystemExit) as e:
        app.main(["bench", "--seed", "1", "--out", str(tmp_path)])
    assert e.value.code == 2
    app.add_reproduce(lambda: None)
    assert "--seed" in _flags(app, "reproduce", capsys)  # claims follow the seed
