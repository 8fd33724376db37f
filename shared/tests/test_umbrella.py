import json
import subprocess
import sys

from iclr24.paperkit.report import discover_papers
from iclr24.paperkit.umbrella import main


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
    assert doc["version"] == 1 and doc["mode"] == "smoke"
    ok, crash = doc["papers"]
    assert ok["name"] == "fake-ok" and ok["status"] == "ok" and ok["error"] is None
    assert [c["holds"] for c in ok["claims"]] == [True, False]
    assert ok["claims"][0]["details"] == {"mode": "smoke", "seed": 3}
    assert ok["claims"][0]["artifacts"] == ["fake-ok/plot.txt"] and (out / "fake-ok" / "plot.txt").exists()
    assert crash["status"] == "failed" and "boom in fake-crash" in crash["error"] and crash["claims"] == []
    report = (out / "REPORT.md").read_text()
    assert "ok beats base" in report and "fake-crash" in report and "boom" in report


def test_claim_that_does_not_hold_is_a_finding_unless_strict(fake_papers, tmp_path):
    assert main(["reproduce", "fake-ok", "--smoke", "--out", str(tmp_path / "a"), "--quiet"]) == 0
    assert main(["reproduce", "fake-ok", "--smoke", "--out", str(tmp_path / "b"), "--quiet", "--strict"]) == 1


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
    assert "is a file" in capsys.readouterr().err
    assert f.read_text() == "keep me"


def test_console_script_bad_arguments_no_traceback():
    exe = [sys.executable, "-m", "iclr24.paperkit.umbrella"]
    p = subprocess.run([*exe, "reproduce", "--smoke", "--full"], capture_output=True, text=True)
    assert p.returncode == 2 and "not allowed with argument" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([*exe, "reproduce", "--seed", "abc"], capture_output=True, text=True)
    assert p.returncode == 2 and "seed" in p.stderr
    p = subprocess.run([*exe, "list"], capture_output=True, text=True)
    assert p.returncode == 0
