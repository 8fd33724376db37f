"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

from iclr24.paperkit.scale import fingerprint
from iclr24.rdmc.paper_scale import paper_scale

RECORDED = {
    "config": "rdMC-IS, 10-D 4-mode mixture, T=2, K=20, m=200 proposals x 1000 particles (4000 "
    "log-density calls per sample)",
    "micro_batch": 1000,
    "accumulation": 1,
    "paper_steps": 60,
    "dataset": "gmm10d as a mixture .npz (means, covs, weights)",
    "notes": [
        "no training: one step = one outer iteration of Alg. 1 (score estimate at every "
        "particle by importance sampling + exponential-integrator update); paper steps = K = 20 "
        "outer steps x 3 seeds",
        "FLOPs counted by hand (is_step_flops: proposals, mixture log-density, weights, "
        "weighted mean): the work is elementwise, which torch's FlopCounterMode does not count",
        "the H200 hours assume dense bf16 matrix throughput; this float64 elementwise, "
        "memory-bound work gets a small fraction of it, so read them as a lower bound",
        "the paper's PDF was not available offline: this is the largest setting the package "
        "runs (the full run's 10-D comparison), not a setting quoted from the paper; float64 as "
        "the package's sampler",
    ],
    "flops_per_micro_step": 45500000,
}


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == RECORDED
