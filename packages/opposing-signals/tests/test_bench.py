from iclr24.opposing_signals.bench import run_benchmarks
from iclr24.paperkit.bench import BenchReport


def test_bench_smoke():
    rep = run_benchmarks("smoke")
    assert isinstance(rep, BenchReport) and len(rep.results) == 2
    for r in rep.results:
        assert r.median_s > 0 and r.baseline_median_s > 0
    assert any("tracking overhead" in n for n in rep.notes)
    assert any("1 vs 2 threads" in n for n in rep.notes)
