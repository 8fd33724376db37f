"""Run folders: a new run never leaves an earlier run's files beside its own, --overwrite replaces the whole folder
only once the new run returned, a lock refuses a second run into the same --out, and a shared --out (parts) is
handled entry by entry."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import arg
from iclr24.paperkit.runfolder import MARKER
from iclr24.paperkit.runfolder import RunFolder
from iclr24.paperkit.runfolder import RunFolderError
from iclr24.paperkit.runfolder import read_marker
from iclr24.paperkit.runner.testing_workflow import fail_as


def make_app(calls=None):
    app = App("demo", "A demo tool.")

    @app.command(
        "go",
        "Write FILE.",
        arg("--file", default="a.txt", help="file to write"),
        arg("--fail", default="", help="how to fail"),
    )
    def go(args):
        (args.out / args.file).write_text(args.file)
        if calls is not None:
            calls.append(args)
        fail_as(args.fail)
        if args.fail == "rc1":
            return 1
        if args.fail == "again":  # a second run into the same --out while this one runs
            return 10 + app.main(["go", "--out", str(args.out), "--file", "b.txt", "--overwrite"])
        return 0

    @app.command("train", "Resumable.", arg("--no-resume", action="store_true", help="start afresh"),
                 resume=lambda a: not a.no_resume)  # fmt: skip
    def train(args):
        n = int((args.out / "steps").read_text()) if (args.out / "steps").exists() else 0
        (args.out / "steps").write_text(str(n + 1))

    @app.command(
        "plot", "Adds a plot to a go run.", arg("--fail", default="", help="how to fail"), adds_to=("go",)
    )
    def plot(args):
        (args.out / "plot.png").write_text("png")
        if args.fail == "usage":
            raise ValueError("no results.json in --out")

    return app


def _one_line(capsys) -> str:
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def _beside(folder):
    """What a run left beside its folder (locks, set-aside runs)."""
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}."))


def test_a_run_folder_carries_a_marker(tmp_path):
    out = tmp_path / "x"
    assert make_app().main(["go", "--out", str(out), "--file", "a.txt"]) == 0
    m = read_marker(out)
    assert m["command"] == "demo go" and m["runs"][0]["status"] == "complete"
    assert m["runs"][0]["argv"] == ["go", "--out", str(out), "--file", "a.txt"]
    assert sorted(os.listdir(out)) == [MARKER, "a.txt"] and _beside(out) == []


def test_an_earlier_run_is_refused_without_overwrite_and_replaced_with_it(tmp_path, capsys):
    out = tmp_path / "x"
    assert make_app().main(["go", "--out", str(out), "--file", "a.txt"]) == 0
    capsys.readouterr()
    assert make_app().main(["go", "--out", str(out), "--file", "b.txt"]) == 2
    line = _one_line(capsys)
    assert "holds an earlier run of `demo go`" in line and "--overwrite" in line and str(out) in line
    assert sorted(os.listdir(out)) == [MARKER, "a.txt"]  # untouched
    assert make_app().main(["go", "--out", str(out), "--file", "b.txt", "--overwrite"]) == 0
    assert sorted(os.listdir(out)) == [MARKER, "b.txt"]  # the stale a.txt is gone
    assert read_marker(out)["runs"][0]["argv"][-2:] == ["b.txt", "--overwrite"]
    assert _beside(out) == []


@pytest.mark.parametrize("how", ["usage", "bug", "interrupt"])
def test_a_failed_overwrite_leaves_the_earlier_run_as_it_was(tmp_path, how):
    out = tmp_path / "x"
    assert make_app().main(["go", "--out", str(out), "--file", "a.txt"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    argv = ["go", "--out", str(out), "--file", "b.txt", "--fail", how, "--overwrite"]
    if how == "bug":
        with pytest.raises(RuntimeError):
            make_app().main(argv)
    else:
        assert make_app().main(argv) in (2, 130)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert _beside(out) == []


def test_a_non_zero_exit_still_replaces_the_earlier_run(tmp_path):
    """A command that returned wrote its whole output (e.g. a --strict report whose claims fail)."""
    out = tmp_path / "x"
    assert make_app().main(["go", "--out", str(out), "--file", "a.txt"]) == 0
    assert make_app().main(["go", "--out", str(out), "--file", "b.txt", "--fail", "rc1", "--overwrite"]) == 1
    assert sorted(os.listdir(out)) == [MARKER, "b.txt"]
    assert read_marker(out)["runs"][0]["status"] == "exit 1"


def test_a_folder_of_other_files_is_never_replaced(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert make_app().main(["go", "--out", str(out), "--overwrite"]) == 2
    line = _one_line(capsys)
    assert "holds no iclr24 run" in line and "--overwrite replaces only a folder an iclr24 run wrote" in line
    assert os.listdir(out) == ["notes.txt"]


def test_a_second_run_into_the_same_out_is_refused_while_one_runs(tmp_path, capsys):
    out = tmp_path / "x"
    assert make_app().main(["go", "--out", str(out), "--fail", "again"]) == 12  # the inner run exited 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is in use by another run" in err[0] and "demo go" in err[0]
    assert f"pid {os.getpid()}" in err[0]
    assert sorted(os.listdir(out)) == [MARKER, "a.txt"]  # the first run's folder, the second wrote nothing
    assert _beside(out) == []  # the lock went with the run
    assert make_app().main(["go", "--out", str(tmp_path / "y")]) == 0  # another --out is not locked


def test_a_lock_held_by_another_process_refuses(tmp_path):
    out = tmp_path / "x"
    holder = textwrap.dedent(f"""
        import fcntl, os, sys, time
        fd = os.open({str(tmp_path / ".x.iclr24-lock")!r}, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, b'{{"pid": 1234, "command": "demo go"}}')
        print("locked", flush=True)
        sys.stdin.read()
    """)
    p = subprocess.Popen(
        [sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert p.stdout.readline().strip() == "locked"
        with pytest.raises(RunFolderError, match=r"in use by another run \(command demo go, pid 1234\)"):
            RunFolder(out, command="demo go").open()
        assert not out.exists()
    finally:
        p.stdin.close()
        p.wait(timeout=60)
    with RunFolder(out, command="demo go"):  # the holder is gone: free again
        (out / "a.txt").write_text("a")
    assert read_marker(out)["runs"][0]["status"] == "complete"


def test_a_killed_overwrite_run_is_put_back_by_the_next_run(tmp_path, capsys):
    out = tmp_path / "x"
    assert make_app().main(["go", "--out", str(out), "--file", "a.txt"]) == 0
    script = textwrap.dedent(f"""
        import os, signal
        from iclr24.paperkit.runfolder import RunFolder
        rf = RunFolder({str(out)!r}, command="demo go", overwrite=True).open()
        open(os.path.join({str(out)!r}, "half.txt"), "w").write("half")
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == -9
    assert "half.txt" in os.listdir(out) and any(n.startswith(".x.iclr24-old-") for n in _beside(out))
    capsys.readouterr()
    assert make_app().main(["go", "--out", str(out), "--file", "b.txt"]) == 2  # the earlier run is back
    err = capsys.readouterr().err
    assert "put back the earlier run" in err and "holds an earlier run of `demo go`" in err
    assert sorted(os.listdir(out)) == [MARKER, "a.txt"] and _beside(out) == []


