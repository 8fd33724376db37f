import pytest

from iclr24.lpn.reproduce import PAPER
from iclr24.paperkit import Claim, RunConfig


@pytest.mark.slow
def test_smoke_claims_run_end_to_end(tmp_path):
    claims = PAPER.check(RunConfig(mode="smoke", seed=0, out=tmp_path, progress=False))
    assert claims and all(isinstance(c, Claim) for c in claims)
    assert all(c.paper == "lpn" for c in claims)
    assert len(claims) == 9
    assert (tmp_path / "laplacian.png").is_file() and (tmp_path / "digits.png").is_file()
    assert all(c.artifacts for c in claims)
