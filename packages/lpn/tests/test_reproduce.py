import pytest

from iclr24.lpn.reproduce import PAPER
from iclr24.paperkit.testing import check_paper_smoke


@pytest.mark.slow
def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert all(c.paper == "lpn" for c in cs)
    assert len(cs) == 9 and all(c.verdict == "smoke" for c in cs)
    assert (tmp_path / "laplacian.png").is_file() and (tmp_path / "digits.png").is_file()
    assert all(c.artifacts for c in cs)
    assert [f.name for f in cs.facts] == [
        "exact MMSE denoiser E[x | y = 0.5]",
        "exact posterior median at y = 0.5",
    ]
    assert all(c.rule_value is not None for c in cs)
