"""Paper scale (issue 48): PAPER_SCALE is ML-10M item-based, and one micro-step of it runs at a tiny size on data
in ML-10M's ratings.dat format."""

from iclr24.aemc_ne.paper_scale import PAPER_SCALE
from iclr24.aemc_ne.paper_scale import write_ml10m_format
from iclr24.aemc_ne.reproduce import FULL
from iclr24.aemc_ne.reproduce import PAPER
from iclr24.paperkit.scale import measure_paper_scale


def test_paper_scale_config_is_ml10m_item_based():
    c = PAPER_SCALE
    assert (c.n_users, c.n_items, c.n_ratings_paper) == (69_878, 10_677, 10_000_054)  # GroupLens ML-10M
    assert (
        c.orientation == "item" and c.main_hidden == (500,) and c.activation == "sigmoid"
    )  # I-AutoRec layout
    assert c.elem_hidden == (20, 20) and c.skip == 0.8 and c.weight_decay == 0.0  # the released RCAutoRec
    assert (c.lr, c.l2, c.epochs) == (
        FULL.real_lr,
        FULL.real_l2,
        FULL.real_max_epochs,
    )  # the MovieLens protocol
    assert PAPER.paper_scale is not None


def test_one_micro_step_at_a_tiny_size(tmp_path):
    spec = PAPER.paper_scale("cpu", users=300, items=200, ratings=3000, hidden=8, micro_batch=64)
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert row["micro_batch"] == 64 and row["accumulation"] == -(
        -10_677 // 64
    )  # ceil: the full batch of items
    assert row["paper_steps"] == PAPER_SCALE.epochs and row["seconds_per_micro_step"] > 0
    # forward + backward of the 300-8-300 main net on 64 items: at least 3 x 2 x 64 x (300 x 8 x 2) FLOPs
    assert row["flops_per_paper_step"] >= row["accumulation"] * 3 * 2 * 64 * 300 * 8 * 2
    assert "300-8-300" in row["config"]


def test_standin_is_in_ml10m_ratings_dat_format(tmp_path):
    from iclr24.aemc_ne import load_movielens

    path = write_ml10m_format(tmp_path, 50, 30, 400)
    lines = path.read_text(encoding="latin-1").splitlines()
    assert path.name == "ratings.dat" and len(lines) == 400
    parts = lines[0].split("::")
    assert len(parts) == 4 and all(p.replace(".", "").isdigit() for p in parts)
    r = load_movielens(path)
    assert r.shape == (50, 30) and len(r) == 400  # every user and every movie rated
    assert set((r.values * 2).astype(int)) <= set(range(1, 11))  # half stars 0.5..5
