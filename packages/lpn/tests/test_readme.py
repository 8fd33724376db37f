from pathlib import Path

from iclr24.paperkit.runner.testing import run_readme_blocks


def test_readme_quickstart_runs(tmp_path):
    out = run_readme_blocks(Path(__file__).parents[1] / "README.md", cwd=tmp_path)["__stdout__"]
    assert "PSNR noisy" in out and "prior at 5 test digits" in out and "PnP-PGD" in out
    assert "loaded back: same output True" in out  # train -> save_pretrained -> from_pretrained -> evaluate
    files = sorted(p.name for p in (tmp_path / "runs" / "lpn-model").iterdir())
    assert files == ["config.json", "model.safetensors", "provenance.json"]
    assert (tmp_path / "runs" / "lpn-logs" / "metrics.jsonl").is_file()