def test_a_resumable_command_continues_its_own_run(tmp_path, capsys):
    out = tmp_path / "run"
    assert make_app().main(["train", "--out", str(out)]) == 0
    assert make_app().main(["train", "--out", str(out)]) == 0
    assert (out / "steps").read_text() == "2"
    assert [r["status"] for r in read_marker(out)["runs"]] == ["complete", "complete"]
    capsys.readouterr()
    assert make_app().main(["train", "--out", str(out), "--no-resume"]) == 2  # afresh: only with --overwrite
    assert "--overwrite" in _one_line(capsys)
    assert make_app().main(["train", "--out", str(out), "--no-resume", "--overwrite"]) == 0
    assert (out / "steps").read_text() == "1" and len(read_marker(out)["runs"]) == 1
    assert make_app().main(["go", "--out", str(out)]) == 2  # another command does not continue it


def test_a_command_adds_its_files_to_the_run_it_belongs_to(tmp_path, capsys):
    out = tmp_path / "x"
    assert make_app().main(["go", "--out", str(out)]) == 0
    before = (out / MARKER).read_bytes()
    assert make_app().main(["plot", "--out", str(out), "--fail", "usage"]) == 2
    assert (out / MARKER).read_bytes() == before  # a user error: the marker is as it was
    assert make_app().main(["plot", "--out", str(out)]) == 0
    assert sorted(os.listdir(out)) == [MARKER, "a.txt", "plot.png"]
    m = read_marker(out)
    assert m["command"] == "demo go" and [r["command"] for r in m["runs"]] == ["demo go", "demo plot"]
    train = tmp_path / "t"
    assert make_app().main(["train", "--out", str(train)]) == 0
    capsys.readouterr()
    assert make_app().main(["plot", "--out", str(train)]) == 2  # not a run it adds to
    assert "holds an earlier run of `demo train`" in _one_line(capsys)


def test_under_torchrun_only_rank_0_manages_the_folder(tmp_path, monkeypatch):
    out = tmp_path / "x"
    assert make_app().main(["go", "--out", str(out)]) == 0
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    calls = []
    assert make_app(calls).main(["go", "--out", str(out), "--file", "r1.txt"]) == 0  # no refusal, no marker
    assert len(calls) == 1 and read_marker(out)["runs"][0]["argv"][-1] == str(out)
    monkeypatch.setenv("RANK", "0")
    assert make_app().main(["go", "--out", str(out), "--file", "r0.txt"]) == 2


