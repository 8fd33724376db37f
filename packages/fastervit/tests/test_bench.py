import json

from iclr24.fastervit import bench
from iclr24.fastervit.cli import main


def test_bench_round_robin_table_plot_and_ablation(tmp_path, capsys):
    assert main(["bench", "--smoke", "--out", str(tmp_path), "--quiet"]) == 0  # the CLI end to end
    out = capsys.readouterr().out
    assert "no-HAT" in out and "| model | params (M) | GMACs |" in out
    assert "![throughput]" in (tmp_path / "bench.md").read_text()
    rep = json.loads((tmp_path / "bench.json").read_text())
    res = {r["name"]: r for r in rep["results"]}
    fv = res["faster_vit_0_224 bs1, round-robin"]
    assert fv["baseline_name"] == "convnext_tiny bs1, round-robin" and fv["speedup"] > 0
    assert "convnext_tiny bs1, round-robin" in res
    assert any("no-HAT" in (r["baseline_name"] or "") for r in rep["results"])
    rows = json.loads((tmp_path / "bench_rows.json").read_text())
    assert rows["threads"] == bench.THREADS == 1
    assert all(r["img_per_s"] > 0 and r["params"] > 0 and r["macs"] > 0 for r in rows["rows"])
    table = (tmp_path / "throughput.md").read_text()
    assert "| faster_vit_0_224 |" in table and "bs1 vs convnext_tiny" in table
    assert (tmp_path / "throughput.png").stat().st_size > 0
    assert set(rep["artifacts"]) == {"throughput.md", "throughput.png", "bench_rows.json"}


def test_quick_bench_compares_the_papers_peers_at_batch_1_and_16():
    quick = bench.SETTINGS["quick"]
    assert quick["batch_sizes"] == (1, 16)
    assert set(quick["models"]) == {
        "faster_vit_0_224",
        "faster_vit_1_224",
        "convnext_tiny",
        "swin_tiny_patch4_window7_224",
        "efficientvit_b2",
    }
