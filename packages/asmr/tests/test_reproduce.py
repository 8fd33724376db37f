import math
from dataclasses import replace

import pytest

from iclr24.asmr.reproduce import FULL, PAPER, equal_time_steps, lr_sweep
from iclr24.paperkit.testing import check_paper_smoke

TINY = replace(FULL, size=16, bases=((2, 2, 2, 2),) * 2, hidden=8, siren_hidden=8)


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert len(cs) == 5 and all(c.paper == "asmr" for c in cs)
    assert all(c.verdict == "smoke" for c in cs)
    for f in ("reconstructions.png", "psnr_curves.png", "depth_table.md"):
        assert (tmp_path / f).is_file()
    matched, same, render, rgb, mega = cs
    # equal CPU time: the dearer SIREN 4xh gets fewer steps than ASMR, the budget is the measured one
    nets = same.details["networks"]
    budget = nets["ASMR"]["steps"] * nets["ASMR"]["cpu_s_per_step"]
    for v in nets.values():  # every network gets the CPU time of ASMR's steps, to within half a step
        assert v["steps"] == 1 or abs(v["steps"] * v["cpu_s_per_step"] - budget) <= v["cpu_s_per_step"] / 2
    assert matched.baseline_name.endswith("at lr 0.003")  # the swept lr, fixed in the config
    # the render claim gates a ratio measured with one pinned thread and process CPU time
    assert render.rule == "ours >= 5" and render.details["threads"] == 1
    assert render.details["clock"] == "process CPU time"
    assert render.ours == pytest.approx(render.details["siren_ms"] / render.details["asmr_ms"])
    assert set(rgb.details["per_image"]) == {"astronaut"} and "retina" in mega.details["image"]
    # the MAC counts are tabulated from the architecture: facts, not claims
    assert not any("fewer MAC" in c.claim or "MAC/px" in c.claim for c in cs)
    assert len(cs.facts) == 4 and all(f.paper == "asmr" for f in cs.facts)
    reduction, rgb_macs, depth, pluto = cs.facts
    assert abs(reduction.value - 609 / 109.5) < 1e-9  # SIREN 4x16 vs ASMR in the smoke config
    d = reduction.details
    assert d["hook_plus_modulation_adds"] == d["asmr_macs"]  # forward hooks + modulation adds = closed form
    assert 3 * depth.value <= depth.details["mlp_growth"]  # flat in depth (the former claim's rule)
    assert pluto.value >= pluto.paper_value == 500.0  # the abstract's "up to 500x"
    assert rgb_macs.value > 1


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
