"""The claims' calibrations come from the package data ``calibration.json``, which ``scripts/calibrate.py ...
--write`` merges a run into (seed by seed, only what maps onto the file)."""

import json
import shutil
from pathlib import Path

import pytest

from iclr24.paperkit.power import calibration_table
from iclr24.paperkit.power import write_calibration_table
from iclr24.paperkit.runner.testing_workflow import load_script
from iclr24.task_geometry import reproduce
from iclr24.task_geometry.reproduce import _SPEC
from iclr24.task_geometry.reproduce import CLAIMS

PACKAGE = Path(reproduce.__file__).parent
SCRIPT = Path(__file__).parents[1] / "scripts" / "calibrate.py"
SPECS = {s.id: s for s in CLAIMS}


def test_every_claims_calibration_is_the_files():
    """Each sweep row's Calibration in each mode is its (cell, metric) of the file's sweep[mode] (seeds, Tanh,
    ReLU, the mode's cpu_seconds); the CNN rows' are the file's digits and mnist rows."""
    table = calibration_table("iclr24.task_geometry")
    assert reproduce.MEASURED == table["measured"]
    assert set(_SPEC) == {s.id for s in CLAIMS} - {"digits_cnn", "mnist_cnn"}
    for cid, (k, a, metric) in _SPEC.items():
        for mode, cal in SPECS[cid].calibration.items():
            block = table["sweep"][mode]
            v = block["values"][f"k={k},a={a:g},{metric}"]
            assert (cal.seeds, cal.ours, cal.baseline) == (block["seeds"], v["tanh"], v["relu"]), (cid, mode)
            assert (cal.seconds_per_seed, cal.measured) == (block["cpu_seconds"], table["measured"])
    assert (
        reproduce.SWEEP_CALIBRATION_SEEDS
        == table["sweep"]["quick"]["seeds"]
        == table["sweep"]["full"]["seeds"]
    )
    for cid, name in (("digits_cnn", "digits"), ("mnist_cnn", "mnist")):
        row = table[name]
        for cal in SPECS[cid].calibration.values():
            assert (cal.seeds, cal.ours, cal.baseline, cal.seconds_per_seed) == (
                row["seeds"], row["tanh"], row["relu"], row["cpu_seconds"]
            )  # fmt: skip
    assert reproduce.MNIST_SECONDS == table["mnist"]["cpu_seconds"] == 30.9
    mnist = SPECS["mnist_cnn"].calibration["full"]
    assert mnist.measured == "seeds 100-108: " + table["measured"] + "; " + table["mnist"]["measured"]
    assert SPECS["digits_cnn"].calibration["quick"].measured == table["measured"]


def test_the_file_is_as_write_calibration_table_writes_it(tmp_path):
    text = (PACKAGE / "calibration.json").read_text(encoding="utf-8")
    assert write_calibration_table(tmp_path / "c.json", json.loads(text)).read_text(encoding="utf-8") == text


def _sweep_out(seeds, value):
    cells = {
        cell: {m: {"tanh": [value] * len(seeds), "relu": [value / 2] * len(seeds)} for m in reproduce._METRIC}
        for cell in ("k=1,a=1", "k=3,a=1", "k=1,a=3.5")
    }
    return {"mode": "quick", "seeds": seeds, "cells": cells, "cpu_seconds_per_seed": 9.5}


@pytest.fixture
def copy(tmp_path):
    path = tmp_path / "calibration.json"
    shutil.copy(PACKAGE / "calibration.json", path)
    return path, json.loads(path.read_text())


def test_write_sweep_merges_seed_by_seed_the_gated_pairs_only(copy):
    path, before = copy
    load_script(SCRIPT).write_calibration(_sweep_out([106, 105], 0.5), path, "2026-12-08, sweep run")
    after = json.loads(path.read_text())
    assert (after["measured"], after["mnist"]["measured"]) == (
        "2026-12-08, sweep run",
        before["mnist"]["measured"],
    )
    after["measured"] = before["measured"]
    block, old = after["sweep"]["quick"], before["sweep"]["quick"]
    assert block["seeds"] == old["seeds"] + [106] and block["cpu_seconds"] == 9.5
    assert list(block["values"]) == list(old["values"])  # no ungated pair added, the order kept
    for key, v in block["values"].items():
        assert v["tanh"] == old["values"][key]["tanh"][:5] + [0.5, 0.5]
        assert v["relu"] == old["values"][key]["relu"][:5] + [0.25, 0.25]
    after["sweep"]["quick"] = old
    assert after == before  # full's block, the CNN rows, mnist's string: as they were


