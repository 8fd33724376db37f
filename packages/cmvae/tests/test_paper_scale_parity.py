"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

from iclr24.cmvae.paper_scale import paper_scale
from iclr24.paperkit.scale import fingerprint

RECORDED = {
    "config": "CMVAE PolyMNIST: 5 x 3x28x28 ResNet enc/dec (nf 64), d=32, d_w=32, K_max=40, beta=2.5, "
    "IWAE K=1, Adam(amsgrad) 0.001, batch 128, 250 epochs",
    "micro_batch": 16,
    "accumulation": 8,
    "paper_steps": 117250,
    "dataset": "synthetic PolyMNIST-format folder: 2000 tuples x 5 RGB 28x28 PNGs",
    "notes": [
        "stand-in data: 2000 synthetic tuples in PolyMNIST's layout "
        "(train/m0..m4/<index>.<label>.png, 8-bit RGB 28x28; scikit-learn digits composited on "
        "per-modality colour textures), read from disk per batch by a DataLoader (2 workers and "
        "pinned memory on CUDA, as the official loaders)",
        "paper steps: 250 epochs x 469 steps (60,000 train tuples, batch 128)",
        "micro-batch 16 x 8 accumulation = the paper's batch 128 (CPU: the paper's batch of 128 "
        "takes well over 20 s per step on one core)",
        "fp32 on every device (the official code uses no mixed precision)",
    ],
    "flops_per_micro_step": 357485936640,
}


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == RECORDED
