"""Paper scale (issue 48): the official CIFAR-10 VGG-9 run, and one step at a tiny size on CIFAR-format files."""

from dataclasses import replace

import pytest

from iclr24.paperkit import measure_paper_scale
from iclr24.paperkit.data import load_cifar10
from iclr24.paperkit.data.standins import write_cifar10_batches
from iclr24.tab_snn.paper_scale import PAPER_SCALE
from iclr24.tab_snn.paper_scale import paper_scale
from iclr24.tab_snn.reproduce import PAPER


def test_paper_scale_is_the_official_main_py_config():
    # official main.py: VGG9(tau=0.9), -T 4, -b 64, --epochs 200, SGD(lr=0.02, momentum=0.9, weight_decay=5e-4),
    # CosineAnnealingLR; CIFAR-10: 50,000 training images -> 782 batches an epoch
    c = PAPER_SCALE
    assert (c.arch, c.T, c.tau, c.norm, c.width, c.batch_size, c.epochs) == (
        "vgg9",
        4,
        0.9,
        "tab",
        1.0,
        64,
        200,
    )
    assert (c.lr, c.momentum, c.weight_decay) == (0.02, 0.9, 5e-4)
    assert c.steps_per_epoch == 782 and c.paper_steps == 156_400
    assert PAPER.paper_scale is paper_scale


def test_one_tiny_step_on_cifar_format_batches(tmp_path):
    tiny = replace(PAPER_SCALE, width=0.0625, batch_size=4, epochs=2, n_train=40)
    spec = paper_scale("cpu", images_per_batch=8, micro_batch=2, cfg=tiny)
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert (row["micro_batch"], row["accumulation"], row["paper_steps"]) == (2, 2, 2 * 10)
    assert row["flops_per_paper_step"] > 0 and "40 training images" in row["dataset"]
    # the stand-in is the real python format: paperkit's CIFAR-10 reader takes it as it is
    folder = write_cifar10_batches(tmp_path, 25, 5)
    d = load_cifar10(folder)
    assert d["train"][0].shape == (25, 32, 32, 3) and d["test"][1].shape == (5,)
    assert (folder / "batches.meta").is_file()
    with pytest.raises(ValueError, match="must divide"):
        paper_scale("cpu", images_per_batch=8, micro_batch=3, cfg=tiny)
