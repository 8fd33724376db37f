"""The README's Python quickstart runs as written."""

from pathlib import Path

from iclr24.paperkit.testing import run_readme_blocks


def test_readme_quickstart(tmp_path):
    ns = run_readme_blocks(Path(__file__).parents[1] / "README.md", cwd=tmp_path)
    assert ns["bbox"].shape == (4, 12, 4) and ns["aligned"] >= 0
    assert (tmp_path / "samples.png").stat().st_size > 0
