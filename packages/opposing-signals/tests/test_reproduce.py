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
