import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from iclr24.asmr import experiments as ex
from iclr24.asmr import reproduce
from iclr24.asmr.reproduce import CALIBRATED_SECONDS_PER_STEP
from iclr24.asmr.reproduce import CLAIMS
from iclr24.asmr.reproduce import FULL
from iclr24.asmr.reproduce import PAPER
from iclr24.asmr.reproduce import QUICK
from iclr24.asmr.reproduce import RENDER_CALIBRATION
from iclr24.asmr.reproduce import SMOKE
from iclr24.asmr.reproduce import calibrate
from iclr24.asmr.reproduce import equal_time_steps
from iclr24.asmr.reproduce import lr_sweep
from iclr24.asmr.reproduce import megapixel_lr_sweep
from iclr24.asmr.reproduce import whole_epochs
from iclr24.paperkit import RunConfig
from iclr24.paperkit.runner.report import comparable
from iclr24.paperkit.runner.testing import check_paper_smoke

TINY = replace(FULL, size=16, bases=((2, 2, 2, 2),) * 2, hidden=8, siren_hidden=8)
README = (Path(__file__).parents[1] / "README.md").read_text()


def _no_measured_budgets(*_a, **_k):
    raise AssertionError("the claims' step counts must come from the config, not from a measurement")


@pytest.mark.slow  # two smoke runs
def test_smoke_claims_run_end_to_end_on_the_configured_steps(tmp_path, monkeypatch):
    # no step count may be measured during a run: the tools that would do it raise
    for name in ("equal_time_steps", "step_seconds", "calibrate", "lr_sweep", "megapixel_lr_sweep"):
        monkeypatch.setattr(ex, name, _no_measured_budgets)
    cs = check_paper_smoke(PAPER, tmp_path)
    assert [c.details["spec"]["id"] for c in cs] == ["matched_siren", "same_siren", "render", "rgb"]
    assert all(c.verdict == "smoke" and c.kind in ("headline", "supporting") for c in cs)
    for f in ("reconstructions.png", "psnr_curves.png", "depth_table.md"):
        assert (tmp_path / f).is_file()
    matched, same, render, rgb = cs
    nets = same.details["networks"]
    assert [v["steps"] for v in nets.values()] == [SMOKE.steps, SMOKE.matched_steps, SMOKE.siren_steps]
    assert (
        matched.details["baseline_network"] == "SIREN 4x6 (MAC-matched)"
        and matched.details["networks"] == nets
    )
    assert list(rgb.details["steps"].values()) == [SMOKE.rgb_steps, SMOKE.rgb_siren_steps]
    assert [r["steps"] for r in same.details["per_seed"]["ASMR"]] == [SMOKE.steps]  # what fit() ran
    assert nets["SIREN 4x6 (MAC-matched)"]["lr"] == 3e-3  # the swept rate, fixed in the config
    assert not any(c.timing for c in (matched, same, rgb))
    # the render claim: paired over interleaved rounds, ratio form (ASMR <= SIREN / 5), a timing claim, with the
    # MAC-matched SIREN timed in the same rounds and the CPU-scale ratio beside it
    assert render.timing and render.paired["form"] == "log_ratio" and render.paired["factor"] == 0.2
    assert render.paired["better"] == "lower" and render.paired["seeds"] == [
        100,
        101,
    ]  # smoke: quick's first two
    assert render.details["threads"] == 1 and render.details["clock"] == "process CPU time"
    sp = [b / o for o, b in zip(render.paired["ours"], render.paired["baseline"])]
    assert render.details["speedup_per_round"] == pytest.approx(sp)
    assert (
        len(render.details["matched_siren"]["ms_per_round"]) == 2 and "cpu_scale" in render.details["beside"]
    )
    assert set(rgb.details["per_image"]) == {"astronaut"}
    assert len(cs.facts) == 7 and all(f.paper == "asmr" for f in cs.facts)
    matched_render, cpu_scale, budget, reduction, rgb_macs, depth, pluto = cs.facts
    assert matched_render.timing and cpu_scale.timing and budget.timing
    assert not any(f.timing for f in cs.facts[3:])
    assert set(budget.details["ratios"]) == {"cameraman", "astronaut"}
    assert set(budget.details["ratios"]["cameraman"]) == set(nets) - {"ASMR"}
    assert abs(reduction.value - 609 / 109.5) < 1e-9  # SIREN 4x16 vs ASMR in the smoke config
    d = reduction.details
    assert d["hook_plus_modulation_adds"] == d["asmr_macs"]  # forward hooks + modulation adds = closed form
    assert 3 * depth.value <= depth.details["mlp_growth"]  # flat in depth
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


def test_megapixel_claim_runs_on_the_grid_sampler(tmp_path, monkeypatch):
    # the full-only claim on the smoke sizes: 32^2, 4x4 cells, batches of 64 (16 per epoch)
    monkeypatch.setitem(reproduce.MODES, "full", SMOKE)
    seen = []
    real = ex.run_task
    monkeypatch.setattr(ex, "run_task", lambda task, *a, **k: seen.append(task) or real(task, *a, **k))
    cs = reproduce.run(RunConfig(mode="full", out=tmp_path, progress=False), parts=("megapixel",))
    (mega,) = cs.claims
    assert mega.details["spec"]["id"] == "megapixel" and mega.status in ("holds", "fails")
    assert [t.cells for t in seen] == [SMOKE.megapixel_cells] and seen[0].batch_size == SMOKE.megapixel_batch
    assert mega.details["epochs"] == {"ASMR": 1, "SIREN 4x16": 2}
    assert mega.details["lrs"] == {"ASMR": SMOKE.megapixel_lr, "SIREN 4x16": SMOKE.megapixel_siren_lr}


