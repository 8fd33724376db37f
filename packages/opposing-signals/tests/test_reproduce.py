from iclr24.opposing_signals.reproduce import FULL, PAPER, QUICK, SMOKE
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=5)
    assert [c.status for c in cs] == ["smoke"] * 5
    names = {a.split("/")[-1] for a in cs.to_dict()["artifacts"]}
    assert {"group_losses.png", "sharpness.png", "top_examples.png"} <= names


def test_quick_and_full_share_the_gated_setting():
    # quick differs from full only in how often sharpness is measured (and full adds the MNIST finding)
    for field in ("alpha", "lr", "steps", "n_train", "n_a", "n_b", "k", "adam_lr", "sharpness_iters"):
        assert getattr(QUICK, field) == getattr(FULL, field)
    assert FULL.mnist and not QUICK.mnist and SMOKE.steps < QUICK.steps
