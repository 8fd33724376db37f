import pytest

from iclr24.lpn.reproduce import PAPER
from iclr24.paperkit.runner.testing import check_paper_smoke


@pytest.mark.slow
def test_smoke_claims_run_end_to_end(tmp_path):
    from iclr24.paperkit.data.folder import is_present

    cs = check_paper_smoke(PAPER, tmp_path)
    assert all(c.paper == "lpn" for c in cs)
    ids = [c.details.get("spec", {}).get("id") for c in cs]
    digits = ["dig_denoise_mlp", "dig_prior_noise", "dig_pnp_zero_fill", "dig_pnp_mlp", "dig_pnp_wavelet",
              "dig_converge"]  # fmt: skip
    mnist = ["mn_denoise_noisy", "mn_denoise_conv", "mn_pnp_inpaint", "mn_pnp_inpaint_official", "mn_pnp_deblur",
             "mn_pnp_deblur_official"]  # fmt: skip
    assert ids[:6] == digits and all(c.verdict == "smoke" for c in cs.claims[:6])
    if is_present("mnist"):  # the shipped checkpoints, evaluated on a few validation images
        assert ids[6:] == mnist and all(c.verdict == "smoke" for c in cs)
        assert all("`lpn train --arch conv28" in c.details["evaluated_on"][0]["lpn"] for c in cs.claims[6:])
        assert (tmp_path / "mnist.png").is_file()
    assert (tmp_path / "digits.png").is_file()
    assert [f.name for f in cs.facts] == [
        "exact MMSE denoiser E[x | y = 0.5]",
        "exact posterior median at y = 0.5",
        "digits: share of convex mixes with R(lambda=.5) > (R(0) + R(1)) / 2 (reported, not gated)",
    ]
    # each digits claim's seconds are its own (training it uses + its evaluation), not one block's time for all
    secs = [c.seconds for c in cs.claims[:6]]
    assert all(s > 0 for s in secs) and len(set(secs)) >= 4
    zero, mlp, wav, conv = cs.claims[2:6]
    # one run gates PSNR and convergence: the same curve, the same iterate, and the MLP's PnP costs more time
    assert zero.ours == mlp.ours == wav.ours
    assert str(wav.details["wavelet_tau"]) in wav.details["wavelet_calibration_psnr_train"]
    assert zero.details["step_norms"] == conv.details["step_norms"]
    # the PSNR at every iteration; a run that reaches an exact fixed point (step norm 0) stops there
    norms = conv.details["step_norms"]
    assert (
        conv.details["gated_iteration"] == 20
        and len(conv.details["psnr_along_iterations"]) == len(norms) <= 20
    )
    assert conv.ours == norms[min(20, len(norms)) - 1] and (len(norms) == 20 or norms[-1] == 0.0)
    assert zero.details["clip"] is False and zero.details["step"] == 0.5
    assert zero.details["official_setting"] == {"step": 2.0, "clip": [0.0, 1.0], "iterations": 20}
    assert mlp.seconds > zero.seconds
    paired = [c for c in cs.claims[:6] if c.paired is not None]
    assert len(paired) == 4 and all(c.paired["seeds"] == [0] for c in paired) and conv.paired is None


def test_quick_trains_no_laplacian_model_and_records_no_laplacian_claim(tmp_path, monkeypatch):
    """The three Laplacian rows are --full only (the claims table's modes, LAPLACIAN_CALIBRATION says why): --quick
    trains no Laplacian model, records none of them, and keeps the quadrature facts."""
    from iclr24.lpn import reproduce
    from iclr24.lpn.data import laplace_posterior_mmse
    from iclr24.paperkit import RunConfig

    assert all(reproduce.ROW[i].modes == ("full",) for i in ("lap_soft", "lap_map_half", "lap_prior"))
    assert "0.168 / 0.146" in reproduce.LAPLACIAN_CALIBRATION["soft_threshold"]

    def no_training(*a, **k):
        raise AssertionError("quick must not train a Laplacian model")

    monkeypatch.setattr(reproduce, "run_laplacian", no_training)
    monkeypatch.setattr(reproduce, "_digits_claims", lambda *a, **k: [])
    monkeypatch.setattr(reproduce, "mnist_claims", lambda *a, **k: None)
    cs = reproduce.run(RunConfig(mode="quick", out=tmp_path, progress=False))
    assert cs.claims == []
    assert cs.facts[0].value == laplace_posterior_mmse([0.5])[0] and abs(cs.facts[0].value - 0.241) < 1e-3


