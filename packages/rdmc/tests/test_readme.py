from pathlib import Path

import pytest

from iclr24.paperkit.runner.testing import run_readme_blocks


@pytest.mark.slow  # the quickstart as written: 500 samples with rdMC and with 4000 ULA steps
def test_readme_quickstart_runs(tmp_path):
    res = run_readme_blocks(
        Path(__file__).parents[1] / "README.md",
        cwd=tmp_path,
        values={
            0: {"x": "list(x.shape)", "n": "n", "calls": "info.logp_calls_per_sample"},
            1: {"s": "list(s.shape)"},
            2: {"t": "steps", "acc": "yinfo.extras['acceptance_rate']"},
        },
    )
    assert res["x"] == [res["n"], 2] and res["calls"] == 4000
    assert res["s"] == [5, 2]  # "Your own target" runs alone (its own imports)
    assert len(res["t"]) == 20 and res["t"][-1] == 0.0 and 0.5 < res["acc"] <= 1  # the logging block
    assert (tmp_path / "runs" / "rdmc-log" / "metrics.jsonl").is_file()
