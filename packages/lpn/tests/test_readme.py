from pathlib import Path

from iclr24.paperkit.testing import run_readme_blocks


def test_readme_quickstart_runs(tmp_path):
    out = run_readme_blocks(Path(__file__).parents[1] / "README.md", cwd=tmp_path)["__stdout__"]
    assert "PSNR noisy" in out and "prior at 5 test digits" in out and "PnP-PGD" in out
