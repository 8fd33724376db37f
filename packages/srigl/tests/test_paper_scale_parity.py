"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

from iclr24.paperkit.scale import fingerprint
from iclr24.srigl.paper_scale import paper_scale

RECORDED = {
    "config": "ResNet-50 224px, SRigL S=0.9 ERK, Delta T=800, SGD lr 0.2 m 0.9 wd 0.0001, batch 512, "
    "5 warm-up + step 30/70/90 epochs, label smoothing 0.1",
    "micro_batch": 4,
    "accumulation": 128,
    "paper_steps": 250300,
    "dataset": "ImageNet-1K stand-in: 3000 generated JPEGs, 1000 classes",
    "notes": [
        "synthetic ImageNet-format JPEG folder (1000 classes x 3, 500x375), streamed from disk "
        "through ImageFolder + DataLoader",
        "paper steps: 100 epochs x ceil(1,281,167 / 512) = 250300",
        "fp32 (the package trains in fp32; no autocast); CPU: micro-batch 4 x 128 (the paper's "
        "512 in one go on CUDA: 128 x 4)",
    ],
    "flops_per_micro_step": 97196310528,
}


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == RECORDED
