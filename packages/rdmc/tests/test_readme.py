from pathlib import Path

import pytest

from iclr24.paperkit.testing import run_readme_blocks


@pytest.mark.slow  # the quickstart as written: 500 samples with rdMC and with 4000 ULA steps
def test_readme_quickstart_runs(tmp_path):
    ns = run_readme_blocks(Path(__file__).parents[1] / "README.md", cwd=tmp_path)
    assert ns["x"].shape == (ns["n"], 2) and ns["info"].logp_calls_per_sample == 4000
    assert ns["s"].shape == (5, 2)
