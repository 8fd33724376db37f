import json
import subprocess
import sys

import pytest

from iclr24.paperkit.runner.report import discover_papers
from iclr24.paperkit.runner.umbrella import main


def test_fake_entry_points_are_discovered(fake_papers):
    names = discover_papers()
    assert {"fake-ok", "fake-crash", "fake-bad"} <= set(names)


def test_list_shows_summaries(fake_papers, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "fake-ok" in out and "fake one-line claim" in out
    assert "fake-bad" in out and "cannot load" in out


def test_reproduce_writes_report_and_survives_a_crash(fake_papers, tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["reproduce", "fake-ok", "fake-crash", "--smoke", "--out", str(out), "--seed", "3", "--quiet"])
    assert rc == 1  # a package crashed
    doc = json.loads((out / "claims.json").read_text())
    assert doc["version"] == 3 and doc["mode"] == "smoke"
    ok, crash = doc["papers"]
    assert ok["name"] == "fake-ok" and ok["status"] == "ok" and ok["error"] is None
    assert ok["folder"] == "fake-ok/reproduce"
    # smoke mode: no verdicts, in claims.json and REPORT.md alike
    assert [c["verdict"] for c in ok["claims"]] == ["smoke", "smoke"]
    assert [c["holds"] for c in ok["claims"]] == [None, None]
    assert ok["claims"][0]["details"] == {"mode": "smoke", "seed": 3}
    assert ok["claims"][0]["artifacts"] == ["plot.txt"] and (out / "fake-ok/reproduce/plot.txt").exists()
    assert crash["status"] == "failed" and "boom in fake-crash" in crash["error"] and crash["claims"] == []
    report = (out / "REPORT.md").read_text()
    assert "ok beats base" in report and "fake-crash" in report and "boom" in report
    assert "does NOT hold" not in report and "**no**" not in report and "smoke: pipeline only" in report
    # each paper's folder holds its own report, as `<name> reproduce --out that-folder` writes it
    own = json.loads((out / "fake-ok/reproduce/claims.json").read_text())
    assert own["version"] == 3 and [p["name"] for p in own["papers"]] == ["fake-ok"]
    assert (out / "fake-ok/reproduce/REPORT.md").exists()


def test_claim_that_does_not_hold_is_a_finding_unless_strict(fake_papers, tmp_path):
    assert main(["reproduce", "fake-ok", "--quick", "--out", str(tmp_path / "a"), "--quiet"]) == 0
    doc = json.loads((tmp_path / "a" / "claims.json").read_text())
    assert [c["verdict"] for c in doc["papers"][0]["claims"]] == ["holds", "fails"]
    assert main(["reproduce", "fake-ok", "--quick", "--out", str(tmp_path / "b"), "--quiet", "--strict"]) == 1


def test_v2_claim_set_error_is_partial_and_report_shows_summary_facts_plots(fake_papers, tmp_path):
    out = tmp_path / "r"
    assert main(["reproduce", "fake-v2", "--quick", "--out", str(out), "--quiet"]) == 0
    rec = json.loads((out / "claims.json").read_text())["papers"][0]
    assert rec["status"] == "partial"
    assert [c["verdict"] for c in rec["claims"]] == ["holds", "error"]
    assert rec["claims"][1]["message"] == "ValueError: measured nothing"
    assert rec["facts"][0]["name"] == "threads" and rec["artifacts"] == ["p.png"]
    report = (out / "REPORT.md").read_text()
    assert report.index("| paper | status | headline | claims held") < report.index("## fake-v2")
    assert "| fake-v2 | partial | - | 1/1 | 1 error | - | 1 |" in report
    assert "![p.png](fake-v2/reproduce/p.png)" in report and "### Facts" in report
    assert main(["reproduce", "fake-v2", "--quick", "--out", str(tmp_path / "s"), "--quiet", "--strict"]) == 1


@pytest.mark.slow  # spawns two worker processes that import paperkit
def test_jobs_runs_papers_in_parallel_processes_with_declared_threads(fake_papers, tmp_path, monkeypatch):
    import os

    monkeypatch.setenv("PYTHONPATH", str(fake_papers) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / "j"
    rc = main(["reproduce", "fake-ok", "fake-v2", "--quick", "--jobs", "2", "--out", str(out), "--quiet"])
    assert rc == 0
    doc = json.loads((out / "claims.json").read_text())
    assert [p["name"] for p in doc["papers"]] == [
        "fake-ok",
        "fake-v2",
    ]  # the order asked for, not of completion
    threads = doc["papers"][1]["facts"][0]["value"]
    assert threads == 1  # the paper's declared threads (Paper.threads, default 1), whatever the core count
    assert all(p["isolated"] and p["threads"] == 1 for p in doc["papers"])
    assert (out / "fake-ok/reproduce/plot.txt").exists() and (out / "fake-v2/reproduce/REPORT.md").exists()


def test_entry_point_that_is_not_a_paper_is_recorded_as_failed(fake_papers, tmp_path):
    assert main(["reproduce", "fake-bad", "--smoke", "--out", str(tmp_path), "--quiet"]) == 1
    doc = json.loads((tmp_path / "claims.json").read_text())
    assert "expected a Paper" in doc["papers"][0]["error"]


def test_unknown_name_is_exit_2(fake_papers, tmp_path, capsys):
    assert main(["reproduce", "no-such-paper", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown paper package(s): no-such-paper" in err and "fake-ok" in err
    assert not (tmp_path / "claims.json").exists()


def test_out_that_is_a_file_is_exit_2(fake_papers, tmp_path, capsys):
    f = tmp_path / "file.txt"
    f.write_text("keep me")
    assert main(["reproduce", "fake-ok", "--smoke", "--out", str(f)]) == 2
    err = capsys.readouterr().err
    assert "is a file" in err and len(err.strip().splitlines()) == 1
    assert f.read_text() == "keep me"


def test_console_script_bad_arguments_no_traceback():
    exe = [sys.executable, "-m", "iclr24.paperkit.runner.umbrella"]
    p = subprocess.run([*exe, "reproduce", "--smoke", "--full"], capture_output=True, text=True)
    assert p.returncode == 2 and "not allowed with argument" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = subprocess.run([*exe, "reproduce", "--seed", "abc"], capture_output=True, text=True)
    assert p.returncode == 2 and "seed" in p.stderr
    p = subprocess.run([*exe, "list"], capture_output=True, text=True)
    assert p.returncode == 0


def test_reproduce_into_an_earlier_reproduce_needs_overwrite_and_leaves_other_runs(
    fake_papers, tmp_path, capsys
):
    """`iclr24 reproduce --out results` owns REPORT.md, claims.json and <name>/reproduce/ there, nothing else."""
    out = tmp_path / "results"
    train = out / "fake-ok" / "train"  # another command's run in the same folder
    assert main(["reproduce", "fake-ok", "fake-v2", "--smoke", "--out", str(out), "--quiet"]) == 0
    train.mkdir()
    (train / "model.pt").write_text("a model")
    capsys.readouterr()
    assert main(["reproduce", "fake-ok", "--smoke", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--overwrite" in err and "iclr24 reproduce" in err
    assert main(["reproduce", "fake-ok", "--smoke", "--out", str(out), "--quiet", "--overwrite"]) == 0
    assert [p["name"] for p in json.loads((out / "claims.json").read_text())["papers"]] == ["fake-ok"]
    assert not (out / "fake-v2").exists()  # the earlier run's paper folder went with it
    assert (train / "model.pt").read_text() == "a model"
    # a paper's folder is a run folder of its own: the package's command refuses to write over it
    from iclr24.paperkit.runfolder import read_marker

    assert read_marker(out / "fake-ok" / "reproduce")["command"] == "iclr24 reproduce"
