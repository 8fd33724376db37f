"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

import pytest

from iclr24.paperkit.scale import fingerprint
from iclr24.rlcf.paper_scale import paper_scale

RECORDED = {
    "config": "RLCF ViT-B-16 + ViT-L-14 reward, 224 px, 64 views, 3 steps, lr 1e-05",
    "micro_batch": 8,
    "accumulation": 8,
    "paper_steps": 7500,
    "dataset": "ImageNet-A (stand-in: generated JPEGs)",
    "notes": [
        "ViT-B-16 policy (whole image encoder adapts) + frozen ViT-L-14 reward, open_clip "
        "architectures with RANDOM weights (pretrained=None: no weights can be downloaded here; "
        "same FLOPs and memory as trained ones)",
        "stand-in data: an ImageNet-A-format folder of 2000 generated JPEGs (256-640 px per "
        "side) in 200 WordNet-ID class folders, read lazily through a DataLoader; 200-class "
        "label space",
        "a paper step = one test image: 64 views, 3 AdamW steps (lr 1e-05, wd 0.0005), top-3 "
        "sampling, reward encode of the kept views; paper steps = 7,500 ImageNet-A test images",
        "cpu: a micro-step is one image with 8 views (1 kept) and a paper step counts 8 of "
        "them: the selection forward over 64 views is counted exactly, the 3 updates and the "
        "reward encode for 8 kept views instead of 6; fp32",
    ],
    "flops_per_micro_step": 669346424832,
}


@pytest.mark.slow  # builds the default stand-in data and counts FLOPs (about 70 s)
def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == RECORDED
