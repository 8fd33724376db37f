"""Paper scale (issue 48): the official MNIST configuration, and one step of it at a tiny size."""

import gzip

import pytest

from iclr24.fif.paper_scale import PAPER_SCALE
from iclr24.fif.paper_scale import PaperScaleConfig
from iclr24.fif.paper_scale import paper_scale
from iclr24.fif.paper_scale import write_mnist_pickle
from iclr24.fif.reproduce import PAPER
from iclr24.paperkit import measure_paper_scale
from iclr24.paperkit.data.mnist import read_mnist_pickle


def test_paper_scale_is_the_official_mnist_config():
    # configs/fif/mnist.yaml: latent 16, ch_factor 32, ResNet 4 x [512, 512], noise 0.01, beta 10, lr 1e-3,
    # batch 512, 2000 epochs; fff/data/image.py keeps 50,000 of MNIST's 60,000 training images
    c = PAPER_SCALE
    assert (c.latent_dim, c.ch_factor, c.resnet_blocks, c.resnet_widths) == (16, 32, 4, (512, 512))
    assert (c.noise, c.beta, c.lr, c.batch_size, c.epochs, c.n_train) == (0.01, 10.0, 1e-3, 512, 2000, 50_000)
    assert c.steps_per_epoch == 98 and c.paper_steps == 196_000
    assert PAPER.paper_scale is paper_scale


def test_one_tiny_step_on_a_synthetic_mnist_pickle(tmp_path):
    cfg = PaperScaleConfig(
        latent_dim=3, ch_factor=2, resnet_blocks=1, resnet_widths=(8,), batch_size=8, epochs=3
    )
    spec = paper_scale("cpu", items=40, batch=4, cfg=cfg)
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert (row["micro_batch"], row["accumulation"], row["paper_steps"]) == (4, 2, 3 * 6250)
    assert row["flops_per_paper_step"] > 0 and "synthetic mnist.pkl.gz, 40" in row["dataset"]
    assert row["seconds_per_micro_step"] > 0
    # the stand-in is the classic mnist.pkl.gz: ((x, y), (x, y), (x, y)), x float32 (N, 784) in [0, 1]
    p = write_mnist_pickle(tmp_path / "mnist.pkl.gz", 20)
    with gzip.open(p, "rb") as fh:
        assert fh.read(2) == b"\x80\x04"  # a gzip'd pickle (protocol 4)
    splits = read_mnist_pickle(p)  # the package's own MNIST reader accepts it
    (x, y), (xv, _) = splits["train"], splits["val"]
    assert x.shape == (20, 784) and x.dtype.name == "float32" and 0 <= x.min() and x.max() <= 1
    assert y.shape == (20,) and xv.shape == (2, 784)
    with pytest.raises(ValueError, match="divide the paper batch"):
        paper_scale("cpu", items=40, batch=3, cfg=cfg)
