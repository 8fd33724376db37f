"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

from iclr24.paperkit.scale import fingerprint
from iclr24.task_geometry.paper_scale import paper_scale

RECORDED = {
    "config": "SmallCNN conv16-conv32-fc128-fc2 on 32x32x3, Adam lr 0.001, batch 64, 100 epochs x 2 "
    "nets (Tanh, ReLU)",
    "micro_batch": 64,
    "accumulation": 1,
    "paper_steps": 156400,
    "dataset": "CIFAR-10 format (synthetic stand-in)",
    "notes": [
        "stand-in data: random images in CIFAR-10's python format (50,000 training images in "
        "data_batch_1..5 + test_batch), read by paperkit's load_cifar10 (CIFAR-10 cannot ship "
        "offline)",
        "paper steps = 100 epochs x 782 minibatches of 64 x 2 networks (Tanh and ReLU); the "
        "paper gives no CIFAR epoch count: 100 is the first author's deep-network scripts' "
        "count",
        "the training images are held in memory as float32 (train_cnn's input): 0.6 GB at "
        "CIFAR-10's size, with transient copies while they are converted (the package's "
        "_images), so the peak is higher",
        "fp32 on every device (the authors' code uses no mixed precision); the geometry "
        "measurements after training (CKA, PS, CCGP on the class means) are not counted",
    ],
    "flops_per_micro_step": 1673625600,
}


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == RECORDED
