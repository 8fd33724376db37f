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
    # the PSNR comparisons are paired over the mode's digits seeds (smoke: one), the rest read on the first seed
    paired = [c for c in cs if c.paired is not None]
    assert len(paired) == 5 and {c.paired["margin"] for c in paired} == {-3.0, 1.0, 0.0}
    assert all(c.paired["seeds"] == [0] for c in paired) and conv.paired is None


@pytest.mark.slow  # trains the three smoke-size Laplacian models once (~20 s on the loaded 2-core machine)
def test_quick_records_the_full_only_laplacian_claims_as_skipped_with_their_numbers(tmp_path, monkeypatch):
    """Two Laplacian claims are gated in --full only (decided on calibration seeds); quick keeps their numbers."""
    from dataclasses import replace

    from iclr24.lpn import reproduce
    from iclr24.lpn.experiments import run_laplacian
    from iclr24.paperkit import ClaimSet, RunConfig, torch_threads

    assert reproduce.LAPLACIAN_FULL_ONLY == ("soft_threshold", "map_at_half")
    assert reproduce.DIGITS_SEEDS == (1, 3, 1)  # smoke, quick, full: quick decides the paired digits claims
    with torch_threads(1):
        lap = run_laplacian(replace(reproduce.LAPLACIAN_SMOKE, prior_max_iter=3))  # read by both modes below
    monkeypatch.setattr(reproduce, "run_laplacian", lambda cfg, show_progress=False: lap)
    modes = {}
    for mode in ("quick", "full"):
        config = RunConfig(mode=mode, out=tmp_path / mode, progress=False)
        modes[mode] = ClaimSet("lpn", config)
        assert len(reproduce._laplacian_claims(modes[mode], reproduce.LAPLACIAN_SMOKE, config)) == 3
    soft, half, prior = modes["quick"].claims
    assert soft.status == half.status == "skipped" and "--full only" in soft.message
    assert (
        "ours " in soft.message
        and "(rule ours <= 0.15)" in soft.message
        and "0.18 <= baseline" in half.message
    )
    assert prior.status in ("holds", "fails") and prior.rule == "ours <= 0.2"  # gated in quick
    assert all(c.status in ("holds", "fails") for c in modes["full"].claims)
