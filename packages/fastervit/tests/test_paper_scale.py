import math

import pytest
from PIL import Image

from iclr24.fastervit.reproduce import PAPER
from iclr24.fastervit.reproduce import PAPER_SCALE
from iclr24.fastervit.reproduce import paper_scale
from iclr24.paperkit.scale import measure_paper_scale


def test_paper_scale_config_is_fastervit0_official_imagenet_run():
    # fastervit/configs/faster_vit_0_224_1k.yaml; the paper's batch 4096 at lr 5e-3
    c = PAPER_SCALE
    assert (c.model, c.img_size, c.classes) == ("faster_vit_0_224", 224, 1000)
    assert (c.batch, c.per_gpu_batch, c.lr, c.min_lr, c.warmup_epochs, c.epochs) == (
        4096,
        128,
        5e-3,
        5e-6,
        20,
        310,
    )
    assert (c.clip_grad, c.workers) == (5.0, 8)
    assert c.steps_per_epoch == 1_281_167 // 4096 == 312 and c.paper_steps == 310 * 312
    assert PAPER.paper_scale is paper_scale


@pytest.mark.slow  # FasterViT-0 forward and backward
def test_paper_scale_runs_one_step_on_a_tiny_imagenet_format_folder():
    spec = paper_scale("cpu", classes=3, per_class=2, micro_batch=2, image_px=(80, 60))
    root = spec.step.root
    assert sorted(p.name for p in (root / "train").iterdir()) == ["n00000000", "n00000001", "n00000002"]
    f = root / "train" / "n00000001" / "n00000001_1.JPEG"
    with Image.open(f) as im:
        assert im.format == "JPEG" and im.mode == "RGB" and im.size == (80, 60)
    assert (root / "val" / "n00000002").is_dir()
    assert math.isfinite(spec.step())
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert (row["micro_batch"], row["accumulation"], row["paper_steps"]) == (2, 2048, 96_720)
    # FasterViT-0 at 224: about 3.3 GFLOPs (multiply-adds) per image forward; forward + backward about 3x
    per_image = row["flops_per_paper_step"] / 4096
    assert 2 * 3.3e9 * 2 < per_image < 2 * 3.3e9 * 4