def test_write_claim_and_cnn_merge_the_cnn_rows(copy):
    path, before = copy
    cal = load_script(SCRIPT)
    claim = {"data": "mnist", "seeds": [100, 121], "epochs": 2, "cka_y": {"tanh": [0.5, 0.75], "relu": [0.25, 0.5]},
             "cpu_seconds": [1.0, 1.0], "cpu_seconds_per_seed": 1.0}  # fmt: skip
    cal.write_calibration(claim, path, "claim run")  # MNIST seed 100: the file's 'measured'
    t = json.loads(path.read_text())
    mnist, old = t["mnist"], before["mnist"]
    assert t["measured"] == "claim run"
    assert mnist["seeds"] == old["seeds"] + [121]
    assert mnist["tanh"] == [0.5] + old["tanh"][1:] + [0.75] and mnist["relu"] == [0.25] + old["relu"][1:] + [
        0.5
    ]
    assert (mnist["cpu_seconds"], mnist["measured"]) == (
        old["cpu_seconds"],
        old["measured"],
    )  # the record's cost

    cal.write_calibration({**claim, "data": "digits", "seeds": [107, 108]}, path, "digits run")
    digits = json.loads(path.read_text())["digits"]
    assert digits["seeds"] == before["digits"]["seeds"] + [108] and digits["cpu_seconds"] == 1.0
    assert digits["tanh"][-2:] == [0.5, 0.75]

    cnn = {"data": "digits", "seeds": [100], "train": 1200, "test": 597,
           "cka_y": {"10": {"tanh": [0.0], "relu": [0.0]}, "20": {"tanh": [0.125], "relu": [0.0625]}}}  # fmt: skip
    cal.write_calibration(cnn, path, "cnn run")
    digits = json.loads(path.read_text())["digits"]
    assert (digits["tanh"][0], digits["relu"][0], digits["cpu_seconds"]) == (0.125, 0.0625, 1.0)
    table = json.loads(path.read_text())
    with pytest.raises(ValueError, match="epoch 20"):
        cal.merge_calibration(table, {**cnn, "cka_y": {"10": cnn["cka_y"]["10"]}}, "m")
    with pytest.raises(ValueError, match="10000 / 2000"):
        cal.merge_calibration(table, {**cnn, "data": "mnist", "cka_y": {"2": cnn["cka_y"]["20"]}}, "m")
    with pytest.raises(ValueError, match="needs measured"):
        cal.write_calibration(cnn, path, "")
    assert (table["measured"], table["mnist"]["measured"]) == ("cnn run", old["measured"])


def test_write_replaces_the_provenance_string_of_the_seeds_it_wrote(copy):
    """mnist's own 'measured' describes its seeds 109-120, the file's 'measured' everything else: an MNIST run
    replaces the one (or both) of the seeds it wrote."""
    path, before = copy
    cal = load_script(SCRIPT)
    claim = {"data": "mnist", "seeds": [109, 120], "epochs": 2, "cka_y": {"tanh": [0.5, 0.75], "relu": [0.25, 0.5]},
             "cpu_seconds": [1.0, 1.0], "cpu_seconds_per_seed": 1.0}  # fmt: skip
    cal.write_calibration(claim, path, "own")
    t = json.loads(path.read_text())
    assert (t["measured"], t["mnist"]["measured"]) == (before["measured"], "own")
    assert list(t["mnist"]) == list(before["mnist"])  # the row's keys, in order
    cal.write_calibration({**claim, "seeds": [108, 109]}, path, "both")
    t = json.loads(path.read_text())
    assert (t["measured"], t["mnist"]["measured"]) == ("both", "both")


def test_write_needs_measured_before_running(tmp_path, capsys):
    path = tmp_path / "calibration.json"
    with pytest.raises(SystemExit) as e:
        load_script(SCRIPT).main(
            ["sweep", "--mode", "quick", "--seeds", "100", "--write", "--calibration", str(path)]
        )
    assert e.value.code == 2 and "--write needs --measured" in capsys.readouterr().err and not path.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["cnn", "--data", "digits", "--seeds", "100", "--epochs", "10", "--write"],
        ["cnn", "--data", "digits", "--seeds", "100", "--epochs", "40", "--every", "15", "--write"],
        ["cnn", "--data", "mnist", "--seeds", "100", "--epochs", "2", "--train", "500", "--write"],
    ],
)
def test_write_refuses_a_cnn_run_the_file_does_not_hold_before_running(argv, tmp_path, capsys):
    path = tmp_path / "calibration.json"
    with pytest.raises(SystemExit) as e:
        load_script(SCRIPT).main([*argv, "--measured", "m", "--calibration", str(path)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "error: --write: " in err and "needs --measured" not in err
    assert not path.exists()