def _fake_digits(lpn: float, noisy: float, mlp: float) -> dict:
    return {"psnr": {"lpn": lpn, "noisy": noisy, "l2_mlp": mlp}, "prior_noise": [-2.0, -1.5, -1.0, 0.0, 1.0],
            "prior_sigmas": [0, 0.05, 0.1, 0.2, 0.3], "mix_lambdas": [0, 0.5, 1], "prior_mix": [-2, -1.8, -2],
            "frac_nonconvex": 0.4}  # fmt: skip


def test_the_digits_gain_over_the_noisy_input_is_a_full_row(tmp_path):
    """dig_denoise_noisy is --full only (no config within quick's minute shows it): quick does not record it; full
    decides it (paired); the claim against the l2 MLP is paired and gated in both."""
    from iclr24.lpn import reproduce
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig

    assert reproduce.ROW["dig_denoise_noisy"].modes == ("full",)
    digs = [_fake_digits(21.9, 20.1, 22.2), _fake_digits(21.8, 20.0, 22.1), _fake_digits(21.7, 20.05, 22.2)]
    for mode in ("quick", "full"):
        config = RunConfig(mode=mode, out=tmp_path / mode, progress=False)
        cs = ClaimSet("lpn", config)
        keys = reproduce._digits_denoising_claims(cs, digs, [0, 1, 2], {}, [], config)
        assert len(keys) == len(cs.claims)
        if mode == "quick":
            mlp, prior = cs.claims
        else:
            noisy, mlp, prior = cs.claims
            assert (
                noisy.paired is not None and noisy.verdict == "fails"
            )  # a 1.8 dB gain against the 3 dB rule
        assert mlp.paired is not None and mlp.verdict == "holds" and prior.verdict == "holds"


def test_the_convergence_gates_follow_their_calibration():
    """Each convergence claim is gated at the iteration its calibration runs fixed: the latest iteration from which
    the step norm stayed below 1e-4, times 1.25, rounded up to 50; calibration seeds are not evaluated seeds."""
    from iclr24.lpn import claims_table as t

    for mode in ("quick", "full"):
        cal = t.DIGITS_CONVERGE_CROSSINGS[mode]
        assert not set(cal) & {0, 1, 2}
        assert t.DIGITS_CONVERGE_ITERS[mode] == t.convergence_gate(list(cal.values()))
    assert not set(t.MNIST_CONVERGE_CROSSINGS) & set(t.MNIST_SEEDS)
    assert t.MNIST_CONVERGE_ITERS["full"] == t.convergence_gate(list(t.MNIST_CONVERGE_CROSSINGS.values()))
    assert t.convergence_gate([498, 400]) == 650 and t.convergence_gate([40]) == 50


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


def test_quick_runs_the_mnist_pnp_rows_as_full_does():
    """Quick's MNIST PnP rows are full's evaluation (20 images per checkpoint pair, the same iterations), so both
    modes decide the two MNIST headlines on the same numbers; quick skips only the prior study and the long run."""
    from dataclasses import fields

    from iclr24.lpn.mnist_claims import MNIST_FULL
    from iclr24.lpn.mnist_claims import MNIST_QUICK

    pnp = [f.name for f in fields(MNIST_QUICK) if f.name.startswith(("pnp", "official", "inpaint", "deblur"))]
    assert "pnp_images" in pnp and MNIST_QUICK.pnp_images == 20
    assert {k: getattr(MNIST_QUICK, k) for k in pnp} == {k: getattr(MNIST_FULL, k) for k in pnp}
    assert (MNIST_QUICK.hidden, MNIST_QUICK.baseline_hidden, MNIST_QUICK.n_test) == (64, 32, 200)
