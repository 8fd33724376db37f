import json

import torch

from iclr24.paperkit.testing import check_paper_smoke
from iclr24.srigl.data import Split
from iclr24.srigl.reproduce import FULL, MNIST_ROWS, PAPER, QUICK, MnistConfig, run_mnist
from iclr24.srigl.train import TrainConfig


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert len(cs) == 8 and all(c.paper == "srigl" for c in cs)
    assert [c.status for c in cs].count("skipped") == 2  # the 94% floor (full only) and MNIST (full only)
    assert all(c.verdict == "smoke" for c in cs if c.status != "skipped")
    assert [f.name for f in cs.facts] == ["constant fan-in k of the timed condensed layer"]
    assert cs.facts[0].value == 38  # floor(floor(96 * 384 * 0.1) / 96) at S = 0.9
    for name in ("accuracy.png", "speedup.png", "accuracy.json", "speed.json"):
        assert (tmp_path / name).stat().st_size > 0
    speed = json.loads((tmp_path / "speed.json").read_text())
    both = [c for c in cs if "faster than" in c.claim]
    assert len(both) == 2 and all(speed["variant"] in c.claim for c in both)


def test_speed_claim_variant_and_threads_are_fixed_in_the_config():
    # both ratios come from one variant at one thread count, chosen before the run (no max over variants)
    for cfg in (QUICK, FULL):
        assert cfg.speed.variant == "fused_avx2_int16" and cfg.speed.threads == 1
    assert FULL.speed.compiled_dense and FULL.speed.compile_mode == "max-autotune"
    assert QUICK.srigl_margin_pp == FULL.srigl_margin_pp == 1.5
    assert not QUICK.gate_floor and FULL.gate_floor and FULL.mnist is not None and QUICK.mnist is None


def test_mnist_rows_run_on_tiny_images():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 1, 28, 28, generator=g)
    y = torch.arange(64) % 10
    x[y == 3, :, :8] += 2.0
    data = Split(x, y, x[:20], y[:20], 10, "tiny")
    cfg = MnistConfig(
        sparsities=(0.9,),
        n_seeds=1,
        train=TrainConfig(model="cnn", distribution="erk", epochs=1, batch_size=16, delta_t=2),
    )
    res = run_mnist(cfg, data=data)
    assert set(res) == {lab for lab, _, _ in MNIST_ROWS} and len(res) == 5
    assert all(all(v["invariants"]) for lab in res for v in res[lab].values())
