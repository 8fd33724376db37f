"""Calibration numbers as package data: paperkit.power.write_calibration_table / calibration_table /
merge_by_seed / update_calibration_table, and runner.testing_workflow.load_script for the scripts that write them."""

import json
import math
import sys
from pathlib import Path

import pytest

from iclr24.paperkit.power import Calibration
from iclr24.paperkit.power import calibration_path
from iclr24.paperkit.power import calibration_table
from iclr24.paperkit.power import merge_by_seed
from iclr24.paperkit.power import update_calibration_table
from iclr24.paperkit.power import write_calibration_table
from iclr24.paperkit.runner.testing_workflow import load_script

TABLE = {
    "measured": "2026-12-08, commit abc1234, 1 thread",
    "rows": {
        "ours": {"seeds": (200, 201, 202), "acc": (0.1, 0.25, 1e-7), "cpu_seconds": 0.82},
        "base": {"seeds": (200, 201, 202), "acc": (0.3, -0.0, 12.0), "cpu_seconds": 1},
    },
    "nested": ((1, 2), ()),
    "flag": True,
    "empty": {},
}


@pytest.fixture
def package(tmp_path, monkeypatch):
    pkg = tmp_path / "calpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg
    sys.modules.pop("calpkg", None)


def test_round_trip_gives_the_python_table_back(package):
    write_calibration_table(package / "calibration.json", TABLE)
    got = calibration_table("calpkg")
    assert got == TABLE
    assert isinstance(got["rows"]["ours"]["acc"], tuple) and isinstance(got["nested"][0], tuple)
    assert [repr(x) for x in got["rows"]["ours"]["acc"]] == ["0.1", "0.25", "1e-07"]  # floats exact
    assert isinstance(got["rows"]["base"]["cpu_seconds"], int)
    cal = Calibration(
        seeds=got["rows"]["ours"]["seeds"],
        ours=got["rows"]["ours"]["acc"],
        baseline=got["rows"]["base"]["acc"],
        seconds_per_seed=1.0,
        measured=got["measured"],
    )
    assert cal.ours == (0.1, 0.25, 1e-7)


def test_file_is_plain_json_one_list_a_line(package):
    write_calibration_table(package / "calibration.json", TABLE)
    text = (package / "calibration.json").read_text()
    assert json.loads(text)["rows"]["ours"]["seeds"] == [200, 201, 202]
    assert '"acc": [0.1, 0.25, 1e-07],' in text
    assert text.endswith("}\n")


def test_named_file_and_missing_file(package):
    write_calibration_table(package / "other.json", {"a": [1.5]})
    assert calibration_table("calpkg", "other.json") == {"a": (1.5,)}
    with pytest.raises(FileNotFoundError, match="calpkg ships no calibration file 'calibration.json'"):
        calibration_table("calpkg")


def test_refuses_what_json_cannot_hold(package):
    with pytest.raises(TypeError, match="a calibration table is a dict, got list"):
        write_calibration_table(package / "calibration.json", [1, 2])
    with pytest.raises(ValueError):
        write_calibration_table(package / "calibration.json", {"x": [math.nan]})
    assert not (package / "calibration.json").exists()  # nothing half-written


def test_merge_by_seed_replaces_and_adds_seed_by_seed():
    seeds, cols, left = merge_by_seed(
        [200, 201, 202],
        {"ours": [1.0, 2.0, 3.0], "base": [4.0, 5.0, 6.0]},
        [201, 199],
        {"ours": [9.0, 8.0], "base": [7.0, 6.5]},
    )
    assert (seeds, left) == ([199, 200, 201, 202], [])
    assert cols == {"ours": [8.0, 1.0, 9.0, 3.0], "base": [6.5, 4.0, 7.0, 6.0]}


def test_merge_by_seed_without_add_leaves_new_seeds_out_and_keeps_other_columns():
    seeds, cols, left = merge_by_seed((5, 3), {"a": (1, 2), "b": (3, 4)}, (3, 7), {"a": (20, 70)}, add=False)
    assert (seeds, cols, left) == ([5, 3], {"a": [1, 20], "b": [3, 4]}, [7])  # the file's order kept


def test_merge_by_seed_refuses_what_does_not_fit():
    with pytest.raises(ValueError, match="column 'a' has 1 values for 2 seeds"):
        merge_by_seed([1, 2], {"a": [1]}, [], {})
    with pytest.raises(ValueError, match="column 'a' has 2 values for 1 seeds"):
        merge_by_seed([1], {"a": [1]}, [1], {"a": [1, 2]})
    with pytest.raises(ValueError, match=r"no column \['c'\]"):
        merge_by_seed([1], {"a": [1]}, [1], {"c": [1]})
    with pytest.raises(ValueError, match=r"seed 2 is new, so it needs every column; \['b'\] not given"):
        merge_by_seed([1], {"a": [1], "b": [2]}, [2], {"a": [1]})


def test_update_calibration_table_and_path(package):
    write_calibration_table(package / "calibration.json", {"row": {"seeds": [1], "x": [0.5]}})
    assert calibration_path("calpkg") == package / "calibration.json"

    def merge(t):
        t["row"]["seeds"], cols, _ = merge_by_seed(
            t["row"]["seeds"], {"x": t["row"]["x"]}, [2], {"x": [0.25]}
        )
        t["row"].update(cols)

    update_calibration_table(calibration_path("calpkg"), merge)
    assert calibration_table("calpkg") == {"row": {"seeds": (1, 2), "x": (0.5, 0.25)}}

    def fails(t):
        t["row"]["x"] = [9.0]
        raise ValueError("no place for it")

    with pytest.raises(ValueError, match="no place for it"):
        update_calibration_table(package / "calibration.json", fails)
    assert calibration_table("calpkg")["row"]["x"] == (0.5, 0.25)  # nothing written
    inode = (package / "calibration.json").stat().st_ino  # an atomic write replaces the file, so a new inode
    assert (
        update_calibration_table(package / "calibration.json", lambda t: None) == package / "calibration.json"
    )
    assert (
        package / "calibration.json"
    ).stat().st_ino == inode  # the table unchanged: the file not rewritten
    update_calibration_table(package / "calibration.json", lambda t: {**t, "note": "x"})
    assert (package / "calibration.json").stat().st_ino != inode


def test_load_script(tmp_path):
    script = tmp_path / "calibrate.py"
    script.write_text("X = 3\ndef f():\n    return X\nif __name__ == '__main__':\n    raise SystemExit(9)\n")
    mod = load_script(script)
    assert mod.f() == 3
    with pytest.raises(FileNotFoundError, match="no script at"):
        load_script(tmp_path / "missing.py")


ROOT = Path(__file__).resolve().parents[2]


def test_every_packages_calibration_file_is_as_write_calibration_table_writes_it(tmp_path):
    """Each package's calibration.json is exactly what its calibrate script's --write produces (no hand edit in
    another layout), and every package whose reproduce.py reads one ships it beside its modules."""
    files = sorted(ROOT.glob("packages/*/src/iclr24/*/calibration.json"))
    readers = sorted(
        p.parent for p in ROOT.glob("packages/*/src/iclr24/*/*.py") if "calibration_table(" in p.read_text()
    )
    assert readers and sorted({f.parent for f in files}) == sorted(set(readers))
    for f in files:
        out = write_calibration_table(tmp_path / f"{f.parent.name}.json", json.loads(f.read_text()))
        assert out.read_text() == f.read_text(), f"{f.relative_to(ROOT)} is not in the written form"
