"""Issue 48: the paper's ImageNet configuration runs one step at a tiny size, on an ImageNet-format JPEG folder."""

import pytest

from iclr24.paperkit.data.standins import write_imagenet_folder
from iclr24.srigl.paper_scale import PAPER_SCALE
from iclr24.srigl.reproduce import PAPER


def test_paper_scale_config_is_the_official_imagenet_run():
    t = PAPER_SCALE.train
    assert t.model == "timm:resnet50" and PAPER_SCALE.img_size == 224
    assert (t.batch_size, t.lr, t.momentum, t.weight_decay) == (512, 0.2, 0.9, 1e-4)
    assert (t.scheduler, t.warmup_epochs, t.milestones, t.gamma, t.epochs) == (
        "step",
        5,
        (30, 70, 90),
        0.1,
        100,
    )
    assert (t.label_smoothing, t.sparsity, t.distribution, t.delta_t) == (0.1, 0.9, "erk", 800)
    assert (t.alpha, t.t_end_fraction, t.gamma_sal) == (0.3, 0.75, 0.3)
    assert PAPER_SCALE.paper_steps == 100 * 2503  # ceil(1,281,167 / 512) steps per epoch
    assert PAPER.paper_scale is not None


def test_imagenet_folder_layout(tmp_path):
    from PIL import Image

    root = write_imagenet_folder(tmp_path, classes=2, per_class=2, size=(40, 30))
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.JPEG"))
    assert files == [f"train/n{c:08d}/n{c:08d}_{k}.JPEG" for c in range(2) for k in range(2)]
    with Image.open(root / files[0]) as im:
        assert im.format == "JPEG" and im.size == (40, 30) and im.mode == "RGB"


@pytest.mark.slow
def test_paper_scale_runs_one_tiny_step():
    from iclr24.paperkit.scale import measure_paper_scale

    spec = PAPER.paper_scale("cpu", classes=2, per_class=2, micro_batch=2, img_size=32, image_px=(40, 30))
    assert (spec.micro_batch, spec.accumulation, spec.paper_steps) == (2, 256, PAPER_SCALE.paper_steps)
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert row["micro_batch"] == 2 and row["accumulation"] == 256 and row["paper_steps"] == 250_300
    assert row["seconds_per_micro_step"] > 0 and row["flops_per_paper_step"] > 0
    with pytest.raises(ValueError, match="must divide"):
        PAPER.paper_scale("cpu", micro_batch=3)