def test_claims_table():
    by_id = {c.id: c for c in CLAIMS}
    assert list(by_id) == ["matched_siren", "same_siren", "render", "rgb", "megapixel"]
    assert [c.kind for c in CLAIMS] == ["headline", "headline", "supporting", "supporting", "supporting"]
    assert PAPER.claims == CLAIMS
    # every quick row is decided in quick (none skipped), the megapixel claim only in full
    assert [c.id for c in CLAIMS if "quick" in c.modes] == ["matched_siren", "same_siren", "render", "rgb"]
    assert by_id["megapixel"].modes == ("full",)
    # the render claim: a timing claim whose rounds come from the power rule on calibration rounds never evaluated
    render = by_id["render"]
    assert render.timing and render.better == "lower" and render.factor == 0.2
    for mode in ("quick", "full"):
        assert not set(RENDER_CALIBRATION.seeds) & set(render.seeds[mode])
        plan = render.plan(mode)
        assert plan.decidable and plan.seeds == 3 and render.evaluated_seeds(mode) == [100, 101, 102]
        assert plan.seeds * RENDER_CALIBRATION.seconds_per_seed <= 0.8 * render.budget[mode]  # 25 % headroom
    assert (
        by_id["matched_siren"].evaluated_seeds("quick") == [0] and len(by_id["same_siren"].seeds["full"]) == 3
    )
    # the configs behind them
    assert QUICK.rgb_images == ("astronaut",) and FULL.rgb_images == ("astronaut", "coffee", "chelsea")
    assert (FULL.render_size, FULL.render_hidden, FULL.render_bases) == (512, 256, ((4, 4, 4, 8),) * 2)
    assert FULL.kodak_render and not QUICK.kodak_render and FULL.megapixel_cells == 16


@pytest.mark.parametrize("cfg", [QUICK, FULL], ids=["quick", "full"])
def test_configured_steps_are_the_recorded_calibration(cfg):
    """The configs' step counts are equal_time_steps() of the per-step CPU times written down in the module (the
    calibration run of calibrate()), for each kind of image: one measurement, fixed, for every machine; the
    megapixel counts rounded to whole epochs of the grid sampler."""
    per_epoch = cfg.megapixel_size**2 // cfg.megapixel_batch
    for kind, asmr_steps in (("grey", cfg.steps), ("rgb", cfg.rgb_steps), ("megapixel", cfg.megapixel_steps)):
        _, _, _, steps = ex.makers(cfg, kind)
        want = equal_time_steps(asmr_steps, CALIBRATED_SECONDS_PER_STEP[kind], "ASMR")
        if kind == "megapixel":
            want = {k: whole_epochs(v, per_epoch) for k, v in want.items()}
        assert steps == want, kind
    assert cfg.siren_steps < cfg.steps < cfg.matched_steps  # SIREN 4x128's step is dearer, 4x23's cheaper
    assert cfg.megapixel_steps % per_epoch == 0 and cfg.megapixel_steps // per_epoch == 8


def test_whole_epochs():
    assert whole_epochs(849, 64) == 832 and whole_epochs(10, 64) == 64 and whole_epochs(96, 64) == 128
    with pytest.raises(ValueError):
        whole_epochs(0, 64)


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


def test_sweeps_never_run_on_an_evaluation_image():
    for img in ("camera", "astronaut", "coffee", "chelsea", "retina"):
        with pytest.raises(ValueError, match="evaluation image"):
            lr_sweep(image=img)
        with pytest.raises(ValueError, match="evaluation image"):
            megapixel_lr_sweep(image=img)
    assert reproduce.CALIBRATION_IMAGE not in FULL.rgb_images + (FULL.megapixel_image,)
    assert reproduce.MEGAPIXEL_CALIBRATION_IMAGE != FULL.megapixel_image
    out = lr_sweep(lrs=(1e-3,), steps=2, config=TINY)
    assert list(out) == [1e-3] and math.isfinite(out[1e-3])
    mp = megapixel_lr_sweep(lrs=(1e-3,), network="siren", config=SMOKE)
    assert list(mp) == [1e-3] and math.isfinite(mp[1e-3]["psnr"])
    img = ex.calibration_megapixel_image(64)
    assert img.shape == (64, 64, 3) and 0 <= img.min() and img.max() <= 1


def test_render_rounds_time_every_network_in_every_round():
    r = ex.render_rounds(SMOKE, 2)
    assert r["names"] == ["ASMR", "SIREN 4x16", "SIREN 4x6 (MAC-matched)"]
    assert all(len(v) == 2 and min(v) > 0 for v in r["ms"].values()) and len(r["round_cpu_seconds"]) == 2
    with pytest.raises(ValueError, match="rounds"):
        ex.render_rounds(SMOKE, 0)


def test_readme_states_the_configs():
    assert f"ASMR's {QUICK.steps} steps (`--quick`" in README
    row = f"| cameraman 128² grey | ASMR | 75.7, 82.0, 77.7 | 77.72 | {QUICK.steps} | {FULL.steps:,} |"
    assert row in README
    assert "uniform grid sampler" in README and "hubble_deep_field" in README
