import pytest

from iclr24.paperkit import bench_table
from iclr24.paperkit import benchmark


def test_benchmark_interleaves_and_reports_medians():
    calls = []
    r = benchmark(
        lambda: calls.append("a"),
        baseline=lambda: calls.append("b"),
        repeats=4,
        warmup=1,
        name="ours",
        baseline_name="base",
    )
    assert calls[:2] == ["a", "b"]  # warm-up
    assert calls[2:] == ["a", "b", "b", "a", "a", "b", "b", "a"]  # alternating order each repeat
    assert len(r.times_s) == 4 and len(r.baseline_times_s) == 4
    assert r.median_s > 0 and r.speedup == pytest.approx(r.baseline_median_s / r.median_s)
    assert "| ours |" in bench_table([r]) and "base" in str(r)


def test_benchmark_without_baseline_and_memory():
    import numpy as np

    r = benchmark(lambda: np.ones(4 * 2**20), repeats=2, warmup=0, memory=True)  # 32 MiB
    assert r.speedup is None and r.peak_mem_bytes >= 24 * 2**20
    assert r.to_dict()["baseline_name"] is None


def test_benchmark_rejects_bad_arguments():
    with pytest.raises(ValueError):
        benchmark(lambda: None, repeats=0)
    with pytest.raises(ValueError):
        benchmark(lambda: None, baseline=3)


def test_cpu_clock_and_bad_clock():
    r = benchmark(lambda: sum(range(20_000)), repeats=3, warmup=0, clock="cpu")
    assert len(r.times_s) == 3 and all(t >= 0 for t in r.times_s)
    with pytest.raises(ValueError, match="clock"):
        benchmark(lambda: None, clock="sundial")


def test_peak_rss_delta_sees_torch_tensors():
    import torch

    from iclr24.paperkit import peak_rss_delta

    d = peak_rss_delta(lambda: torch.ones(64 * 2**20 // 4).add_(1))  # a 64 MiB tensor
    if d is None:
        pytest.skip("no /proc/self/clear_refs here")
    assert d >= 48 * 2**20


def test_benchmark_many_round_robin():
    from iclr24.paperkit import benchmark_many

    calls = []
    res = benchmark_many({n: (lambda n=n: calls.append(n)) for n in "abc"}, baseline="b", repeats=3, warmup=0)
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert [r.name for r in res] == ["a", "b", "c"] and all(r.baseline_name == "b" for r in res)
    assert res[1].speedup == pytest.approx(1.0)
    with pytest.raises(ValueError, match="baseline"):
        benchmark_many({"a": lambda: None}, baseline="z")
