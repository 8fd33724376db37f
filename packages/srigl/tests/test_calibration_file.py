"""The claims' calibration numbers are package data (calibration.json), and ``scripts/calibrate.py --write``
merges a run into that file."""

import json
import shutil
from pathlib import Path

import pytest

import iclr24.paperkit.threads
from iclr24.paperkit.power import CALIBRATION_FILE
from iclr24.paperkit.power import calibration_path
from iclr24.paperkit.power import calibration_table
from iclr24.paperkit.runner.testing_workflow import load_script
from iclr24.srigl.reproduce import _ROW

FILE = calibration_path("iclr24.srigl")
SCRIPT = Path(__file__).parents[1] / "scripts" / "calibrate.py"


@pytest.fixture
def script(monkeypatch):
    """scripts/calibrate.py as a module, without its process-wide thread and kernel pins."""
    monkeypatch.setattr(iclr24.paperkit.threads, "pin_process_threads", lambda n: None)
    monkeypatch.setattr(iclr24.paperkit.threads, "pin_process_dispatch", lambda on: None)
    return load_script(SCRIPT)


def test_every_claims_calibration_is_the_files_row():
    t = calibration_table("iclr24.srigl")
    d90, d95 = _ROW["parity_digits_90"].calibration, _ROW["parity_digits_95"].calibration
    assert (
        d90["quick"].ours == t["digits_quick"]["srigl90"]
        and d90["full"].baseline == t["digits_full"]["rigl90"]
    )
    more = t["digits_full_95_more"]
    assert d95["full"].seeds == t["seeds"] + more["seeds"]
    assert d95["full"].ours == t["digits_full"]["srigl95"] + more["srigl95"]
    assert _ROW["rigl_vs_static_95"].calibration["quick"].baseline == t["digits_quick"]["static95"]
    assert _ROW["parity_mnist_95"].calibration["full"].ours == t["mnist_full"]["srigl95"]
    assert _ROW["parity_mnist_95"].calibration["full"].seeds == t["mnist_seeds"]
    assert _ROW["speed_csr"].calibration["full"].ours == t["speed"]["full_csr"]
    assert _ROW["speed_dense"].calibration["quick"].seeds == t["speed_rounds"]
    for claim_id, modes in t["seconds_per_seed"].items():
        for mode, sec in modes.items():
            assert _ROW[claim_id].calibration[mode].seconds_per_seed == sec
            assert _ROW[claim_id].calibration[mode].measured == t["measured"]
    assert {c.id for c in _ROW.values() if c.calibration} == set(t["seconds_per_seed"])


def test_write_merges_what_was_measured_and_keeps_the_rest(script, tmp_path):
    path = shutil.copy(FILE, tmp_path / CALIBRATION_FILE)
    before = json.loads(FILE.read_text())
    recs = [
        {"data": "digits", "mode": "quick", "run": "RigL", "sparsity": 0.9, "seed": 101, "acc": 91.23456},
        {"data": "digits", "mode": "full", "run": "SRigL g=0.3", "sparsity": 0.95, "seed": 113, "acc": 90.0},
        {"data": "mnist", "mode": "quick", "run": "static-uns", "sparsity": 0.95, "seed": 100, "acc": 1.0},
        {"speed": "full", "x_dense": [2.0004] * 9, "x_csr": [3.0] * 9},
    ]
    with pytest.raises(ValueError, match="no place for mnist_full static95"):
        script.write(recs, path, measured="2026-12-08, refused")
    assert json.loads(Path(path).read_text()) == before  # a refused merge writes nothing
    with pytest.raises(ValueError, match="needs measured"):
        script.write(recs[:2], path, measured=" ")
    script.write(recs[:2] + recs[3:], path, measured="2026-12-08, commit abc, 1 thread")
    after = json.loads(Path(path).read_text())
    assert after["measured"] == "2026-12-08, commit abc, 1 thread"
    after["measured"] = before["measured"]
    assert after["digits_quick"]["rigl90"][1] == 91.23
    assert after["digits_full_95_more"]["srigl95"][1] == 90.0
    assert after["speed"]["full_dense"] == [2.0] * 9 and after["speed"]["full_csr"] == [3.0] * 9
    after["digits_quick"]["rigl90"][1] = before["digits_quick"]["rigl90"][1]
    after["digits_full_95_more"]["srigl95"][1] = before["digits_full_95_more"]["srigl95"][1]
    after["speed"]["full_dense"], after["speed"]["full_csr"] = (
        before["speed"]["full_dense"],
        before["speed"]["full_csr"],
    )
    assert after == before and list(after) == list(before)
    with pytest.raises(ValueError, match="no row for SRigL g=0@0.9"):
        script.merge(before, [dict(recs[0], run="SRigL g=0")], "m")
    assert json.loads(FILE.read_text()) == before  # the package's own file untouched


def test_write_refuses_a_trial_recipe(script, capsys):
    with pytest.raises(SystemExit) as e:
        script.main(["--write", "--measured", "m", "--epochs", "3"])
    assert e.value.code == 2 and "--write records the mode's recipe only" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        script.main(["--write", "--measured", "m", "--speed", "--rounds", "3"])
    assert e.value.code == 2 and "--write records 9 speed rounds" in capsys.readouterr().err


def test_write_needs_measured_before_training(script, capsys):
    with pytest.raises(SystemExit) as e:
        script.main(["--write", "--seeds", "100"])
    assert e.value.code == 2 and "--write needs --measured" in capsys.readouterr().err
