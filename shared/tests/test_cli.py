import pytest

from iclr24.paperkit.cli import App, UsageError, arg, positive_int, probability, resolve_device


def make_app(seen):
    app = App("demo", "A demo tool.")

    @app.command(
        "go",
        "Do it.",
        arg("--k", type=positive_int, default=3, help="how many"),
        arg("--p", type=probability, default=0.5, help="a probability"),
    )
    def go(args):
        seen.update(vars(args))
        if args.k == 13:
            raise UsageError("13 is unlucky")
        if args.k == 14:
            raise FileNotFoundError("no such file: data.csv")
        if args.k == 15:
            raise RuntimeError("a real bug")
        return 0

    return app


def test_common_flags_and_defaults(tmp_path):
    seen = {}
    assert make_app(seen).main(["go", "--out", str(tmp_path), "--seed", "5", "--full", "--quiet"]) == 0
    assert seen["mode"] == "full" and seen["seed"] == 5 and seen["out"] == tmp_path and seen["quiet"]
    seen.clear()
    make_app(seen).main(["go"])
    assert seen["mode"] == "quick" and seen["device"] == "cpu" and seen["k"] == 3


def test_help_shows_defaults(capsys):
    with pytest.raises(SystemExit) as e:
        make_app({}).main(["go", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "(default: 3)" in out and "--smoke" in out and "--out" in out


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
