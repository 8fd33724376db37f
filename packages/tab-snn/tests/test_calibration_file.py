"""The claims' calibration numbers are package data (calibration.json), and ``scripts/calibrate.py --write``
merges a run into that file."""

import json
import shutil
from pathlib import Path

import pytest

from iclr24.paperkit.power import CALIBRATION_FILE
from iclr24.paperkit.power import calibration_path
from iclr24.paperkit.power import calibration_table
from iclr24.paperkit.runner.testing_workflow import load_script
from iclr24.tab_snn.reproduce import CLAIMS

FILE = calibration_path("iclr24.tab_snn")
SCRIPT = Path(__file__).parents[1] / "scripts" / "calibrate.py"
SPECS = {s.id: s for s in CLAIMS}


@pytest.fixture(scope="module")
def script():
    return load_script(SCRIPT)


def test_every_claims_calibration_is_the_files_row():
    t = calibration_table("iclr24.tab_snn")
    seq, mnist = t["seq"], t["mnist"]
    n = 0
    for spec in CLAIMS:
        for mode, cal in spec.calibration.items():
            assert cal.measured == t["measured"]
            if cal.seeds == mnist["seeds"]:
                assert (cal.ours, cal.baseline, cal.seconds_per_seed) == (
                    mnist["tab"], mnist["tdbn"], mnist["seconds_per_seed"]
                )  # fmt: skip
            else:
                assert cal.seeds == seq["seeds"] and cal.seconds_per_seed == t["seq_seconds_per_seed"][mode]
                acc = seq["acc"]["20"]
                if spec.id.startswith("tab_vs_"):  # TAB against the norm the id names
                    assert (cal.ours, cal.baseline) == (acc["tab"], acc[spec.id.removeprefix("tab_vs_")])
                else:  # bn_vs_none: the least accurate BN variant per seed against no norm
                    assert cal.baseline == acc["none"] and cal.ours[0] == min(
                        acc[k][0] for k in acc if k != "none"
                    )
            n += 1
    assert n >= 4


def test_write_merges_what_was_measured_and_keeps_the_rest(script, tmp_path):
    path = shutil.copy(FILE, tmp_path / CALIBRATION_FILE)
    before = json.loads(FILE.read_text())
    warned = []
    out = {"task": "seq", "seeds": [111, 124], "norms": ["tdbn", "tebn", "tab"],
           "acc": {"20": {"tdbn": [1.5, 2.5], "tebn": [3.5, 4.5], "tab": [5.5, 6.5]}},
           "cpu_seconds_per_seed": {"20": 8.26}}  # fmt: skip
    script.write(out, path, warn=warned.append, measured="2026-12-08, seq run")
    after = json.loads(Path(path).read_text())
    assert after["measured"] == "2026-12-08, seq run"
    after["measured"] = before["measured"]
    assert warned == ["seed 124 left out: the file's seq seeds are [110, 111, 112, 113, 114, 115, 116, 117, 118, "
                      "119, 120, 121, 122, 123]"] * 3  # fmt: skip
    acc = after["seq"]["acc"]["20"]
    assert (acc["tdbn"][1], acc["tebn"][1], acc["tab"][1]) == (1.5, 3.5, 5.5)
    assert after["seq_seconds_per_seed"] == {"quick": 8.3, "full": before["seq_seconds_per_seed"]["full"]}
    for n in ("tdbn", "tebn", "tab"):
        acc[n][1] = before["seq"]["acc"]["20"][n][1]
    after["seq_seconds_per_seed"]["quick"] = before["seq_seconds_per_seed"]["quick"]
    assert after == before and list(after) == list(before)
    mn = {"task": "mnist", "seeds": [100], "norms": ["tdbn", "tebn", "tab"],
          "acc": {"5": {"tdbn": [70.0], "tebn": [71.0], "tab": [72.0]}}, "cpu_seconds_per_seed": {"5": 60.04}}  # fmt: skip
    script.write(mn, path, warn=warned.append, measured="2026-12-08, mnist run")
    t = json.loads(Path(path).read_text())
    got = t["mnist"]
    assert t["measured"] == "2026-12-08, mnist run"
    assert (got["tab"][0], got["tdbn"][0], got["seconds_per_seed"]) == (72.0, 70.0, 60.0)
    assert got["tab"][1:] == before["mnist"]["tab"][1:]
    with pytest.raises(ValueError, match="MNIST at full's recipe only"):
        script.merge(before, mn, "m", train=5000)
    with pytest.raises(ValueError, match="a new length"):
        script.merge(before, dict(out, acc={"12": out["acc"]["20"]}), "m")
    with pytest.raises(ValueError, match="no static numbers"):
        script.merge(before, dict(out, task="static"), "m")
    with pytest.raises(ValueError, match="needs measured"):
        script.write(out, path, measured="")
    # a run none of whose numbers has a place (a seed the file lacks, a norm set no mode trains): nothing written
    text = Path(path).read_text()
    lost = dict(out, seeds=[124], norms=["tab"], acc={"20": {"tab": [1.0]}})
    script.write(lost, path, warn=warned.append, measured="nothing")
    assert Path(path).read_text() == text
    assert json.loads(FILE.read_text()) == before  # the package's own file untouched


def test_write_refuses_what_the_file_cannot_hold_before_training(script, capsys):
    for argv in (["static", "--seeds", "110", "--epochs", "1", "--write", "--measured", "m"],
                 ["mnist", "--seeds", "100", "--epochs", "1", "--write", "--measured", "m"]):  # fmt: skip
        with pytest.raises(SystemExit) as e:
            script.main(argv)
        assert e.value.code == 2 and "error: --write: the calibration file holds" in capsys.readouterr().err


def test_write_needs_measured_before_training(script, capsys):
    with pytest.raises(SystemExit) as e:
        script.main(["seq", "--seeds", "110", "--epochs", "20", "--write"])
    assert e.value.code == 2 and "--write needs --measured" in capsys.readouterr().err
