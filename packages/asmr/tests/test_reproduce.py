import json
import math
from dataclasses import replace

import pytest

from iclr24.asmr import reproduce
from iclr24.asmr.reproduce import (
    CALIBRATED_SECONDS_PER_STEP,
    FULL,
    PAPER,
    QUICK,
    QUICK_LENGTH_CALIBRATION,
    SMOKE,
    calibrate,
    equal_time_steps,
    lr_sweep,
)
from iclr24.paperkit.report import comparable
from iclr24.paperkit.testing import check_paper_smoke

TINY = replace(FULL, size=16, bases=((2, 2, 2, 2),) * 2, hidden=8, siren_hidden=8)


def _no_measured_budgets(*_a, **_k):
    raise AssertionError("the claims' step counts must come from the config, not from a measurement")


@pytest.mark.slow  # two smoke runs
def test_smoke_claims_run_end_to_end_on_the_configured_steps(tmp_path, monkeypatch):
    # no step count may be measured during a run: the tools that would do it raise
    monkeypatch.setattr(reproduce, "equal_time_steps", _no_measured_budgets)
    monkeypatch.setattr(reproduce, "_step_seconds", _no_measured_budgets)
    monkeypatch.setattr(reproduce, "calibrate", _no_measured_budgets)
    cs = check_paper_smoke(PAPER, tmp_path)
    assert len(cs) == 5 and all(c.paper == "asmr" for c in cs)
    assert all(c.verdict == "smoke" for c in cs)
    for f in ("reconstructions.png", "psnr_curves.png", "depth_table.md"):
        assert (tmp_path / f).is_file()
    matched, same, render, rgb, mega = cs
    nets = same.details["networks"]
    assert [v["steps"] for v in nets.values()] == [SMOKE.steps, SMOKE.matched_steps, SMOKE.siren_steps]
    assert list(rgb.details["steps"].values()) == [SMOKE.rgb_steps, SMOKE.rgb_siren_steps]
    assert list(mega.details["steps"].values()) == [SMOKE.megapixel_steps, SMOKE.megapixel_siren_steps]
    assert [r["steps"] for r in same.details["per_seed"]["ASMR"]] == [SMOKE.steps]  # what fit() ran
    assert matched.baseline_name.startswith("SIREN 4x6 (MAC-matched) at lr 0.003")  # the swept lr, fixed
    assert not any(c.timing for c in (matched, same, rgb, mega))
    # the render claim: paired over interleaved rounds, ratio form (ASMR <= SIREN / 5), a timing claim
    assert render.timing and render.paired["form"] == "log_ratio" and render.paired["factor"] == 0.2
    assert render.paired["better"] == "lower" and render.paired["seeds"] == list(range(SMOKE.render_rounds))
    assert render.details["threads"] == 1 and render.details["clock"] == "process CPU time"
    sp = [b / o for o, b in zip(render.paired["ours"], render.paired["baseline"])]
    assert render.details["speedup_per_round"] == pytest.approx(sp)
    assert set(rgb.details["per_image"]) == {"astronaut"} and "retina" in mega.details["image"]
    # the MAC counts are tabulated from the architecture: facts, not claims
    assert not any("fewer MAC" in c.claim or "MAC/px" in c.claim for c in cs)
    assert len(cs.facts) == 5 and all(f.paper == "asmr" for f in cs.facts)
    budget, reduction, rgb_macs, depth, pluto = cs.facts
    # each run reports the CPU-time ratios of its fits: a timing fact, one ratio per baseline and image
    assert budget.timing and not any(f.timing for f in cs.facts[1:])
    assert set(budget.details["ratios"]) == {"cameraman", "astronaut", "retina"}
    assert set(budget.details["ratios"]["cameraman"]) == set(nets) - {"ASMR"}
    assert all(v > 0 for r in budget.details["ratios"].values() for v in r.values())
    assert abs(reduction.value - 609 / 109.5) < 1e-9  # SIREN 4x16 vs ASMR in the smoke config
    d = reduction.details
    assert d["hook_plus_modulation_adds"] == d["asmr_macs"]  # forward hooks + modulation adds = closed form
    assert 3 * depth.value <= depth.details["mlp_growth"]  # flat in depth (the former claim's rule)
    assert pluto.value >= pluto.paper_value == 500.0  # the abstract's "up to 500x"
    assert rgb_macs.value > 1

    # a second run (nothing patched) gives the same numbers for every non-timing claim and fact
    monkeypatch.undo()
    first = comparable(json.loads(json.dumps(cs.to_dict())))
    again = tmp_path / "again"
    again.mkdir()
    second = comparable(json.loads(json.dumps(check_paper_smoke(PAPER, again).to_dict())))
    assert second == first
    assert "cpu_s_per_step" not in json.dumps(first) and "speedup_per_round" not in json.dumps(first)


