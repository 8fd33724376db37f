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


def test_quick_trains_no_laplacian_model_and_records_the_claims_as_skipped(tmp_path, monkeypatch):
    """The three Laplacian claims are gated in --full only (decided on calibration seeds): --quick trains no
    Laplacian model, records each claim as skipped with its calibration numbers, and keeps the quadrature facts."""
    from iclr24.lpn import reproduce
    from iclr24.lpn.data import laplace_posterior_mmse
    from iclr24.paperkit import RunConfig

    assert reproduce.LAPLACIAN_FULL_ONLY == ("soft_threshold", "map_at_half", "prior")
    assert set(reproduce.LAPLACIAN_CALIBRATION) == set(reproduce.LAPLACIAN_CLAIMS)

    def no_training(*a, **k):
        raise AssertionError("quick must not train a Laplacian model")

    monkeypatch.setattr(reproduce, "run_laplacian", no_training)
    monkeypatch.setattr(reproduce, "_digits_claims", lambda *a, **k: [])
    cs = reproduce.run(RunConfig(mode="quick", out=tmp_path, progress=False))
    assert [c.claim for c in cs] == [claim for claim, _ in reproduce.LAPLACIAN_CLAIMS.values()]
    assert all(c.status == "skipped" and "--full only" in c.message for c in cs)
    soft, half, prior = cs
    assert "0.168 / 0.146" in soft.message and "(rule ours <= 0.15)" in soft.message
    assert "0.18 <= baseline" in half.message and "(rule ours <= 0.2)" in prior.message
    assert cs.facts[0].value == laplace_posterior_mmse([0.5])[0] and abs(cs.facts[0].value - 0.241) < 1e-3


def _fake_digits(lpn: float, noisy: float, mlp: float) -> dict:
    return {"psnr": {"lpn": lpn, "noisy": noisy, "l2_mlp": mlp}, "prior_noise": [-2.0, -1.5, -1.0, 0.0, 1.0],
            "prior_sigmas": [0, 0.05, 0.1, 0.2, 0.3], "mix_lambdas": [0, 0.5, 1], "prior_mix": [-2, -1.8, -2],
            "frac_nonconvex": 0.4}  # fmt: skip


def test_quick_gates_the_digits_gain_over_the_noisy_input_in_full_only(tmp_path):
    """DIGITS_FULL_ONLY: quick records the +3 dB denoising claim as skipped with its per-seed numbers; smoke and
    full decide it (paired); the claim against the l2 MLP stays paired and gated in quick."""
    from iclr24.lpn import reproduce
    from iclr24.paperkit import ClaimSet, RunConfig

    assert reproduce.DIGITS_FULL_ONLY == ("denoise_noisy",)
    digs = [_fake_digits(21.9, 20.1, 22.2), _fake_digits(21.8, 20.0, 22.1), _fake_digits(21.7, 20.05, 22.2)]
    for mode in ("quick", "full"):
        config = RunConfig(mode=mode, out=tmp_path / mode, progress=False)
        cs = ClaimSet("lpn", config)
        reproduce._digits_denoising_claims(cs, digs, [0, 1, 2], {}, [], config)
        noisy, mlp, prior = cs.claims
        assert mlp.paired is not None and mlp.verdict == "holds" and prior.verdict == "holds"
        if mode == "quick":
            assert noisy.status == "skipped" and "DIGITS_FULL_ONLY" in noisy.message
            assert "21.9, 21.8, 21.7" in noisy.message and "20.1, 20, 20.05" in noisy.message
            assert "(rule ours >= baseline +3, paired)" in noisy.message
        else:
            assert (
                noisy.paired is not None and noisy.verdict == "fails"
            )  # a 1.8 dB gain against the 3 dB rule


def test_quick_config_is_what_the_readme_says():
    """The quick digits config and seeds stated in the README's prose."""
    from pathlib import Path

    from iclr24.lpn import reproduce

    q = reproduce.DIGITS_QUICK
    assert (q.hidden, q.batch_size, q.pretrain_steps, q.stage_steps, q.num_stages) == (128, 100, 300, 50, 4)
    assert (q.prior_images, q.pnp_images, q.mix_lambdas) == (50, 50, (0.0, 0.5, 1.0))
    # smoke, quick, full: quick and full decide the paired digits claims
    assert reproduce.DIGITS_SEEDS == (1, 3, 3)
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    assert "width 128, batch 100, 300 l1 + 4 × 50 proximal-matching steps" in readme
    assert "seeds 0, 1 and 2" in readme


def test_paired_seeds_skip_the_first_seed_studies_with_the_same_numbers():
    """run_digits(studies=False), used for the paired seeds after the first, returns the same paired numbers."""
    from iclr24.lpn import reproduce
    from iclr24.lpn.experiments import run_digits
    from iclr24.paperkit import pinned_threads

    cfg = reproduce.DIGITS_SMOKE
    with pinned_threads(1):
        full, lean = run_digits(cfg), run_digits(cfg, studies=False)
    for k in ("psnr", "pnp_psnr", "pnp_mlp_psnr", "pnp_wavelet_psnr", "zero_fill_psnr", "pnp_wavelet_tau"):
        assert full[k] == lean[k], k
    assert "prior_noise" in full and "prior_noise" not in lean and "pnp_tail_step_norms" not in lean
    assert set(reproduce._digits_seconds(lean)) == set(reproduce.PAIRED_KEYS)
