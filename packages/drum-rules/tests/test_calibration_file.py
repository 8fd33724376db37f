"""The accuracy claims' calibration numbers are package data (calibration.json), and ``scripts/calibrate.py
--write`` merges a run into that file."""

import json
import shutil
from pathlib import Path

import pytest

from iclr24.drum_rules.calibration import CALIBRATION_SEEDS
from iclr24.drum_rules.reproduce import CLAIMS
from iclr24.drum_rules.reproduce import QUICK
from iclr24.paperkit.power import CALIBRATION_FILE
from iclr24.paperkit.power import calibration_path
from iclr24.paperkit.power import calibration_table
from iclr24.paperkit.runner.testing_workflow import load_script

FILE = calibration_path("iclr24.drum_rules")
SCRIPT = Path(__file__).parents[1] / "scripts" / "calibrate.py"


@pytest.fixture(scope="module")
def script():
    return load_script(SCRIPT)


def test_every_claims_calibration_is_the_files_row():
    t = calibration_table("iclr24.drum_rules")
    rows = {c.id: c for c in CLAIMS}
    agg = {"accuracy_sm": "sm", "accuracy_mm": "mm"}
    assert {c.id for c in CLAIMS if c.calibration} == set(agg)
    for claim_id, a in agg.items():
        for mode, cal in rows[claim_id].calibration.items():
            assert cal.seeds == t[mode]["seeds"] == CALIBRATION_SEEDS[mode]
            assert (cal.ours, cal.baseline) == (t[mode]["mrr"][a], t[mode]["mrr"]["sum"])
            assert (cal.seconds_per_seed, cal.measured) == (t[mode]["seconds_per_seed"], t["measured"])


def test_write_merges_the_seeds_it_measured_and_keeps_the_rest(script, tmp_path):
    path = shutil.copy(FILE, tmp_path / CALIBRATION_FILE)
    before = json.loads(FILE.read_text())
    warned = []
    results = [{"seed": 103, "mrr": {"sum": 0.5, "sm": 0.6, "mm": 0.7}, "cpu_s": 1.0},
               {"seed": 140, "mrr": {"sum": 0.1, "sm": 0.1, "mm": 0.1}, "cpu_s": 1.0}]  # fmt: skip
    script.write("full", results, path, warned.append, measured="2026-12-08, commit abc, 1 thread")
    after = json.loads(Path(path).read_text())
    assert after["measured"] == "2026-12-08, commit abc, 1 thread"
    after["measured"] = before["measured"]
    assert warned == [
        "full: seed 140 left out (the file holds seeds [101, 102, 103, 104, 105, 106, 107, 108])"
    ]
    assert {a: row[2] for a, row in after["full"]["mrr"].items()} == {"sum": 0.5, "sm": 0.6, "mm": 0.7}
    for a, row in after["full"]["mrr"].items():
        row[2] = before["full"]["mrr"][a][2]
    assert after == before and list(after) == list(before)
    text = Path(path).read_text()
    script.write("full", results[1:], path, warned.append, measured="nothing")  # no seed the file holds
    assert Path(path).read_text() == text and warned[-1].startswith("full: seed 140 left out")
    with pytest.raises(ValueError, match="needs measured"):
        script.write("full", results, path, warned.append, measured=" ")
    assert json.loads(FILE.read_text()) == before  # the package's own file untouched


def test_write_needs_measured_before_training(script, capsys):
    with pytest.raises(SystemExit) as e:
        script.main(["--mode", "quick", "--seeds", "101", "--write"])
    assert e.value.code == 2 and "--write needs --measured" in capsys.readouterr().err


@pytest.mark.slow  # trains the three quick models of one calibration seed (3-7 CPU s)
def test_a_calibration_seed_gives_the_files_numbers_again(script):
    t = calibration_table("iclr24.drum_rules")["quick"]
    from iclr24.paperkit.threads import pinned_threads

    with pinned_threads(1):  # as the script runs it
        r = script.run_seed(QUICK, 102)
    assert r["mrr"] == {a: row[t["seeds"].index(102)] for a, row in t["mrr"].items()}
