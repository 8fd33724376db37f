from dataclasses import replace
from pathlib import Path

import pytest

from iclr24.opposing_signals.reproduce import FULL, PAPER, QUICK, QUICK_LENGTH_CALIBRATION, SMOKE
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=5)
    assert [c.status for c in cs] == ["smoke"] * 5
    adam = cs.claims[-1]
    assert adam.paired is not None and adam.paired["seeds"] == [0, 2] and adam.paired["margin"] == -0.7
    antiphase = cs.claims[1]
    assert "corr" in antiphase.rule and "baseline" in antiphase.rule
    names = {a.split("/")[-1] for a in cs.to_dict()["artifacts"]}
    assert {"group_losses.png", "sharpness.png", "top_examples.png"} <= names


def test_quick_and_full_share_the_gated_setting():
    # quick is the same setting run for fewer steps with sharpness measured less often (full adds MNIST)
    shared = (
        "alpha",
        "lr",
        "n_train",
        "n_a",
        "n_b",
        "control_n",
        "width",
        "depth",
        "k",
        "adam_lr",
        "sharpness_iters",
        "sharpness_method",
        "seed",
        "precision_factor",
        "antiphase_factor",
        "antiphase_corr",
        "spike_factor",
        "eos_tolerance",
        "adam_margin",
    )
    for field in shared:
        assert getattr(QUICK, field) == getattr(FULL, field)
    assert SMOKE.steps < QUICK.steps < FULL.steps and QUICK.sharpness_every >= FULL.sharpness_every
    assert FULL.mnist and not QUICK.mnist
    # the Adam claim is paired over seeds fixed in the config and gated in --full only (no Adam run in quick); no
    # evaluated seed is a calibration seed
    assert FULL.adam and len(FULL.adam_seeds) == 5 and not QUICK.adam and QUICK.adam_seeds == ()
    calibration = {1, *range(100, 105)}
    assert not calibration & (set(FULL.adam_seeds) | {FULL.seed})
    assert QUICK.sharpness_method == "lanczos"
    assert QUICK_LENGTH_CALIBRATION["steps"] == QUICK.steps


def test_readme_states_the_quick_config():
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert f"{QUICK.steps} steps in `--quick` (sharpness every {QUICK.sharpness_every} steps)" in readme
    assert f"{FULL.steps} in `--full` (sharpness every {FULL.sharpness_every})" in readme
    assert "gated in `--full` only" in readme


def test_quick_records_the_adam_claim_as_full_only(monkeypatch, tmp_path):
    # quick's switch, on the smoke sizes: three GD runs, no Adam run, the Adam claim skipped with the reason
    from iclr24.opposing_signals import reproduce
    from iclr24.paperkit import RunConfig

    seen = []
    real = reproduce.run_experiment

    def spy(x, y, exp, *args, **kwargs):
        seen.append(exp.optimizer)
        return real(x, y, exp, *args, **kwargs)

    monkeypatch.setattr(reproduce, "run_experiment", spy)
    monkeypatch.setattr(reproduce, "QUICK", replace(SMOKE, adam=False, adam_seeds=()))
    cs = PAPER.check(RunConfig(mode="quick", out=tmp_path, progress=False))
    assert seen == ["gd"] * 3
    adam = cs.claims[-1]
    assert adam.status == "skipped" and "--full only" in adam.message and "+1.22" in adam.message
    assert all(c.status in ("holds", "fails") for c in cs.claims[:4])  # gated, on the smoke sizes
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
