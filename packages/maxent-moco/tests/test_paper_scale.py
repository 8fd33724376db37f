"""Paper scale (issue 48): PAPER_SCALE is Fig. 1 (bottom)'s MoCoDyna control run, and one run of it works at a tiny
size on CliffWalk read back from its .npz file."""

from iclr24.maxent_moco.paper_scale import PAPER_SCALE
from iclr24.maxent_moco.paper_scale import dyna_run_flops
from iclr24.maxent_moco.reproduce import FULL
from iclr24.maxent_moco.reproduce import PAPER
from iclr24.maxent_moco.sample import PAPER_BETA
from iclr24.maxent_moco.sample import MoCoDyna
from iclr24.paperkit.scale import measure_paper_scale


def test_paper_scale_config_is_fig1_bottom():
    c, sample = PAPER_SCALE, FULL[1]
    assert (c.n_steps, c.planning_interval) == (sample.n_steps, sample.planning_interval) == (150_000, 2000)
    assert c.ds == sample.ds == (1, 2, 3) and c.lams == sample.lams == (0.1, 0.5, 1.0)
    assert c.n_runs == 20 and c.val_queue_interval == 10_000 and c.d == 3
    assert MoCoDyna(c.d).beta == PAPER_BETA[3]


def test_hand_counted_flops():
    # 1 plan over 1 row (S = A = d = 1): Newton 10 x (1 x 18 + 10) = 280, policy 5 x (0 + 2) = 10; 1 sample: 10
    assert dyna_run_flops(1, 1, 1, 1, 1) == 280 + 10 + 10
    assert (
        dyna_run_flops(4000, 2000, 36, 4, 3)
        == 2 * (10 * 144 * (36 * 42 + 270) + 5 * (31104 + 10368)) + 4000 * 14
    )


def test_one_run_at_a_tiny_size():
    spec = PAPER.paper_scale("cpu", n_steps=2500)
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert row["micro_batch"] == 2500 and row["accumulation"] == 1 and row["paper_steps"] == 3 * 3 * 20
    assert row["flops_per_paper_step"] == dyna_run_flops(2500, 2000, 36, 4, 3)
    assert "MoCoDyna(d=3)" in row["config"] and "36 states x 4 actions" in row["config"]
