from iclr24.fastervit import bench
from iclr24.paperkit import BenchReport


def test_bench_runs_round_robin_and_ablation(tmp_path):
    results, rows, _ = bench.measure(
        batch_sizes=(1,), models=["faster_vit_0_224"], img_size=64, repeats=2, warmup=1, out=tmp_path
    )
    assert len(rows) == 1 and rows[0]["img_per_s"] > 0 and rows[0]["params"] > 0 and rows[0]["macs"] > 0
    assert any("no-HAT" in (r.baseline_name or "") for r in results)
    assert (tmp_path / "bench_rows.json").exists() and (tmp_path / "throughput.png").exists()
    assert "faster_vit_0_224" in bench.throughput_table(rows)


def test_run_benchmarks_smoke_returns_a_report():
    rep = bench.run_benchmarks("smoke")
    assert isinstance(rep, BenchReport) and rep.notes
    assert any("no-HAT" in (r.baseline_name or "") for r in rep.results)
    assert any(r.name == "faster_vit_0_224 bs1, round-robin" and r.median_s > 0 for r in rep.results)
