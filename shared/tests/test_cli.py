import json

import pytest

from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import nonneg_float
from iclr24.paperkit.cli import nonneg_int
from iclr24.paperkit.cli import positive_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import probability
from iclr24.paperkit.cli import resolve_device


def make_app(seen):
    app = App("demo", "A demo tool.")

    @app.command(
        "go",
        "Do it.",
        arg("--k", type=positive_int, default=3, help="how many"),
        arg("--p", type=probability, default=0.5, help="a probability"),
        modes=True,
        device=True,
    )
    def go(args):
        seen.update(vars(args), out_was_a_folder=args.out.is_dir())
        if args.k == 13:
            raise UsageError("13 is unlucky")
        if args.k == 14:
            raise FileNotFoundError("no such file: data.csv")
        if args.k == 15:
            raise RuntimeError("a real bug")
        return 0

    return app


def test_common_flags_and_defaults(tmp_path, monkeypatch):
    seen = {}
    assert make_app(seen).main(["go", "--out", str(tmp_path), "--seed", "5", "--full", "--quiet"]) == 0
    assert seen["mode"] == "full" and seen["seed"] == 5 and seen["out"] == tmp_path and seen["quiet"]
    seen.clear()
    monkeypatch.chdir(tmp_path)
    make_app(seen).main(["go"])
    assert seen["mode"] == "quick" and seen["device"] == "cpu" and seen["k"] == 3
    assert str(seen["out"]) == "results/demo/go" and seen["out_was_a_folder"]
    assert not (tmp_path / "results").exists()  # a run that wrote nothing there leaves no folder behind