def make_shared_app():
    app = App("umb", "A shared --out.")

    @app.command(
        "reproduce",
        "Writes REPORT.md and NAME/reproduce/ per name.",
        arg("names", nargs="*", help="names"),
        arg("--fail", action="store_true", help="fail after writing"),
        parts=lambda a: ["REPORT.md", *[f"{n}/reproduce/" for n in a.names]],
    )
    def reproduce(args):
        for n in args.names:
            (args.out / n / "reproduce" / "claims.json").write_text(n)
        (args.out / "REPORT.md").write_text(" ".join(args.names))
        if args.fail:
            raise ValueError("bad")

    return app


def test_a_shared_out_replaces_only_its_own_entries(tmp_path, capsys):
    out = tmp_path / "results"
    other = out / "a" / "train"
    other.mkdir(parents=True)
    (other / "model.pt").write_text("other run")
    assert make_shared_app().main(["reproduce", "a", "b", "--out", str(out)]) == 0
    assert read_marker(out / "a" / "reproduce")["command"] == "umb reproduce"  # each folder entry is a run
    capsys.readouterr()
    assert make_shared_app().main(["reproduce", "c", "--out", str(out)]) == 2
    line = _one_line(capsys)
    assert "holds an earlier run of `umb reproduce`" in line and "--overwrite" in line
    before = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert make_shared_app().main(["reproduce", "c", "--out", str(out), "--overwrite", "--fail"]) == 2
    assert {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert make_shared_app().main(["reproduce", "c", "--out", str(out), "--overwrite"]) == 0
    assert not (out / "a" / "reproduce").exists() and not (out / "b").exists()  # the earlier run's entries
    assert (out / "c" / "reproduce" / "claims.json").read_text() == "c" and (
        out / "REPORT.md"
    ).read_text() == "c"
    assert (other / "model.pt").read_text() == "other run"  # another command's run in the shared folder stays
    assert _beside(out) == []


def test_a_shared_out_user_error_leaves_nothing_new(tmp_path):
    out = tmp_path / "results"
    assert make_shared_app().main(["reproduce", "a", "--out", str(out), "--fail"]) == 2
    assert not out.exists() and os.listdir(tmp_path) == []
    out.mkdir()
    (out / "keep.txt").write_text("k")
    assert make_shared_app().main(["reproduce", "a", "--out", str(out), "--fail"]) == 2
    assert os.listdir(out) == ["keep.txt"]


def test_a_run_folder_is_not_a_shared_out_and_back(tmp_path, capsys):
    out = tmp_path / "x"
    assert make_app().main(["go", "--out", str(out)]) == 0
    capsys.readouterr()
    assert make_shared_app().main(["reproduce", "a", "--out", str(out), "--overwrite"]) == 2
    assert "holds an earlier run of `demo go`" in _one_line(capsys)
    shared = tmp_path / "results"
    assert make_shared_app().main(["reproduce", "a", "--out", str(shared)]) == 0
    capsys.readouterr()
    assert make_app().main(["go", "--out", str(shared), "--overwrite"]) == 2  # never wiped as one folder
    assert "beside other runs" in _one_line(capsys)
    assert (shared / "a" / "reproduce" / "claims.json").exists()


def test_marker_is_json_with_the_run_history(tmp_path):
    out = tmp_path / "x"
    assert make_app().main(["go", "--out", str(out), "--fail", "rc1"]) == 1
    doc = json.loads((out / MARKER).read_text())
    assert (
        doc["format"] == "iclr24.run/1"
        and doc["runs"][0]["status"] == "exit 1"
        and doc["runs"][0]["finished"]
    )


def test_a_run_that_writes_nothing_into_out_leaves_no_folder(tmp_path):
    """Its output went elsewhere (e.g. a --samples FILE): no marker, no folder, nothing to refuse next time."""
    app = App("demo", "A demo tool.")

    @app.command("elsewhere", "Writes beside --out only.", arg("--to", help="file"))
    def elsewhere(args):
        open(args.to, "w").write("x")

    out = tmp_path / "results" / "x"
    assert app.main(["elsewhere", "--to", str(tmp_path / "f.txt"), "--out", str(out)]) == 0
    assert sorted(os.listdir(tmp_path)) == ["f.txt"]
    out.mkdir(parents=True)
    assert app.main(["elsewhere", "--to", str(tmp_path / "g.txt"), "--out", str(out)]) == 0
    assert out.is_dir() and os.listdir(out) == []  # a folder that existed stays, empty
