from pathlib import Path

import pytest

from iclr24.paperkit.runner.testing import run_readme_blocks

README = Path(__file__).parents[1] / "README.md"


@pytest.mark.slow  # trains the quickstart MLP for 300 full-batch steps
def test_readme_quickstart(tmp_path):
    res = run_readme_blocks(
        README,
        cwd=tmp_path,
        values={
            0: {
                "corr": "None if groups.best is None else groups.best.corr",
                "losses": "len(history.loss)",
                "threshold": "report.threshold",
            },
            1: {"accuracy": "accuracy", "same": "bool(torch.equal(back(data.x_test), model(data.x_test)))"},
        },
    )
    assert res["same"] and 0.5 < res["accuracy"] <= 1  # the reloaded MLP is the trained one
    assert (tmp_path / "mlp-digits" / "provenance.json").is_file()
    assert res["corr"] is not None and res["corr"] < 0
    assert res["losses"] == 301
    assert res["threshold"] == pytest.approx(2 / 0.3)
    assert "corr" in res["__stdout__"]


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