def test_help_shows_defaults(capsys):
    with pytest.raises(SystemExit) as e:
        make_app({}).main(["go", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "(default: 3)" in out and "--smoke" in out and "--out" in out
    assert out.count("(default: quick)") == 0 and "(the default)" in out  # said once, on --quick only


@pytest.mark.parametrize(
    "argv",
    [
        ["go", "--k", "0"],
        ["go", "--p", "1.5"],
        ["go", "--seed", "-3"],
        ["go", "--smoke", "--quick"],
        ["nope"],
        [],
    ],
)
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        make_app({}).main(argv)
    assert e.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_user_errors_are_one_line_exit_2(capsys):
    assert make_app({}).main(["go", "--k", "13"]) == 2
    assert capsys.readouterr().err.strip() == "demo go: error: 13 is unlucky"
    assert make_app({}).main(["go", "--k", "14"]) == 2
    assert "no such file: data.csv" in capsys.readouterr().err


def test_extra_user_error_types():
    class EndpointDown(Exception):
        pass

    app = App("demo", "A demo tool.", user_errors=(EndpointDown,))

    @app.command("call", "Call it.")
    def call(args):
        raise EndpointDown("http://127.0.0.1:9 refused the connection")

    assert app.main(["call"]) == 2


def test_real_bugs_still_raise():
    with pytest.raises(RuntimeError):
        make_app({}).main(["go", "--k", "15"])


def test_resolve_device():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") in ("cpu", "cuda")
    with pytest.raises(UsageError):
        resolve_device("tpu")


def test_flags_only_where_declared(capsys):
    app = App("demo", "A demo tool.")

    @app.command("plain", "No modes, no device.")
    def plain(args):
        assert not hasattr(args, "mode") and not hasattr(args, "device") and not hasattr(args, "data_dir")

    @app.command("data", "With a data folder.", data=True)
    def data(args):
        assert args.data_dir is None

    for flag in ("--smoke", "--device"):
        with pytest.raises(SystemExit) as e:
            app.main(["plain", flag, "cpu"] if flag == "--device" else ["plain", flag])
        assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("demo: error: unrecognized arguments") for line in err)


def test_out_that_is_a_file_or_unwritable_is_refused_before_work(tmp_path, capsys):
    ran = []
    app = App("demo", "A demo tool.")

    @app.command("go", "Do it.")
    def go(args):
        ran.append(1)

    f = tmp_path / "file.txt"
    f.write_text("x")
    assert app.main(["go", "--out", str(f)]) == 2
    assert app.main(["go", "--out", str(f / "sub")]) == 2
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        import os

        if os.geteuid() != 0:  # root writes anywhere
            assert app.main(["go", "--out", str(ro / "x")]) == 2
    finally:
        ro.chmod(0o700)
    err = capsys.readouterr().err.strip().splitlines()
    assert ran == [] and all(line.startswith("demo go: error: --out") for line in err), err
    assert f.read_text() == "x"


def test_bench_command(tmp_path, capsys):
    from iclr24.paperkit.bench import BenchReport
    from iclr24.paperkit.bench import BenchResult

    def good(mode):
        r = BenchResult(
            name="ours", median_s=0.001, times_s=[0.001], baseline_name="base", baseline_median_s=0.002
        )
        return BenchReport(results=[r], notes=[f"mode {mode}"])

    app = App("demo", "A demo tool.")
    app.add_bench(good)
    assert app.main(["bench", "--smoke", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "x2.00" in out and "mode smoke" in out
    assert (tmp_path / "bench.json").exists() and (tmp_path / "bench.md").exists()
    bad = App("demo", "A demo tool.")
    bad.add_bench(lambda mode: [1, 2])
    with pytest.raises(TypeError, match="must return a BenchReport"):
        bad.main(["bench", "--out", str(tmp_path / "b")])
    with pytest.raises(TypeError, match="list of BenchResult"):
        BenchReport(results=[1.0])


def test_bench_command_passes_the_out_folder_to_a_bench_that_asks(tmp_path, capsys):
    from iclr24.paperkit.bench import BenchReport
    from iclr24.paperkit.bench import BenchResult

    seen = []

    def with_plot(mode, out):
        seen.append(out)
        (out / "plot.png").write_bytes(b"png")
        r = BenchResult(name="ours", median_s=0.001, times_s=[0.001])
        return BenchReport(results=[r], artifacts=["plot.png"])

    app = App("demo", "A demo tool.")
    app.add_bench(with_plot)
    target = tmp_path / "new" / "bench"  # does not exist yet: created before the bench runs
    assert app.main(["bench", "--smoke", "--out", str(target)]) == 0
    assert seen == [target] and (target / "plot.png").exists()
    assert json.loads((target / "bench.json").read_text())["artifacts"] == ["plot.png"]


def test_paper_cli_contract_helper(tmp_path):
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import Paper
    from iclr24.paperkit.runner.testing import check_cli_contract

    def run(cfg):
        cs = ClaimSet("demo", cfg)
        cs.add(claim="c", metric="m", ours=1.0, baseline_name="b", baseline=0.5, rule="ours > baseline")
        return cs

    app = App("demo", "A demo tool.")
    app.add_reproduce(lambda: Paper("demo", "Demo", "one line", run=run))
    check_cli_contract(app.main, tmp_path)

    @app.command("undocumented", "An option without help.", arg("--x", type=int, default=1))
    def undocumented(args):
        pass

    with pytest.raises(AssertionError, match="has no help text"):
        check_cli_contract(app.main, tmp_path / "2")


def test_log_dir_flag_feeds_a_step_log(tmp_path, capsys):
    from iclr24.paperkit.tracking import StepLog
    from iclr24.paperkit.tracking import read_jsonl

    app = App("demo", "A demo tool.")

    @app.command("train", "Train a toy.", log_dir=True)
    def train(args):
        with StepLog(args.log_dir, name="demo") as log:
            for step in range(3):
                log(step, {"loss": 1.0 / (step + 1)})

    assert app.main(["train", "--out", str(tmp_path / "o"), "--log-dir", str(tmp_path / "logs")]) == 0
    assert [r["step"] for r in read_jsonl(tmp_path / "logs" / "metrics.jsonl")] == [0, 1, 2, -1]
    with pytest.raises(SystemExit):
        app.main(["train", "--help"])
    assert "--log-dir DIR" in capsys.readouterr().out


def test_a_command_sees_the_arguments_it_was_given(tmp_path):
    app = App("demo", "A demo tool.")
    seen = []

    @app.command("train", "Train a toy.", arg("--steps", type=int, default=3, help="steps"))
    def train(args):
        seen.append(args._argv)

    argv = ["train", "--steps", "7", "--out", str(tmp_path / "o")]
    assert app.main(argv) == 0 and seen == [argv]


def test_command_line_is_the_run_as_its_marker_records_it(tmp_path):
    import argparse

    app = App("demo", "A demo tool.")
    seen = []

    @app.command("train", "Train a toy.", arg("--name", default="a b", help="a name"))
    def train(args):
        seen.append(app.command_line(args))

    assert app.main(["train", "--name", "x y", "--out", str(tmp_path / "o")]) == 0
    assert seen == [f"demo train --name 'x y' --out {tmp_path / 'o'}"]
    # a folder without a marker (the function called without main): the command alone
    assert app.command_line(argparse.Namespace(out=tmp_path / "none", command="train")) == "demo train"


@pytest.mark.parametrize(
    "kind, good, bad",
    [
        (positive_int, {"1": 1, "42": 42}, ["0", "-3", "1.5", "x", ""]),
        (nonneg_int, {"0": 0, "7": 7}, ["-1", "2.0", "x", ""]),
        (positive_float, {"0.5": 0.5, "3": 3.0}, ["0", "-1", "inf", "nan", "x"]),
        (nonneg_float, {"0": 0.0, "2.5": 2.5}, ["-0.1", "inf", "nan", "x"]),
        (probability, {"0": 0.0, "1": 1.0, "0.25": 0.25}, ["-0.1", "1.01", "nan", "x"]),
    ],
)
def test_argument_types_accept_their_range_and_name_the_bad_value(kind, good, bad):
    import argparse

    for text, value in good.items():
        assert kind(text) == value
    for text in bad:
        with pytest.raises(argparse.ArgumentTypeError, match=f"^expected .*, got {text!r}$"):
            kind(text)


def test_a_bad_nonneg_int_is_one_line_exit_2(capsys):
    app = App("demo", "A demo tool.")

    @app.command("go", "Do it.", arg("--workers", type=nonneg_int, default=0, help="loader workers"))
    def go(args):
        return 0

    with pytest.raises(SystemExit) as e:
        app.main(["go", "--workers", "-1"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "expected a non-negative integer, got '-1'" in err and "Traceback" not in err


def test_int_list_parses_comma_separated_positive_integers():
    import argparse

    from iclr24.paperkit.cli import int_list

    widths = int_list("layer widths", "like 500 or 30,30")
    assert widths("500") == (500,) and widths("30, 30,") == (30, 30)
    for bad, says in (("3x", "comma-separated layer widths like 500 or 30,30, got '3x'"),
                      ("0,4", "positive layer widths, got '0,4'"), ("", "positive layer widths")):  # fmt: skip
        with pytest.raises(argparse.ArgumentTypeError, match=says):
            widths(bad)
    epochs = int_list("epochs", "such as 30,70,90", increasing=True)
    assert epochs("30,70,90") == (30, 70, 90)
    with pytest.raises(
        argparse.ArgumentTypeError, match="increasing positive epochs such as 30,70,90, got '70,30'"
    ):
        epochs("70,30")


def test_seed_list_reads_seeds_and_inclusive_ranges_in_order():
    import argparse

    from iclr24.paperkit.cli import seed_list

    assert seed_list("7") == [7] and seed_list("100-103") == [100, 101, 102, 103]
    assert seed_list("200-202,220,5-6") == [200, 201, 202, 220, 5, 6]
    for bad in ("3x", "", "1,,2", "-3"):
        with pytest.raises(ValueError):
            seed_list(bad)
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=seed_list)
    assert p.parse_args(["--seeds", "1-2,9"]).seeds == [1, 2, 9]


def test_read_json_object_names_the_file_and_what_it_should_be(tmp_path):
    from iclr24.paperkit.cli import read_json_object
    from iclr24.paperkit.errors import InputError

    good, bad, listed = tmp_path / "r.json", tmp_path / "bad.json", tmp_path / "list.json"
    good.write_text('{"a": 1}')
    bad.write_text("{not json")
    listed.write_text("[1, 2]")
    assert read_json_object(good, "a results.json") == {"a": 1}
    with pytest.raises(InputError, match=r"bad.json is not a results.json \(Expecting"):
        read_json_object(bad, "a results.json")
    with pytest.raises(InputError, match=r"list.json is not a results.json \(not a JSON object\)"):
        read_json_object(listed, "a results.json")


def test_resume_given_as_a_switch_is_the_commands_last_flag_and_continues_when_given(tmp_path, capsys):
    from iclr24.paperkit.cli import resume_arg
    from iclr24.paperkit.runfolder import read_marker

    app = App("demo", "A demo tool.")

    @app.command(
        "train", "Train a toy.", arg("--steps", type=int, default=3, help="steps"), resume=resume_arg()
    )
    def train(args):
        (args.out / "w.txt").write_text(str(args.resume))

    out = tmp_path / "run"
    assert app.main(["train", "--out", str(out)]) == 0
    assert app.main(["train", "--out", str(out)]) == 2  # an earlier run, no --resume: refused
    assert app.main(["train", "--out", str(out), "--resume"]) == 0
    assert [r["status"] for r in read_marker(out)["runs"]] == ["complete", "complete"]
    capsys.readouterr()
    with pytest.raises(SystemExit):
        app.main(["train", "--help"])
    own = capsys.readouterr().out.split("common options")[0]
    assert own.index("--steps") < own.index("--resume") and "OUT/train_state.pt" in own


def test_parse_with_write_adds_write_and_measured_and_refuses_write_alone(capsys):
    import argparse

    from iclr24.paperkit.cli import parse_with_write

    def parser():
        p = argparse.ArgumentParser(prog="calibrate.py")
        p.add_argument("--seeds", default="1")
        return p

    a = parse_with_write(parser(), ["--seeds", "2"])
    assert (a.seeds, a.write, a.measured) == ("2", False, None)
    a = parse_with_write(parser(), ["--write", "--measured", "2026-12-08, commit abc, 1 thread"])
    assert a.write and a.measured.startswith("2026-12-08")
    with pytest.raises(SystemExit) as e:
        parse_with_write(parser(), ["--write", "--measured", "  "])
    assert e.value.code == 2
    assert "--write needs --measured" in capsys.readouterr().err
    p = parser()
    parse_with_write(p, [], what="this run's accuracies")
    assert "merge this run's accuracies into calibration.json" in " ".join(p.format_help().split())


def test_parse_with_write_puts_the_flags_on_each_subcommand(capsys):
    import argparse

    from iclr24.paperkit.cli import parse_with_write

    p = argparse.ArgumentParser(prog="calibrate.py")
    sub = p.add_subparsers(dest="what", required=True)
    commands = {"sweep": sub.add_parser("sweep"), "cnn": sub.add_parser("cnn")}
    what = {"sweep": "the sweep's values", "cnn": "the CNN's CKA"}
    a = parse_with_write(p, ["cnn", "--write", "--measured", "today"], what=what, commands=commands)
    assert (a.what, a.write, a.measured) == ("cnn", True, "today")
    assert "merge the sweep's values into calibration.json" in " ".join(
        commands["sweep"].format_help().split()
    )
    p = argparse.ArgumentParser(prog="calibrate.py")
    sub = p.add_subparsers(dest="what", required=True)
    with pytest.raises(SystemExit) as e:
        parse_with_write(p, ["sweep", "--write"], what=what, commands={"sweep": sub.add_parser("sweep")})
    assert e.value.code == 2 and "--write needs --measured" in capsys.readouterr().err
