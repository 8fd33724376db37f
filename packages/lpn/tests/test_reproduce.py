import pytest

from iclr24.lpn.reproduce import PAPER
from iclr24.paperkit.testing import check_paper_smoke


@pytest.mark.slow
def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert all(c.paper == "lpn" for c in cs)
    assert len(cs) == 11 and all(c.verdict == "smoke" for c in cs)
    assert (tmp_path / "laplacian.png").is_file() and (tmp_path / "digits.png").is_file()
    assert all(c.artifacts for c in cs)
    assert [f.name for f in cs.facts] == [
        "exact MMSE denoiser E[x | y = 0.5]",
        "exact posterior median at y = 0.5",
    ]
    assert all(c.rule_value is not None for c in cs)
    # each claim's seconds are its own (training it uses + its evaluation), not one block's time for all
    secs = [c.seconds for c in cs]
    assert all(s > 0 for s in secs) and len(set(secs)) >= 5
    pnp = [c for c in cs if "PnP-PGD" in c.claim]
    assert len(pnp) == 4
    zero, mlp, wav, conv = pnp
    assert "zero filling" in zero.claim and "unconstrained" in mlp.claim and "converge" in conv.claim
    # one run gates PSNR and convergence: the same curve, the same iterate, and the MLP's PnP costs more time
    assert zero.ours == mlp.ours == wav.ours and "wavelet" in wav.claim
    assert str(wav.details["wavelet_tau"]) in wav.details["wavelet_calibration_psnr_train"]
    assert zero.details["step_norms"] == conv.details["step_norms"]
    assert conv.ours == conv.details["step_norms"][conv.details["gated_iteration"] - 1]
    assert zero.details["clip"] is False and zero.details["step"] == 0.5
    assert mlp.seconds > zero.seconds
