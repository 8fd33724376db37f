"""PAPER_SCALE is the official VisDA-2017 run; paper_scale() runs one step of it at a tiny size."""

import math

from iclr24.paperkit import measure_paper_scale
from iclr24.sfda2.images import VISDA_CLASSES
from iclr24.sfda2.reproduce import PAPER
from iclr24.sfda2.reproduce import PAPER_SCALE
from iclr24.sfda2.reproduce import paper_scale


def test_paper_scale_config_is_the_official_visda_run():
    # visda.sh + tar_adaptation.py argparse defaults + network.py (ResNet-101, bottleneck 256, 12 classes)
    c = PAPER_SCALE
    assert (c.arch, c.bottleneck_dim, c.num_classes, c.resize, c.crop) == ("resnet101", 256, 12, 256, 224)
    a = c.adapt
    assert (a.method, a.lr, a.batch_size, a.max_epoch, a.K) == ("sfda2", 1e-3, 64, 15, 5)
    assert (a.alpha_1, a.alpha_2, a.lambda_0, a.alpha, a.beta) == (1e-4, 10.0, 5.0, 1.0, 5.0)
    assert (a.lr_F, a.lr_B, a.lr_C, a.momentum, a.weight_decay, a.nesterov) == (
        0.1,
        1.0,
        1.0,
        0.9,
        1e-3,
        True,
    )
    assert c.target_images == 55_388 and c.paper_steps == 15 * 866 == 12_990
    assert PAPER.paper_scale is paper_scale


def test_one_step_at_a_tiny_size_reads_the_visda_format_folder():
    spec = paper_scale("cpu", images=24, micro_batch=4, arch="resnet18", crop=32)
    root = spec.step.data.root
    assert sorted(p.name for p in root.iterdir()) == list(VISDA_CLASSES)
    assert all(f.suffix == ".jpg" for c in VISDA_CLASSES for f in (root / c).iterdir())
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert (row["micro_batch"], row["accumulation"], row["paper_steps"]) == (4, 16, PAPER_SCALE.paper_steps)
    assert row["flops_per_paper_step"] > 0 and math.isfinite(row["seconds_per_paper_step"])
    assert spec.step.adapter.it == 2 and spec.step.adapter.nonfinite == 0  # measured step + FLOP-counted step
    assert any("synthetic VisDA-format JPEGs, 24 images" in n for n in row["notes"])
    assert any("micro-batch 4 x 16" in n for n in row["notes"])
    tmp = spec.step.tmp.name
    del spec, row
    import gc

    gc.collect()
    assert not __import__("os").path.exists(tmp)  # the stand-in folder goes with the step
