"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

from iclr24.paperkit.scale import fingerprint
from iclr24.tab_snn.paper_scale import paper_scale

RECORDED = {
    "config": "SpikingVGG9 + TAB, T 4, 32x32, batch 64, SGD 0.02 cosine, 200 epochs",
    "micro_batch": 32,
    "accumulation": 2,
    "paper_steps": 156400,
    "dataset": "synthetic CIFAR-10 python batches, 5,000 training images",
    "notes": [
        "stand-in: synthetic cifar-10-batches-py (6,000 images in 6 pickled batch files) read "
        "by load_cifar; CIFAR-10 itself is not offline",
        "official main.py: VGG-9 + TAB, T 4, LIF tau 0.9, SGD 0.02 / 0.9 / 5e-4, cosine, batch "
        "64, 200 epochs, 4 workers, fp32",
        "CPU: micro-batch 32 x 2 (TAB's batch statistics then cover 32 images, not 64); CUDA "
        "runs the paper's 64 x 1",
    ],
    "flops_per_micro_step": 149090205696,
}


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == RECORDED
