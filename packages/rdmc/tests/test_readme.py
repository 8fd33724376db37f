from pathlib import Path

import pytest

from iclr24.paperkit.testing import run_readme_blocks


@pytest.mark.slow  # the quickstart as written: 500 samples with rdMC and with 4000 ULA steps
def test_readme_quickstart_runs(tmp_path):
    res = run_readme_blocks(
        Path(__file__).parents[1] / "README.md",
        cwd=tmp_path,
        values={
            0: {"x": "list(x.shape)", "n": "n", "calls": "info.logp_calls_per_sample"},
            1: {"s": "list(s.shape)"},
        },
    )
    assert res["x"] == [res["n"], 2] and res["calls"] == 4000
    assert res["s"] == [5, 2]  # "Your own target" runs alone (its own imports)
