import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

import iclr24.opposing_signals.reproduce as rep
from iclr24.opposing_signals.reproduce import CLAIMS
from iclr24.opposing_signals.reproduce import FULL
from iclr24.opposing_signals.reproduce import PAPER
from iclr24.opposing_signals.reproduce import QUICK
from iclr24.opposing_signals.reproduce import SMOKE
from iclr24.paperkit.power import CALIBRATION_FILE
from iclr24.paperkit.power import calibration_table
from iclr24.paperkit.runner.testing import check_paper_smoke
from iclr24.paperkit.runner.testing_workflow import load_script

CALIBRATE = Path(__file__).resolve().parents[1] / "scripts" / "calibrate.py"


def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=5)
    assert [c.status for c in cs] == ["smoke"] * 5
    assert [c.details["spec"]["id"] for c in cs] == [s.id for s in CLAIMS if "quick" in s.modes]
    (adam,) = [c for c in cs if c.details["spec"]["id"] == "adam_amplitude"]
    assert (
        adam.paired["seeds"] == [0, 2] and adam.paired["form"] == "log_ratio" and adam.paired["factor"] == 0.1
    )
    (antiphase,) = [c for c in cs if c.details["spec"]["id"] == "antiphase"]
    assert "corr" in antiphase.rule and "baseline" in antiphase.rule and antiphase.kind == "headline"
    names = {a.split("/")[-1] for a in cs.to_dict()["artifacts"]}
    assert {"group_losses.png", "sharpness.png", "top_examples.png"} <= names


def test_claims_table_kinds_seeds_and_calibration():
    by_id = {s.id: s for s in CLAIMS}
    assert [s.id for s in CLAIMS if s.kind == "headline"] == ["antiphase", "spikes"]
    assert by_id["precision"].kind == "check"  # the planted images are the known answer
    assert by_id["adam_amplitude"].modes == ("quick",)
    assert by_id["adam_amplitude_full"].modes == by_id["adam_corr"].modes == ("full",)
    assert by_id["adam_amplitude"].claim == by_id["adam_amplitude_full"].claim  # one claim, decided per mode
    assert all(s.modes == ("quick", "full") for s in CLAIMS if not s.id.startswith("adam_"))
    assert {s.id: s.kind for s in CLAIMS if s.id.startswith("adam_")} == dict.fromkeys(
        ("adam_amplitude", "adam_amplitude_full", "adam_corr"), "supporting"
    )
    # quick's 600 steps: the t-interval; full's 1500: the exact sign test (two regimes, docs/calibration.md)
    assert (by_id["adam_amplitude"].test, by_id["adam_amplitude_full"].test, by_id["adam_corr"].test) == (
        "t", "sign", "sign"
    )  # fmt: skip
    calibration = {1, *range(100, 128)}  # seed 1: an earlier quick length; 100-127: the Adam calibration
    for s in CLAIMS:
        for m in s.modes:
            assert not calibration & set(s.seeds[m]), (s.id, m)
            if s.calibration:
                assert set(s.calibration[m].seeds) == set(range(100, 128))
                assert s.plan(m).decidable and s.power == 0.95
    planned = {(s.id, m): s.plan(m).seeds for s in CLAIMS if s.calibration for m in s.modes}
    assert planned == {
        ("adam_amplitude", "quick"): 3,
        ("adam_amplitude_full", "full"): 9,
        ("adam_corr", "full"): 9,
    }
    assert by_id["adam_corr"].margin == -0.7 and by_id["adam_amplitude"].factor == 0.1
    assert by_id["adam_amplitude_full"].factor == 0.1


