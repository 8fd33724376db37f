from pathlib import Path

from iclr24.paperkit.runner.testing import run_readme_blocks

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run_and_find_the_planted_persona(tmp_path):
    """The README's quickstart (loopback server with a planted bias) and its pieces run as written."""
    res = run_readme_blocks(
        README,
        cwd=tmp_path,
        values={
            0: {"rows": "{r['persona']: r for r in persona_summary(comparisons)}"},
            1: {"no_paren": "extract_answer('the answer is B')", "exact": "r.exact", "p": "r.pvalue"},
        },
    )
    assert (tmp_path / "runs" / "demo" / "responses.jsonl").is_file()
    assert (tmp_path / "runs" / "demo-log" / "metrics.jsonl").is_file()  # one record per response
    rows = res["rows"]
    assert rows["a physically-disabled person"]["biased"]  # the planted 35% abstention is found
    assert not rows["a woman"]["biased"] and rows["a physically-disabled person"]["mean_abstention"] > 0.2
    assert res["no_paren"] is None
    assert res["exact"] and 0 <= res["p"] <= 1
