"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

import pytest

from iclr24.paperkit.scale import fingerprint
from iclr24.sfda2.paper_scale import paper_scale

RECORDED = {
    "config": "PAPER_SCALE: VisDA-2017 resnet101, 224 px, batch 64",
    "micro_batch": 16,
    "accumulation": 4,
    "paper_steps": 12990,
    "dataset": "synthetic VisDA-format JPEG folder (3,000 images, 12 classes)",
    "notes": [
        "target adaptation of SF(DA)^2 (SNC + IFA + FD) on VisDA-2017: resnet101 + bottleneck "
        "256 + weight-norm classifier (12 classes), random weights (no download), 224 px views "
        "(resize 256, random crop, flip), SGD lr 0.001 (features x0.1), batch 64, 15 epochs x "
        "866 iterations over 55,388 images",
        "stand-in data: synthetic VisDA-format JPEGs, 3,000 images in 12 class folders "
        "(aeroplane, bicycle, bus, ...), read lazily through a DataLoader (0 workers)",
        "banks: 3,000 rows (the method keeps N x 256 features + N x 12 scores; at VisDA's "
        "55,388 images about 57 MiB), started from random values instead of the official "
        "eval-mode pass over the target (one extra forward pass, not in paper_steps)",
        "no mixed precision (the official code runs fp32)",
        "micro-batch 16 x 4: each micro-step is one whole iteration at batch 16 (its "
        "batch-coupled terms, the negative term and the covariance update, see 16 samples); the "
        "row counts 4 of them per paper step of 64",
    ],
    "flops_per_micro_step": 745154053248,
}


@pytest.mark.slow  # builds the default stand-in data and counts FLOPs (about 30 s)
def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == RECORDED
