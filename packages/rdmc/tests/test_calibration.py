"""The claims' calibrations come from the package data ``calibration.json``, which ``scripts/calibrate.py --write``
merges a run into (seed by seed, only what maps onto the file)."""

import json
import shutil
from pathlib import Path

import pytest

from iclr24.paperkit.power import calibration_table
from iclr24.paperkit.power import write_calibration_table
from iclr24.paperkit.runner.testing_workflow import load_script
from iclr24.rdmc import reproduce
from iclr24.rdmc.reproduce import _CAPS
from iclr24.rdmc.reproduce import _ROWS
from iclr24.rdmc.reproduce import CLAIMS
from iclr24.rdmc.reproduce import ROW_CPU_SECONDS

PACKAGE = Path(reproduce.__file__).parent
SCRIPT = Path(__file__).parents[1] / "scripts" / "calibrate.py"


def test_every_claims_calibration_is_the_files_rows():
    """Each paired claim's Calibration, in every mode, is its two rows of calibration.json on their common seeds
    (the capped baseline for the capped claims), their cpu_seconds summed, and the file's provenance strings."""
    table = calibration_table("iclr24.rdmc")
    assert (reproduce.MEASURED, reproduce.MEASURED_HYBRID) == (table["measured"], table["measured_hybrid"])
    assert ROW_CPU_SECONDS == {
        sec: {row: v["cpu_seconds"] for row, v in table[sec].items()}
        for sec in ("2d", "10d", "funnel", "logreg")
    }
    checked = 0
    for spec in CLAIMS:
        if spec.id not in _ROWS:
            continue
        sec, ours, base, metric = _ROWS[spec.id]
        o, b = table[sec][ours], table[sec][base]
        seeds = tuple(s for s in o["seeds"] if s in b["seeds"])
        want_o = tuple(o[metric][o["seeds"].index(s)] for s in seeds)
        want_b = tuple(b[metric][b["seeds"].index(s)] for s in seeds)
        if spec.id in _CAPS:
            cap, factor = _CAPS[spec.id]
            want_b = tuple(min(cap, factor * x) for x in want_b)
        for mode, cal in spec.calibration.items():
            assert (cal.seeds, cal.ours, cal.baseline) == (seeds, want_o, want_b), (spec.id, mode)
            assert cal.seconds_per_seed == round(o["cpu_seconds"] + b["cpu_seconds"], 2)
            assert cal.measured.startswith(table["measured"])
            checked += 1
    assert checked == 18  # 6 claims in quick and full, 6 in full only
    hybrid = next(s for s in CLAIMS if s.id == "hybrid").calibration["full"]
    assert hybrid.measured.endswith("seeds 216-247: " + table["measured_hybrid"])
    assert hybrid.seeds == table["2d"]["ula"]["seeds"] == tuple(range(200, 248))


def test_the_file_is_as_write_calibration_table_writes_it(tmp_path):
    """calibration.json is in the writer's own layout, so a --write leaves no diff beyond the numbers it merges."""
    text = (PACKAGE / "calibration.json").read_text(encoding="utf-8")
    path = write_calibration_table(tmp_path / "c.json", json.loads(text))
    assert path.read_text(encoding="utf-8") == text


def _out(what, seeds, rows, target="gmm2d"):
    return {"what": what, "target": target, "n": 1000, "budget": 4000, "seeds": seeds, "rows": rows}


