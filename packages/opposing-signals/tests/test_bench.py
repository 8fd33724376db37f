import pytest

from iclr24.opposing_signals.bench import run_benchmarks
from iclr24.opposing_signals.bench import small_resnet
from iclr24.paperkit.bench import BenchReport


@pytest.mark.slow  # interleaved repeats of three cases, the CIFAR-size one included
def test_bench_smoke():
    rep = run_benchmarks("smoke")
    assert isinstance(rep, BenchReport) and len(rep.results) == 3
    for r in rep.results[:2]:
        assert r.median_s > 0 and r.baseline_median_s > 0
    assert any("tracking overhead" in n for n in rep.notes)
    assert any("1 vs 2 threads" in n for n in rep.notes)
    # the CIFAR-size own-data row (200 images in smoke): time once, and the peak memory where /proc allows
    own = rep.results[2]
    assert "own-data block" in own.name and "3x32x32" in own.name and own.median_s > 0
    assert own.peak_mem_bytes is None or own.peak_mem_bytes < 4 * 2**30
    assert any("peak RSS" in n for n in rep.notes)


def test_small_resnet_maps_cifar_images_to_logits():
    import torch

    out = small_resnet(width=4)(torch.zeros(2, 3, 32, 32))
    assert out.shape == (2, 10)
