import re
from pathlib import Path

from iclr24.paperkit.runner.testing import run_readme_blocks

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_quickstart_runs_and_prints_what_it_says(tmp_path):
    res = run_readme_blocks(README, cwd=tmp_path, values={0: {"violation": "fix.info.max_violation"}})
    shown = re.search(r"prints\n\n```\n(.*?)```", README.read_text(), re.S).group(1)
    for line in shown.strip().splitlines():
        assert line.strip() in res["__stdout__"]
    assert res["violation"] < 1e-8  # the Correction record of the quickstart


def test_readme_names_no_private_document_and_keeps_the_run_path_true():
    text = README.read_text()
    assert "the spec" not in text.lower() and "the issue" not in text.lower()
    assert "results/maxent-moco/run/run.json" in text
