"""`task-geometry run` twice into one --out: the second run is refused, or with --overwrite replaces the first run's
folder whole (the cube's geometry.png does not stay beside the random task's results)."""

import json

from iclr24.task_geometry.cli import main

TINY = [
    "--P",
    "4",
    "--act",
    "tanh",
    "--seeds",
    "1",
    "--epochs",
    "1",
    "--n-samples",
    "64",
    "--width",
    "8",
    "--classifier",
    "ridge",
    "--quiet",
]


def test_a_second_run_into_the_same_out_is_refused_or_replaces_the_first(tmp_path, capsys):
    out = tmp_path / "X"
    assert main(["run", "--task", "cube", *TINY, "--out", str(out)]) == 0
    assert (out / "geometry.png").is_file() and (out / "results.json").is_file()
    first = (out / "results.json").read_bytes()
    capsys.readouterr()
    assert main(["run", "--task", "random", *TINY, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and "holds an earlier run of `task-geometry run`" in err[0] and "--overwrite" in err[0]
    )
    assert (out / "results.json").read_bytes() == first  # nothing was touched
    assert main(["run", "--task", "random", *TINY, "--out", str(out), "--overwrite"]) == 0
    assert not (out / "geometry.png").exists()  # the cube run's plot went with its folder
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert rows and "ccgp" in rows[0] and "cka_input" in rows[0]  # the random task's rows
    run = json.loads((out / ".iclr24-run.json").read_text())
    assert run["command"] == "task-geometry run" and "random" in run["runs"][0]["argv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["X"]  # no lock or set-aside folder left beside it