def test_write_merges_seed_by_seed_and_keeps_the_rest(tmp_path, capsys):
    cal = load_script(SCRIPT)
    path = tmp_path / "calibration.json"
    shutil.copy(PACKAGE / "calibration.json", path)
    before = json.loads(path.read_text())
    rows = {
        "ula": {
            "mode_tv": [0.5, 0.25],
            "mmd2": [0.125, 0.0625],
            "v_std": [1.0, 1.0],
            "cpu_seconds": [9.0, 9.0],
        },
        "no such row": {"mode_tv": [0.0, 0.0], "mmd2": [0.0, 0.0], "cpu_seconds": [1.0, 1.0]},
    }
    cal.write_calibration(_out("mixture", [300, 215], rows), path, "2026-12-08, run A")
    assert "not written: row 'no such row'" in capsys.readouterr().err
    after = json.loads(path.read_text())
    assert (after["measured"], after["measured_hybrid"]) == ("2026-12-08, run A", before["measured_hybrid"])
    after["measured"] = before["measured"]
    ula, old = after["2d"]["ula"], before["2d"]["ula"]
    assert list(ula) == list(old)  # the row's keys, in order: no v_std, cpu_seconds kept
    assert ula["seeds"] == old["seeds"] + [300]
    assert ula["mode_tv"] == old["mode_tv"][:15] + [0.25] + old["mode_tv"][16:] + [0.5]
    assert ula["mmd2"] == old["mmd2"][:15] + [0.0625] + old["mmd2"][16:] + [0.125]
    assert ula["cpu_seconds"] == old["cpu_seconds"]
    after["2d"]["ula"] = old
    assert after == before  # every other row, section and string as it was

    # the 10-D section holds mode-TV only; funnel and logreg their own metric
    cal.write_calibration(
        _out("mixture", [200], {"rdmc-is": {"mode_tv": [0.5], "mmd2": [1.0]}}, "gmm10d"), path, "run B"
    )
    cal.write_calibration(_out("funnel", [201], {"mala": {"w2_v": [0.75], "v_std": [3.0]}}), path, "run C")
    t = json.loads(path.read_text())
    assert t["10d"]["rdmc-is"]["mode_tv"][0] == 0.5 and "mmd2" not in t["10d"]["rdmc-is"]
    assert t["funnel"]["mala"]["w2_v"][1] == 0.75 and list(t["funnel"]["mala"]) == [
        "seeds",
        "w2_v",
        "cpu_seconds",
    ]
    assert (t["measured"], t["measured_hybrid"]) == ("run C", before["measured_hybrid"])
    for bad in (_out("iid", [200], {}), _out("mixture", [200], {}, "funnel")):
        with pytest.raises(ValueError, match="calibration.json"):
            cal.merge_calibration(before, bad, "run D")
    with pytest.raises(ValueError, match="needs measured"):
        cal.write_calibration(_out("funnel", [201], {"mala": {"w2_v": [0.5]}}), path, " ")


def test_write_replaces_the_provenance_string_of_the_seeds_it_wrote(tmp_path, capsys):
    """'measured_hybrid' describes seeds 216-247 of 2d's hybrid and ULA rows, 'measured' every other number: a
    run replaces the one (or both) of what it wrote, and a run that writes nothing leaves the file as it was."""
    cal = load_script(SCRIPT)
    path = tmp_path / "calibration.json"
    shutil.copy(PACKAGE / "calibration.json", path)
    before = json.loads(path.read_text())
    row = {"mode_tv": [0.5, 0.25], "mmd2": [0.125, 0.0625]}
    cal.write_calibration(_out("mixture", [216, 247], {"ula": row, "rdmc-is+ula hybrid": row}), path, "hyb")
    t = json.loads(path.read_text())
    assert (t["measured"], t["measured_hybrid"]) == (before["measured"], "hyb")
    cal.write_calibration(_out("mixture", [215, 216], {"ula": row}), path, "both")
    t = json.loads(path.read_text())
    assert (t["measured"], t["measured_hybrid"]) == ("both", "both")
    cal.write_calibration(_out("mixture", [216, 217], {"rdmc-is": row}), path, "other row")
    t = json.loads(path.read_text())
    assert (t["measured"], t["measured_hybrid"]) == ("other row", "both")
    text = path.read_text()
    cal.write_calibration(_out("mixture", [216], {"no such row": {"mode_tv": [0.0]}}), path, "nothing")
    assert path.read_text() == text and "not written: row 'no such row'" in capsys.readouterr().err


def test_write_needs_measured_before_running(tmp_path, capsys):
    path = tmp_path / "calibration.json"
    with pytest.raises(SystemExit) as e:
        load_script(SCRIPT).main(["funnel", "--write", "--calibration", str(path)])
    assert e.value.code == 2 and "--write needs --measured" in capsys.readouterr().err and not path.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["iid", "--write"],
        ["mixture", "--n", "500", "--write"],
        ["mixture", "--target", "gmm1d", "--write"],
    ],
)
def test_write_refuses_a_config_the_file_does_not_hold_before_running(argv, tmp_path, capsys):
    path = tmp_path / "calibration.json"
    with pytest.raises(SystemExit) as e:
        load_script(SCRIPT).main([*argv, "--measured", "m", "--calibration", str(path)])
    err = capsys.readouterr().err
    assert (
        e.value.code == 2
        and "error: --write: " in err
        and "needs --measured" not in err
        and not path.exists()
    )
