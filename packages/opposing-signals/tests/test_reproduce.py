from iclr24.opposing_signals.reproduce import FULL, PAPER, QUICK, SMOKE
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=5)
    assert [c.status for c in cs] == ["smoke"] * 5
    names = {a.split("/")[-1] for a in cs.to_dict()["artifacts"]}
    assert {"group_losses.png", "sharpness.png", "top_examples.png"} <= names


def test_quick_and_full_share_the_gated_setting():
    # quick is the same setting run for fewer steps with sharpness measured less often (full adds MNIST)
    shared = ("alpha", "lr", "n_train", "n_a", "n_b", "width", "depth", "k", "adam_lr", "sharpness_iters")
    for field in shared:
        assert getattr(QUICK, field) == getattr(FULL, field)
    assert SMOKE.steps < QUICK.steps < FULL.steps and QUICK.sharpness_every >= FULL.sharpness_every
    assert FULL.mnist and not QUICK.mnist


def test_digits_runs_use_one_thread_whatever_the_caller_sets(monkeypatch):
    # with two threads the chaotic GD trajectory (and the Adam claim's verdict) changed: the runs pin one thread
    import torch

    from iclr24.opposing_signals import reproduce

    seen = []
    real = reproduce.run_experiment

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(reproduce, "run_experiment", spy)
    prev = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        reproduce.measure_digits(SMOKE, seed=0)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(prev)
    assert seen == [1, 1, 1]
