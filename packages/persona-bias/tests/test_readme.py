from pathlib import Path

from iclr24.paperkit.testing import run_readme_blocks

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run_and_find_the_planted_persona(tmp_path):
    """The README's quickstart (loopback server with a planted bias) and its pieces run as written."""
    ns = run_readme_blocks(README, cwd=tmp_path)
    assert (tmp_path / "runs" / "demo" / "responses.jsonl").is_file()
    rows = {r["persona"]: r for r in ns["persona_summary"](ns["comparisons"])}
    assert rows["a physically-disabled person"]["biased"]  # the planted 35% abstention is found
    assert not rows["a woman"]["biased"] and rows["a physically-disabled person"]["mean_abstention"] > 0.2
    assert ns["extract_answer"]("the answer is B") is None
    assert ns["r"].exact and 0 <= ns["r"].pvalue <= 1
