"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

from iclr24.fif.paper_scale import paper_scale
from iclr24.paperkit.scale import fingerprint

RECORDED = {
    "config": "FIF MNIST: conv(32)->16 + ResNet 4x[512,512], batch 512, Adam 1e-3, 2000 epochs",
    "micro_batch": 512,
    "accumulation": 1,
    "paper_steps": 196000,
    "dataset": "synthetic mnist.pkl.gz, 5,000 training images (stand-in)",
    "notes": [
        "stand-in: synthetic stroke images in the mnist.pkl.gz format (the real file is missing)",
        "official configs/fif/mnist.yaml: conv (ch_factor 32) to latent 16 + latent ResNet 4 x "
        "[512, 512], beta 10, noise 0.01, Adam lr 1e-3, batch 512, 2000 epochs x 98 steps",
        "the conv encoder/decoder is this package's conv_pair at ch_factor 32 (two stride-2 "
        "convs, no batch norm)",
        "fp32 as the official config (no mixed precision); data in memory as the official TensorDataset",
    ],
    "flops_per_micro_step": 40259158016,
}


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    # items=5000: the stand-in row paper_scale("cpu") gives where the real mnist.pkl.gz is missing, on any machine
    assert fingerprint(paper_scale("cpu", items=5000)) == RECORDED
