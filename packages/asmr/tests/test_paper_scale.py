import math

from PIL import Image

from iclr24.asmr.reproduce import PAPER
from iclr24.asmr.reproduce import PAPER_SCALE
from iclr24.asmr.reproduce import paper_scale
from iclr24.paperkit.scale import measure_paper_scale


def test_paper_scale_config_is_the_official_kodak_run():
    # config/model_config/asmr.yaml NET_IMG, config/train_image.yaml, scripts/train_kodak.sh
    c = PAPER_SCALE
    assert (c.height, c.width, c.channels) == (512, 768, 3)
    assert c.bases == ((4, 4, 4, 8), (4, 4, 6, 8)) and c.hidden == 256 and c.omega0 == 30.0
    assert math.prod(c.bases[0]) == c.height and math.prod(c.bases[1]) == c.width
    assert (c.lr, c.lr_min, c.iterations, c.modulator) == (1e-4, 1e-5, 10_000, "linear")
    assert c.paper_steps == 24 * 3 * 10_000
    assert PAPER.paper_scale is paper_scale


def test_paper_scale_runs_one_step_on_a_tiny_kodak_format_folder():
    spec = paper_scale("cpu", height=8, width=12, bases=((2, 4), (3, 4)), hidden=8, images=3)
    folder = spec.step.folder
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["kodim01.png", "kodim02.png", "kodim03.png"]
    with Image.open(folder / "kodim01.png") as im:
        assert im.format == "PNG" and im.mode == "RGB" and im.size == (12, 8)  # (width, height)
    assert spec.step.signal_shape == (8, 12, 3)
    losses = [spec.step() for _ in range(3)]
    assert all(math.isfinite(v) for v in losses) and losses[-1] < losses[0]  # it trains
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert row["micro_batch"] == 8 * 12 and row["accumulation"] == 1
    assert row["paper_steps"] == PAPER_SCALE.paper_steps
    assert row["flops_per_paper_step"] > 0 and row["peak_rss_bytes"] > 0
    assert "Kodak" in row["dataset"] and "L=2, h=8" in row["config"]
