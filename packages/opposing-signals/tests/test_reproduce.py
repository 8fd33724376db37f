import pytest

from iclr24.opposing_signals.reproduce import FULL, PAPER, QUICK, SMOKE
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
    # the Adam claim is paired over seeds fixed in the config; full adds seeds to quick's; none is a calibration seed
    assert len(QUICK.adam_seeds) == 3 and set(QUICK.adam_seeds) < set(FULL.adam_seeds)
    calibration = {1, 100, 101}
    assert not calibration & (set(FULL.adam_seeds) | {FULL.seed})
    assert QUICK.sharpness_method == "lanczos"


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
