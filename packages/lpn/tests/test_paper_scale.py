import math

from PIL import Image

from iclr24.lpn.data import load_celeba
from iclr24.lpn.reproduce import PAPER
from iclr24.lpn.reproduce import PAPER_SCALE
from iclr24.lpn.reproduce import paper_scale
from iclr24.paperkit.scale import measure_paper_scale


def test_paper_scale_config_is_the_official_celeba_run():
    # exps/celeba/train.sh and exps/celeba/configs/model.json
    c = PAPER_SCALE
    assert (c.image_size, c.channels, c.hidden, c.beta, c.alpha) == (128, 3, 256, 100.0, 1e-6)
    assert (c.batch, c.workers, c.num_steps, c.num_steps_pretrain, c.num_stages) == (64, 8, 40_000, 20_000, 4)
    assert (c.pretrain_lr, c.lr, c.noise_levels) == (1e-3, 1e-4, (0.05, 0.1))
    assert c.paper_steps == 80_000 and math.isclose(c.gamma_min, 0.08 * math.sqrt(128 * 128 * 3))
    assert PAPER.paper_scale is paper_scale


def test_paper_scale_runs_one_step_on_a_tiny_celeba_format_folder():
    spec = paper_scale("cpu", images=6, micro_batch=2, hidden=4, image_size=16)
    root = spec.step.root
    files = sorted((root / "celeba" / "img_align_celeba").iterdir())
    assert [f.name for f in files][:2] == ["000001.jpg", "000002.jpg"] and len(files) == 6
    with Image.open(files[0]) as im:
        assert im.format == "JPEG" and im.size == (178, 218)
    assert load_celeba(root, "train", 16).shape == (6, 3, 16, 16)  # the package's own reader agrees
    assert math.isfinite(spec.step())
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert (row["micro_batch"], row["accumulation"], row["paper_steps"]) == (2, 32, 80_000)
    assert row["flops_per_paper_step"] > 0 and "16x16" in row["config"]
    # FLOPs scale with the crop: 4x the pixels, about 4x the count (the convolutions dominate)
    big = paper_scale("cpu", images=2, micro_batch=2, hidden=4, image_size=32)
    assert 3 < big.flops_per_micro_step / spec.flops_per_micro_step < 5
