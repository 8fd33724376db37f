from iclr24.fastervit import bench


def test_bench_runs_round_robin_and_ablation(tmp_path):
    results, rows = bench.run_benchmarks(
        quick=True, batch_sizes=(1,), models=["faster_vit_0_224"], out=tmp_path, img_size=64, return_rows=True
    )
    assert len(rows) == 1 and rows[0]["img_per_s"] > 0 and rows[0]["params"] > 0 and rows[0]["macs"] > 0
    assert any("no-HAT" in (r.baseline_name or "") for r in results)
    assert (tmp_path / "bench.json").exists() and (tmp_path / "throughput.png").exists()
    assert "faster_vit_0_224" in bench.throughput_table(rows)
