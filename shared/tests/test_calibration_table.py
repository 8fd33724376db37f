"""Calibration numbers as package data: paperkit.power.write_calibration_table / calibration_table."""

import json
import math
import sys

import pytest

from iclr24.paperkit.power import Calibration
from iclr24.paperkit.power import calibration_table
from iclr24.paperkit.power import write_calibration_table

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
