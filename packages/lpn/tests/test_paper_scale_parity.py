"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

import pytest

from iclr24.lpn.paper_scale import paper_scale
from iclr24.paperkit.scale import fingerprint

RECORDED = {
    "config": "LPN lpn_128 (hidden 256, beta 100, alpha 1e-06) on 128x128 RGB crops, batch 64, Adam "
    "(l1 1e-3 then PM 1e-4, gamma_min 17.74), 40,000 steps x 2 noise levels",
    "micro_batch": 2,
    "accumulation": 32,
    "paper_steps": 80000,
    "dataset": "synthetic CelebA-format folder: 2,000 JPEGs 178x218",
    "notes": [
        "stand-in data: 2,000 synthetic 178x218 JPEGs in torchvision's CelebA layout "
        "(img_align_celeba/ + list_eval_partition.txt), streamed from disk and centre-cropped "
        "to 128 per item (the train split has 162,770 images; load_celeba, which holds a whole "
        "split in memory, is for the test images only)",
        "each step differentiates the loss through f = grad psi (double backpropagation) and clamps W >= 0",
        "CPU: micro-batch 2 x 32 accumulation (the paper's 64 takes minutes per step on one "
        "core); each micro-step also steps Adam and clamps, as the official step does",
        "paper steps: 40,000 x 2 models (sigma 0.05 and 0.1)",
        "FLOPs: one crop's forward and double backward counted by paperkit's count_flops "
        "(torch's flop formulas) times the micro-batch",
    ],
    "flops_per_micro_step": 162377171712,
}


@pytest.mark.slow  # builds the default stand-in data and counts FLOPs (about 30 s)
def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == RECORDED
