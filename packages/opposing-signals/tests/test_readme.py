from pathlib import Path

import pytest

from iclr24.paperkit.testing import run_readme_blocks

README = Path(__file__).parents[1] / "README.md"


@pytest.mark.slow  # trains the quickstart MLP for 300 full-batch steps
def test_readme_quickstart(tmp_path):
    ns = run_readme_blocks(README, cwd=tmp_path)
    best = ns["groups"].best
    assert best is not None and best.corr < 0
    assert len(ns["history"].loss) == 301
    assert ns["report"].threshold == pytest.approx(2 / 0.3)
    assert "corr" in ns["__stdout__"]


def test_readme_has_the_sections_and_no_placeholders():
    text = README.read_text()
    for heading in (
        "## CLI",
        "## Reproduction",
        "## Paper -> code",
        "## Differences from the official code",
        "## Using your own data",
        "## Scaling out",
        "## Citation",
    ):
        assert heading in text, heading
    for placeholder in ("TBD", "(in progress)", "QUICK_TABLE", "FULL_MNIST"):
        assert placeholder not in text, placeholder