def test_full_sign_plans_follow_from_the_calibrated_signs():
    # at 1500 steps one calibration seed of 28 (seed 127) re-entered an anti-phase swing under Adam: its swing was
    # 0.13x GD's and its correlation -0.62; the exact sign test's plan for 27 for, 1 against at 95 % is 9 pairs
    # (8 of 9 is the fewest that decides, p = 10/512), within the shared budget at the measured 16.5 CPU s a pair
    from iclr24.opposing_signals.reproduce import ADAM_FULL_BUDGET
    from iclr24.paperkit.power import sign_seeds_needed

    by_id = {s.id: s for s in CLAIMS}
    for id_ in ("adam_amplitude_full", "adam_corr"):
        plan = by_id[id_].plan("full")
        cal = plan.calibration
        assert (cal["wins"], cal["losses"], cal["ties"]) == (27, 1, 0), id_
        assert [s for s, d in zip(cal["seeds"], cal["per_seed_slack"]) if d < 0] == [127], id_
        assert plan.seeds == sign_seeds_needed(27 / 28, 1 / 28, power=0.95) == 9
        assert plan.seeds * plan.seconds_per_seed <= ADAM_FULL_BUDGET == plan.budget_seconds
    # the evaluated pairs: the pool's first 9 (seed 1 is a calibration seed)
    assert by_id["adam_corr"].evaluated_seeds("full") == [0, 2, 3, 4, 5, 6, 7, 8, 9]
    from iclr24.opposing_signals.reproduce import _adam_seeds

    assert _adam_seeds("full") == (
        (0, 2, 3, 4, 5, 6, 7, 8, 9),
        [],
    )  # full trains these pairs, both rows read them
    assert _adam_seeds("quick") == ((0, 2, 3), [])
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    n = by_id["adam_corr"].plan("full").seeds
    assert f"asks for **{n} pairs**" in readme and f"the exact sign test, **{n} pairs**" in readme
    # quick's 600 steps: every calibration seed's Adam swing under 0.1x GD's (no second regime there)
    assert min(by_id["adam_amplitude"].plan("quick").calibration["per_seed_slack"]) > 3


def test_quick_and_full_share_the_gated_setting():
    # quick is the same setting run for fewer steps with sharpness measured less often (full adds MNIST)
    shared = ("alpha", "lr", "n_train", "n_a", "n_b", "control_n", "width", "depth", "k", "adam_lr",
              "sharpness_iters", "sharpness_method", "seed", "adam")  # fmt: skip
    for field in shared:
        assert getattr(QUICK, field) == getattr(FULL, field)
    assert SMOKE.steps < QUICK.steps < FULL.steps and QUICK.sharpness_every >= FULL.sharpness_every
    assert (QUICK.steps, QUICK.sharpness_every, FULL.steps) == (600, 100, 1500)
    assert FULL.mnist and not QUICK.mnist and QUICK.sharpness_method == "lanczos"


def test_readme_states_the_quick_config():
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert f"{QUICK.steps} steps in `--quick` (sharpness every {QUICK.sharpness_every} steps)" in readme
    assert f"{FULL.steps} in `--full` (sharpness every {FULL.sharpness_every})" in readme


def test_quick_decides_the_adam_amplitude_claim(monkeypatch, tmp_path):
    # quick's Adam pairs, on the smoke sizes: the plan's 3 seeds (0, 2, 3), seed 0's GD run shared with the
    # single-run claims; the correlation claim is not a quick row
    from iclr24.opposing_signals import reproduce
    from iclr24.paperkit import RunConfig

    seen = []
    real = reproduce.run_experiment

    def spy(x, y, exp, *args, **kwargs):
        seen.append((exp.seed, exp.optimizer))
        return real(x, y, exp, *args, **kwargs)

    monkeypatch.setattr(reproduce, "run_experiment", spy)
    monkeypatch.setattr(reproduce, "QUICK", SMOKE)
    cs = PAPER.check(RunConfig(mode="quick", out=tmp_path, progress=False))
    assert seen == [(0, "gd")] * 3 + [(0, "adam"), (2, "gd"), (2, "adam"), (3, "gd"), (3, "adam")]
    (adam,) = [c for c in cs if c.details["spec"]["id"] == "adam_amplitude"]
    assert adam.paired["seeds"] == [0, 2, 3] and adam.details["power"]["seeds"] == 3
    assert all(c.status in ("holds", "fails", "inconclusive") for c in cs)  # gated, on the smoke sizes
    assert "adam_corr" not in {c.details["spec"]["id"] for c in cs}
    with pytest.raises(ValueError, match="adam_seeds"):
        reproduce.measure_digits(replace(SMOKE, adam_seeds=()))


def test_claims_run_on_one_thread_whatever_the_caller_sets(monkeypatch, tmp_path):
    # with two threads the chaotic GD trajectory (and the Adam claim's verdict) changed: PAPER declares one thread,
    # which paperkit pins around the run
    import torch

    from iclr24.opposing_signals import reproduce
    from iclr24.paperkit import RunConfig

    assert PAPER.threads == 1
    seen = []
    real = reproduce.run_experiment

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(reproduce, "run_experiment", spy)
    prev = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        PAPER.check(RunConfig(mode="smoke", out=tmp_path, progress=False))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(prev)
    # seed 0: planted GD, clean GD, single-class control, Adam; seed 2: GD and Adam for the paired claim
    assert seen == [1] * 6


