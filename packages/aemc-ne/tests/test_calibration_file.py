"""The claims' calibration numbers are package data (calibration.json), and ``calibrate(write=True)`` merges a run
into that file through ``write_calibration``."""

import json
import shutil
from pathlib import Path

import pytest

import iclr24.aemc_ne.reproduce as reproduce
from iclr24.aemc_ne.reproduce import CALIBRATION_SEEDS
from iclr24.aemc_ne.reproduce import CALIBRATION_SEEDS_ML
from iclr24.aemc_ne.reproduce import SPECS
from iclr24.aemc_ne.reproduce import write_calibration
from iclr24.paperkit.power import CALIBRATION_FILE
from iclr24.paperkit.power import calibration_path
from iclr24.paperkit.power import calibration_table

FILE = calibration_path("iclr24.aemc_ne")


def test_every_claims_calibration_is_the_files_row():
    table = calibration_table("iclr24.aemc_ne")
    assert list(table["claims"]) == list(SPECS)
    for claim_id, rows in table["claims"].items():
        assert list(rows) == list(SPECS[claim_id].calibration)
        for mode, row in rows.items():
            cal = SPECS[claim_id].calibration[mode]
            assert (cal.seeds, cal.ours, cal.baseline, cal.seconds_per_seed) == (
                row["seeds"], row["ours"], row["baseline"], row["seconds_per_seed"]
            )  # fmt: skip
            assert cal.measured == table["measured"]
    assert SPECS["ml100k"].calibration["full"].seeds == CALIBRATION_SEEDS_ML
    assert SPECS["mnar"].calibration["full"].seeds == CALIBRATION_SEEDS
    assert SPECS["ml100k"].calibration["quick"].ours[7] == 0.8999  # a number of the file, not a copy


def test_write_merges_one_row_and_keeps_the_rest(tmp_path):
    path = shutil.copy(FILE, tmp_path / CALIBRATION_FILE)
    before = json.loads(FILE.read_text())
    result = {"claim": "linear", "mode": "full", "seeds": [100, 101, 102], "ours": [0.1, 0.2, 0.3],
              "baseline": [0.4, 0.5, 0.6], "cpu_seconds": [1.21, 1.3, 1.44]}  # fmt: skip
    write_calibration(result, path, measured="2026-12-08, commit abc, 1 thread")
    after = json.loads(Path(path).read_text())
    assert after["claims"]["linear"]["full"] == {
        "seeds": [100, 101, 102], "ours": [0.1, 0.2, 0.3], "baseline": [0.4, 0.5, 0.6], "seconds_per_seed": 1.3
    }  # fmt: skip
    assert after["measured"] == "2026-12-08, commit abc, 1 thread"
    after["claims"]["linear"], after["measured"] = before["claims"]["linear"], before["measured"]
    assert after == before  # every other row and the order of the rows kept
    write_calibration(dict(result, claim="ml100k", mode="quick"), path, measured="2026-12-08, test")
    after = json.loads(Path(path).read_text())
    assert after["measured"] == "2026-12-08, test" and list(after["claims"]) == list(before["claims"])
    text = Path(path).read_text()
    with pytest.raises(ValueError, match="'linear' has no calibration in mode 'quick'"):
        write_calibration(dict(result, mode="quick"), path, measured="refused")
    for measured in ("", "  "):  # no provenance line: refused before the file is read
        with pytest.raises(ValueError, match="needs measured"):
            write_calibration(result, tmp_path / "missing.json", measured=measured)
    with pytest.raises(ValueError, match="needs measured"):
        write_calibration(result, path)
    assert Path(path).read_text() == text  # a refused write writes nothing
    assert json.loads(FILE.read_text()) == before  # the package's own file untouched


def test_calibrate_writes_only_when_asked(tmp_path, monkeypatch):
    import iclr24.paperkit.threads

    written = []
    monkeypatch.setattr(reproduce, "write_calibration", lambda r, measured="": written.append((r, measured)))
    monkeypatch.setattr(iclr24.paperkit.threads, "pin_process_dispatch", lambda: None)  # keep os.environ
    monkeypatch.setattr(reproduce, "MODES", dict(reproduce.MODES, full=reproduce.SMOKE))
    r = reproduce.calibrate("mnar", "full", seeds=(100,))
    assert written == [] and r["seeds"] == [100] and len(r["ours"]) == 1
    r2 = reproduce.calibrate("mnar", "full", seeds=(100,), write=True, measured="m")
    assert written == [(r2, "m")] and r2["claim"] == "mnar" and r2["seeds"] == [100]
    monkeypatch.setattr(reproduce, "synthetic_pair", lambda *a: pytest.fail("calibrated without measured"))
    with pytest.raises(ValueError, match="needs measured"):
        reproduce.calibrate("mnar", "full", seeds=(100,), write=True)
    assert len(written) == 1
