import json

import pytest

from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing_workflow import check_help_lists
from iclr24.paperkit.runner.testing_workflow import check_usage_errors
from iclr24.persona_bias.cli import main


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_help_exits_zero():
    check_help_lists(main, ("run", "score", "stats", "report", "reproduce", "bench"))


def test_flags_only_where_they_mean_something():
    check_usage_errors(
        main,
        ["stats", "--out", "x"],
        ["run", "--smoke"],
        ["score", "--device", "cpu"],
        ["serve-loopback", "--out", "x"],
    )


@pytest.mark.slow
def test_bench_smoke(tmp_path, capsys):
    assert main(["bench", "--smoke", "--out", str(tmp_path)]) == 0
    assert "speedup" in capsys.readouterr().out and (tmp_path / "bench.json").exists()
    assert "resume a complete store" in (tmp_path / "bench.json").read_text()  # resume figures, 0 requests


def test_bad_argument_exits_2():
    check_usage_errors(main, ["reproduce", "--seed", "-1"])


def test_run_score_stats_report_end_to_end(tmp_path, capsys):
    common = ["--out", str(tmp_path), "--quiet"]
    args = [
        "run",
        "--backend",
        "loopback",
        "--datasets",
        "builtin-arithmetic,builtin-units",
        "--builtin-size",
        "25",
        "--personas",
        "a human,a physically-disabled person,a man",
        "--plant",
        "a physically-disabled person=0.6",
    ]
    assert main(args + common) == 0
    assert "150 requests: 0 cached, 150 sent" in capsys.readouterr().out
    assert main([*args, "--judge", *common]) == 0  # resumed: nothing re-sent; the LLM judge runs once
    out = capsys.readouterr().out
    assert "150 requests: 150 cached, 0 sent" in out and "LLM judge: 150 responses checked" in out
    assert main(["score", "--export", str(tmp_path / "official"), *common]) == 0
    out = capsys.readouterr().out
    assert "wrote 18 official files" in out and (tmp_path / "scored.jsonl").is_file()
    assert main(["stats", "--correction", "holm", "--store", str(tmp_path / "store"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "% personas biased: 50.0" in out
    assert main(["report", *common]) == 0
    for name in (
        "persona_bias_comparisons.md",
        "persona_bias_comparisons.csv",
        "persona_bias_drop_heatmap.png",
        "persona_bias_abstention.png",
    ):
        assert (tmp_path / name).stat().st_size > 0
    rows = [json.loads(line) for line in (tmp_path / "scored.jsonl").read_text().splitlines()]
    assert len(rows) == 150
    judged = [r for r in rows if r["persona"] == "a physically-disabled person"]
    assert any(r["abstained"] for r in judged)
    assert all(
        r["judge_abstained"] == r["abstained"] for r in rows
    )  # judge and rule agree on the planted texts


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--personas", "a wizard"], "unknown persona 'a wizard'"),
        (["run", "--templates", "be_nice"], "unknown persona template 'be_nice'"),
        (
            ["run", "--datasets", "mmlu-anatomy", "--data-dir", "/no/such/data"],
            "iclr24 data get mmlu --data-dir /no/such/data",
        ),
        (
            ["run", "--datasets", "mbpp", "--mbpp", "/no/such/file.jsonl"],
            "MBPP file /no/such/file.jsonl not found",
        ),
        (
            [
                "run",
                "--backend",
                "openai",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--max-retries",
                "1",
                "--datasets",
                "builtin-units",
                "--builtin-size",
                "2",
                "--personas",
                "a man",
            ],
            "failed after 2 attempts",
        ),
        (["run", "--backend", "openai"], "needs --base-url"),
        (["stats", "--store", "/no/such/store"], "no run store at"),
        (["run", "--plant", "oops"], "--plant expects PERSONA=PROBABILITY"),
    ],
)
def test_user_errors_exit_2_with_one_line(tmp_path, capsys, argv, message):
    out = [] if argv[0] == "stats" else ["--out", str(tmp_path)]  # stats writes nothing: no --out
    assert main([*argv, *out, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def test_score_on_store_without_valid_records_exits_2(tmp_path, capsys):
    store = tmp_path / "store"
    store.mkdir()
    (store / "responses.jsonl").write_text(
        '{"torn": \n\n{"model": "m"}\n'
    )  # torn line + record without a key
    for cmd in ("score", "report"):
        assert main([cmd, "--store", str(store), "--out", str(tmp_path / cmd), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert "no valid records" in err and len(err.strip().splitlines()) == 1
    assert main(["stats", "--store", str(store)]) == 2
    assert not (tmp_path / "score" / "scored.jsonl").exists()


def test_out_or_store_naming_a_file_is_one_line_error(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["run", "--out", str(afile), "--limit", "2", "--quiet"]) == 2
    assert "is a file" in capsys.readouterr().err
    out = tmp_path / "o"
    assert main(["run", "--store", str(afile / "store"), "--out", str(out), "--limit", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Errno" not in err and "has a file in its path" in err and len(err.strip().splitlines()) == 1
    assert afile.read_text() == "x"


def test_failed_validation_leaves_no_store_folder(tmp_path, capsys):
    for extra in (
        ["--backend", "openai"],
        ["--backend", "transformers"],
        ["--backend", "loopback", "--plant", "nonsense"],
        ["--backend", "transformers", "--model-path", str(tmp_path / "missing-model")],
    ):
        out = tmp_path / "run"
        assert main(["run", *extra, "--out", str(out), "--quiet"]) == 2
        assert not (out / "store").exists(), extra
        capsys.readouterr()


def test_unreachable_endpoint_leaves_no_empty_store(tmp_path, capsys):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens on this port now
    out = tmp_path / "run"
    argv = ["run", "--backend", "openai", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m"]
    argv += ["--max-retries", "0", "--timeout", "2", "--limit", "1", "--personas", "a human"]
    argv += ["--datasets", "builtin-units", "--out", str(out), "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no run store was kept" in err[0]
    assert not (out / "store").exists()


def test_cli_defaults_are_the_configs():
    from iclr24.persona_bias.analysis import compare_personas
    from iclr24.persona_bias.backends import OpenAIBackend
    from iclr24.persona_bias.backends import TransformersBackend
    from iclr24.persona_bias.cli import app
    from iclr24.persona_bias.config import GenerationConfig
    from iclr24.persona_bias.data import load_dataset

    run = (GenerationConfig, OpenAIBackend, TransformersBackend, load_dataset)
    check_app_defaults(app, {"run": run, "stats": compare_personas, "report": compare_personas,
                             "serve-loopback": load_dataset})  # fmt: skip
