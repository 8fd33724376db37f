"""The claims' calibration numbers are package data (calibration.json), and ``scripts/calibrate.py --write``
merges a run into that file."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from iclr24.paperkit.power import CALIBRATION_FILE
from iclr24.paperkit.power import calibration_path
from iclr24.paperkit.power import calibration_table
from iclr24.paperkit.runner.testing_workflow import load_script
from iclr24.rlcf.reproduce import CALIBRATION_SEEDS
from iclr24.rlcf.reproduce import CLAIMS
from iclr24.rlcf.reproduce import DEMO
from iclr24.rlcf.reproduce import IDLE_FACTOR
from iclr24.rlcf.reproduce import ROWS

FILE = calibration_path("iclr24.rlcf")
SCRIPT = Path(__file__).parents[1] / "scripts" / "calibrate.py"


@pytest.fixture(scope="module")
def script():
    return load_script(SCRIPT)


def test_every_claims_calibration_is_the_files_row():
    t = calibration_table("iclr24.rlcf")
    assert [k for k in t if k != "measured"] == ["full", "quick"]
    for spec in CLAIMS:
        ours, base = ROWS[spec.id]
        for mode, cal in spec.calibration.items():
            assert cal.seeds == t[mode]["seeds"] == CALIBRATION_SEEDS
            assert (cal.ours, cal.baseline) == (t[mode][ours], t[mode][base])
            assert cal.seconds_per_seed == round(IDLE_FACTOR * t[mode]["cpu_seconds"], 1)
            assert cal.measured == t["measured"]


def _row(seed, v, prefix=None):
    methods = DEMO["full"].methods
    row = {"seed": seed, "policy_zero_shot": v, "reward_zero_shot": v + 1, "accuracy": {m: v + 2 for m in methods},
           "train_cpu_s": 10.0, "tta_cpu_s": 2.04}  # fmt: skip
    if prefix:
        row["prefix"] = {prefix: {"policy_zero_shot": -v, "reward_zero_shot": -v, **{m: -v for m in methods}}}
    return row


def test_write_merges_what_maps_and_keeps_the_rest(script, tmp_path):
    path = shutil.copy(FILE, tmp_path / CALIBRATION_FILE)
    before = json.loads(FILE.read_text())
    warned = []
    script.write(
        DEMO["full"], [_row(201, 7.5), _row(250, 8.0)], path, warned.append, measured="2026-12-08, full"
    )
    after = json.loads(Path(path).read_text())
    assert warned == ["full: seed 250 left out (the file holds seeds [200, 201, 202, 203, 204, 205, 206, 207, 208, "
                      "209])"]  # fmt: skip
    full = after["full"]
    assert (full["policy_zero_shot"][1], full["reward_zero_shot"][1], full["rlcf"][1]) == (7.5, 8.5, 9.5)
    assert full["cpu_seconds"] == 12.0
    for key in full:
        if key != "seeds" and key != "cpu_seconds":
            assert full[key][:1] + full[key][2:] == before["full"][key][:1] + before["full"][key][2:]
    assert after["quick"] == before["quick"] and after["measured"] == "2026-12-08, full"
    # quick's calibration: the first 60 digits of a 150-digit run at quick's training (no CPU seconds)
    cfg = dataclasses.replace(DEMO["quick"], n_test=150)
    script.write(cfg, [_row(200, 3.0, prefix=60)], path, warned.append, measured="prefix run")
    quick = json.loads(Path(path).read_text())["quick"]
    assert quick["kd"][0] == -3.0 and quick["kd"][1:] == before["quick"]["kd"][1:]
    assert quick["cpu_seconds"] == before["quick"]["cpu_seconds"]
    assert json.loads(Path(path).read_text())["measured"] == "prefix run"
    # a subset of the methods: their numbers, not the CPU seconds; another config: nothing
    script.write(
        dataclasses.replace(DEMO["quick"], methods=("rlcf",)),
        [_row(202, 1.0)],
        path,
        warned.append,
        measured="sub",
    )
    quick = json.loads(Path(path).read_text())["quick"]
    assert quick["rlcf"][2] == 3.0 and quick["cpu_seconds"] == before["quick"]["cpu_seconds"]
    unchanged = Path(path).read_text()
    script.write(
        dataclasses.replace(DEMO["quick"], reward_width=16),
        [_row(202, 1.0)],
        path,
        warned.append,
        measured="x",
    )
    assert Path(path).read_text() == unchanged and warned[-1].startswith("nothing written")
    # a subset of the methods on seeds the file does not hold: nothing written, the provenance kept
    script.write(
        dataclasses.replace(DEMO["quick"], methods=("rlcf",)),
        [_row(250, 1.0)],
        path,
        warned.append,
        measured="y",
    )
    assert Path(path).read_text() == unchanged and json.loads(unchanged)["measured"] == "sub"
    with pytest.raises(ValueError, match="needs measured"):
        script.write(DEMO["full"], [_row(201, 7.5)], path, warned.append, measured="")
    assert json.loads(FILE.read_text()) == before  # the package's own file untouched


def test_write_needs_measured_before_running(script, capsys):
    with pytest.raises(SystemExit) as e:
        script.main(["--mode", "quick", "--seeds", "200", "--write"])
    assert e.value.code == 2 and "--write needs --measured" in capsys.readouterr().err