@pytest.mark.parametrize("cfg", [QUICK, FULL], ids=["quick", "full"])
def test_configured_steps_are_the_recorded_calibration(cfg):
    """The configs' step counts are equal_time_steps() of the per-step CPU times written down in the module (the
    calibration run of calibrate()), for each kind of image: one measurement, fixed, for every machine."""
    for kind, asmr_steps in (("grey", cfg.steps), ("rgb", cfg.rgb_steps), ("megapixel", cfg.megapixel_steps)):
        _, _, _, steps = reproduce._makers(cfg, kind)
        want = equal_time_steps(asmr_steps, CALIBRATED_SECONDS_PER_STEP[kind], "ASMR")
        assert steps == want, kind
    assert cfg.siren_steps < cfg.steps < cfg.matched_steps  # SIREN 4x128's step is dearer, 4x23's cheaper


def test_calibrate_measures_every_network_of_every_kind():
    out = calibrate(SMOKE, repeats=1)
    assert set(out) == {"grey", "rgb", "megapixel"}
    for r in out.values():
        assert set(r["seconds_per_step"]) == set(r["steps"]) == set(r["config_steps"])
        assert r["steps"] == equal_time_steps(r["config_steps"]["ASMR"], r["seconds_per_step"], "ASMR")
    with pytest.raises(ValueError, match="unknown kinds"):
        calibrate(SMOKE, kinds=("video",))
    with pytest.raises(ValueError, match="repeats"):
        calibrate(SMOKE, repeats=0)


def test_equal_time_steps():
    steps = equal_time_steps(600, {"ASMR": 0.03, "big": 0.1, "small": 0.012}, "ASMR")
    assert steps == {"ASMR": 600, "big": 180, "small": 1500}
    assert equal_time_steps(1, {"ASMR": 1.0, "slow": 100.0}, "ASMR")["slow"] == 1
    with pytest.raises(ValueError, match="reference"):
        equal_time_steps(5, {"a": 1.0}, "ASMR")
    with pytest.raises(ValueError, match="positive"):
        equal_time_steps(5, {"ASMR": 0.0}, "ASMR")


def test_lr_sweep_never_runs_on_an_evaluation_image():
    for img in ("camera", "astronaut", "coffee", "chelsea", "retina"):
        with pytest.raises(ValueError, match="evaluation image"):
            lr_sweep(image=img)
    assert "rocket" not in FULL.rgb_images
    out = lr_sweep(lrs=(1e-3,), steps=2, config=TINY)
    assert list(out) == [1e-3] and math.isfinite(out[1e-3])


def test_quick_gates_the_rgb_claim_in_full_only(monkeypatch, tmp_path):
    # quick's switch on the smoke sizes: no RGB image is fitted, the RGB claim is recorded as skipped with the reason
    from iclr24.paperkit import RunConfig

    fitted = []
    real = reproduce._run_task
    monkeypatch.setattr(
        reproduce, "_run_task", lambda task, *a, **k: fitted.append(task.label) or real(task, *a, **k)
    )
    monkeypatch.setattr(reproduce, "QUICK", replace(SMOKE, rgb_images=(), megapixel=False, render_rounds=2))
    cs = PAPER.check(RunConfig(mode="quick", out=tmp_path, progress=False))
    assert fitted == ["cameraman"]
    assert [c.status for c in cs][-1] == "skipped" and len(cs) == 4
    rgb = cs.claims[-1]
    assert "--full only" in rgb.message and "astronaut, coffee, chelsea" in rgb.claim
    assert all(c.status in ("holds", "fails", "inconclusive") for c in cs.claims[:3])


def test_quick_config_is_what_the_readme_says():
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert QUICK.rgb_images == () and not QUICK.megapixel and QUICK.seeds == 1
    assert f"ASMR's {QUICK.steps} steps (`--quick`, cameraman only)" in readme
    row = f"| cameraman 128² grey | ASMR | 75.7, 82.0, 77.7 | 77.72 | {QUICK.steps} | {FULL.steps:,} |"
    assert row in readme
    assert QUICK_LENGTH_CALIBRATION["image"] == reproduce.CALIBRATION_IMAGE
