"""Paper scale (issue 48): experiment (B)'s own size (n = 1000, K = 32, RK4 x 2, 300 epochs), one step tiny."""

from dataclasses import replace

from iclr24.ncde_bounds.paper_scale import PAPER_SCALE
from iclr24.ncde_bounds.paper_scale import paper_scale
from iclr24.ncde_bounds.reproduce import PAPER
from iclr24.ncde_bounds.reproduce import ReproConfig
from iclr24.ncde_bounds.train import TrainConfig
from iclr24.paperkit import measure_paper_scale


def test_paper_scale_is_the_reconstructed_experiment_b():
    c, r = PAPER_SCALE, ReproConfig()
    assert (c.n_train, c.k, c.n_fine, c.grids, c.seeds) == (
        r.b_n,
        max(r.b_ks),
        r.n_fine,
        len(r.b_ks),
        3,  # the reconstructed experiment's 3 seeds (the claims table sizes the seeds of the CPU runs)
    )
    assert c.train == r.b_train == TrainConfig()
    t = c.train
    assert (t.hidden, t.width, t.depth, t.solver, t.substeps, t.epochs, t.lr, t.lr_final, t.batch_size) == (
        8,
        32,
        1,
        "rk4",
        2,
        300,
        1e-2,
        1e-3,
        None,
    )
    assert (c.n_train, c.k) == (1000, 32) and c.paper_steps == 300
    assert PAPER.paper_scale is paper_scale


def test_one_tiny_full_batch_step():
    tiny = replace(PAPER_SCALE, n_train=6, k=4, n_fine=64, train=TrainConfig(hidden=2, width=4, epochs=5))
    spec = paper_scale("cpu", cfg=tiny)
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert (row["micro_batch"], row["accumulation"], row["paper_steps"]) == (6, 1, 5)
    assert (
        row["flops_per_paper_step"] > 0
        and "6 series of 5 irregular observations x 1 channels" in row["dataset"]
    )
    assert "RK4 x2" in row["config"]