def test_measure_digits_pairs_gd_and_adam_on_every_seed():
    from iclr24.opposing_signals.reproduce import measure_digits

    res = measure_digits(SMOKE)
    assert res["adam_seeds"] == [0, 2] and res["seed"] == 0
    for s in (0, 2):
        assert {"gd_corr", "adam_corr", "gd_amplitude", "adam_amplitude"} <= set(res["per_seed"][s])
    # the single-class control carries the patch on one group only: precision, no correlation
    ctrl = res["control GD"]
    assert "precision" in ctrl and "corr" not in ctrl
    assert ctrl["base_rate"] == pytest.approx(SMOKE.control_n / SMOKE.n_train)


def test_the_adam_rows_calibrations_are_the_files_numbers():
    table = calibration_table("iclr24.opposing_signals")
    by_id = {s.id: s for s in CLAIMS}
    for row_id, mode, metric, steps in (
        ("adam_amplitude", "quick", "amplitude", "600"),
        ("adam_amplitude_full", "full", "amplitude", "1500"),
        ("adam_corr", "full", "corr", "1500"),
    ):
        cal, row = by_id[row_id].calibration[mode], table[metric][steps]
        assert (cal.seeds, cal.ours, cal.baseline) == (row["seeds"], row["adam"], row["gd"]), row_id
        assert cal.measured == table["measured"] == rep.MEASURED
    cpu = table["cpu_seconds_per_seed"]["1500"]
    assert by_id["adam_corr"].calibration["full"].seconds_per_seed == cpu["gd"] + cpu["adam"] == 16.5
    assert by_id["adam_amplitude"].calibration["quick"].seconds_per_seed == 6.6  # 600 steps: scaled by length
    assert by_id["adam_amplitude_full"].calibration["full"].ours[-1] == 0.006534  # seed 127's late swing


def test_calibrate_write_merges_what_the_run_measured(tmp_path):
    script = load_script(CALIBRATE)  # scripts/calibrate.py, not run as __main__
    path = tmp_path / CALIBRATION_FILE
    shutil.copy(script.CALIBRATION_JSON, path)
    before = json.loads(path.read_text())
    per_opt = {"corr": [0.1, 0.2], "amplitude": [0.3, 0.4], "corr_settled": [0.5, 0.6]}
    out = {
        "steps": 1500,
        "seeds": [127, 128],
        "at": {"600": {"gd": per_opt, "adam": per_opt}, "800": {"gd": per_opt, "adam": per_opt}},
        "cpu_seconds_per_seed": {"gd": 7.0, "adam": 8.0},
    }
    said = script.write_calibration(path, out, "test run")
    assert said == ["amplitude at 600 steps: seeds [127, 128]", "CPU s per seed at 1500 steps"]
    after = json.loads(path.read_text())
    row, old = after["amplitude"]["600"], before["amplitude"]["600"]
    assert row["seeds"] == [*range(100, 129)]  # seed 128 added, 127 replaced, the others kept
    assert row["adam"] == [*old["adam"][:-1], 0.3, 0.4] and row["gd"] == [*old["gd"][:-1], 0.3, 0.4]
    assert after["amplitude"]["1500"] == before["amplitude"]["1500"] and after["corr"] == before["corr"]
    assert (
        after["cpu_seconds_per_seed"] == {"1500": {"gd": 7.0, "adam": 8.0}}
        and after["measured"] == "test run"
    )
    # a run of another length: its CPU s do not map
    out = {**out, "steps": 1200, "at": {"1500": {"gd": per_opt, "adam": per_opt}}}
    said = script.write_calibration(path, out, "test run 2")
    assert said == ["amplitude at 1500 steps: seeds [127, 128]", "corr at 1500 steps: seeds [127, 128]"]
    assert json.loads(path.read_text())["cpu_seconds_per_seed"]["1500"] == {"gd": 7.0, "adam": 8.0}
    # nothing maps: the file (its provenance line too) is left as it was
    text = path.read_text()
    out = {**out, "at": {"800": {"gd": per_opt, "adam": per_opt}}}
    said = script.write_calibration(path, out, "test run 3")
    assert said == ["nothing of this run maps onto the file (lengths, --steps), not written"]
    assert path.read_text() == text
