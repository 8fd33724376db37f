"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

from iclr24.opposing_signals.paper_scale import paper_scale
from iclr24.paperkit.scale import fingerprint

RECORDED = {
    "config": "ResNet-18 (CIFAR, 11.2M params), full-batch GD on a 5,000-image CIFAR-10 subset, MSE, "
    "lr 0.02 (assumed), 10,000 steps (assumed)",
    "micro_batch": 40,
    "accumulation": 125,
    "paper_steps": 10000,
    "dataset": "synthetic CIFAR-format batch files (cifar-10-batches-py), 5,000-image training subset",
    "notes": [
        "stand-in data: synthetic images in CIFAR-10's python batch format (data_batch_1..5, "
        "test_batch), read by cifar10_subset; the 5,000-image subset is held in memory as "
        "full-batch GD needs it (60 MB at fp32)",
        "no official code: lr 0.02 and 10,000 GD steps are ASSUMED (the paper's PDF was not retrievable)",
        "a paper step is one GD step = 125 physical batches of 40; the sharpness measurement "
        "(20 Hessian-vector products every 50 steps, about two gradients each) adds about 80% "
        "on top, not counted in the row",
        "CPU: physical batch 40, fp32 (full-batch GD at the edge of stability is run in full precision)",
    ],
    "flops_per_micro_step": 133159895040,
}


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == RECORDED
