import math

from iclr24.lace.real_data import load_official_layouts
from iclr24.lace.reproduce import PAPER
from iclr24.lace.reproduce import PAPER_SCALE
from iclr24.lace.reproduce import paper_scale
from iclr24.paperkit.scale import measure_paper_scale


def test_paper_scale_config_is_the_official_publaynet_run():
    # train.py defaults and the README's PubLayNet hyper-parameters
    c = PAPER_SCALE
    assert (c.dim, c.heads, c.layers, c.ff, c.max_elements) == (1024, 16, 4, 2048, 25)
    assert (c.batch, c.lr, c.grad_clip) == (256, 1e-5, 1.0)
    assert c.steps_per_epoch == math.ceil(315_757 / 256) == 1234
    assert c.paper_steps == c.epochs * 1234
    assert PAPER.paper_scale is paper_scale


def test_paper_scale_runs_one_step_on_a_tiny_publaynet_format_split():
    spec = paper_scale("cpu", layouts=40, micro_batch=4, dim=32, ff=64, heads=4)
    split = spec.step.split
    assert split.name == "train.pt" and split.parent.parent.name == "publaynet-max25"
    bbox, labels, mask = load_official_layouts(split, "publaynet", "train")  # the official file format
    assert bbox.shape == (40, 25, 4) and int(labels.max()) <= 4 and mask.any(1).all()
    assert math.isfinite(spec.step())
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert (row["micro_batch"], row["accumulation"]) == (4, 64)
    assert row["paper_steps"] == PAPER_SCALE.paper_steps
    assert row["flops_per_paper_step"] > 0 and "d=32" in row["config"] and "40 layouts" in row["dataset"]
