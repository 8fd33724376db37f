import pytest

from iclr24.paperkit import bench_table, benchmark


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
    r = benchmark(lambda: [0] * 100_000, repeats=2, warmup=0, memory=True)
    assert r.speedup is None and r.peak_mem_bytes >= 100_000 * 8
    assert r.to_dict()["baseline_name"] is None


def test_benchmark_rejects_bad_arguments():
    with pytest.raises(ValueError):
        benchmark(lambda: None, repeats=0)
    with pytest.raises(ValueError):
        benchmark(lambda: None, baseline=3)
