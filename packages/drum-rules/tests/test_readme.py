from pathlib import Path

import pytest

from iclr24.paperkit.runner.testing import run_readme_blocks


@pytest.mark.slow  # trains a small MMDRUM for 3 epochs and checks it on 30 datasets
def test_readme_quickstart_runs(tmp_path):
    res = run_readme_blocks(
        Path(__file__).parents[1] / "README.md", cwd=tmp_path, values={0: {"faithful": "report.faithful"}}
    )
    assert res["faithful"] is True  # the faithful MM program reproduces the model on all 30 datasets
    assert (tmp_path / "rules.dl").exists() and (tmp_path / "rules.json").exists()
    assert "score" in res["__stdout__"]
