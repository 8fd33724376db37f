"""The paper's claims, checked at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

- 1-D Laplacian (Sec. 5.1): proximal matching recovers the MAP denoiser (soft-thresholding) and the prior |x|;
  l2 training gives the MMSE denoiser instead.
- sklearn digits (the MNIST study of Sec. 5.2 at 8x8): denoising PSNR against the noisy input and an unconstrained
  l2-trained MLP of similar size; the learned prior grows with the noise level and is nonconvex along convex mixes;
  PnP-PGD with the LPN on random inpainting beats zero filling, is compared with PnP-PGD using the unconstrained
  MLP, and its iterates converge: all three on one PnP run (the setting the convergence theory covers).
- real MNIST with the paper's ConvLPN28 (``--full`` only): denoising PSNR/SSIM against the noisy input and an
  unconstrained conv denoiser, the prior under noise, blur and convex mixes, and PnP-PGD inpainting / deblurring
  against PnP with that conv denoiser, with convergence on the same inpainting run.

Each claim's seconds are measured: the training of the models it uses plus its own evaluation.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import torch

from iclr24.paperkit import ClaimSet, Paper, RunConfig, seed_everything

from .data import laplace_posterior_median, laplace_posterior_mmse
from .experiments import DigitsConfig, LaplacianConfig, MnistConfig, run_digits, run_laplacian, run_mnist
from .paper_scale import PAPER_SCALE, paper_scale

__all__ = [
    "PAPER",
    "run",
    "LAPLACIAN_SMOKE",
    "LAPLACIAN_QUICK",
    "LAPLACIAN_FULL",
    "DIGITS_SMOKE",
    "DIGITS_QUICK",
    "DIGITS_FULL",
    "MNIST_FULL",
    "PAPER_SCALE",
    "paper_scale",
]

# The official run is LaplacianConfig() (46k steps for the PM model at batch 2000); CPU scale shortens the
# segments of the same schedule.
LAPLACIAN_SMOKE = LaplacianConfig(batch_size=100, pretrain_scale=0.002, pm_scale=0.002, prior_max_iter=30)
LAPLACIAN_QUICK = LaplacianConfig(batch_size=500, pretrain_scale=0.05, pm_scale=0.1)
# The Laplacian claims are gated in --full only, and --quick trains no Laplacian model (it records the claims as
# skipped, with these calibration numbers). LAPLACIAN_QUICK, the smallest config that came near the rules, costs
# ~115 CPU s alone (seed 101, 1 thread, measured 2026-12-02), about twice quick's whole budget. On calibration seeds
# 101 and 102 (disjoint from the evaluated seed 0) it gave soft-threshold errors 0.168 / 0.146 (rule <= 0.15) and
# |f_PM(0.5)| 0.107 / 0.089 (rule < 0.1), and with twice the proximal-matching steps 0.139 / 0.161 and
# 0.081 / 0.103: each held on one of the two seeds in either config. The prior error held on those four runs
# (0.159, 0.138, 0.119, 0.170; rule <= 0.2) but came out at 0.2003 on seed 0 (the recorded quick run of
# 2026-12-02). --full (batch 2000, 10k l1 + 12k PM) gates all three.
LAPLACIAN_FULL_ONLY = ("soft_threshold", "map_at_half", "prior")
LAPLACIAN_CALIBRATION = {
    "soft_threshold": "at LAPLACIAN_QUICK (~115 CPU s, twice quick's budget) the soft-threshold error was 0.168 / "
    "0.146 on calibration seeds 101 / 102",
    "map_at_half": "at LAPLACIAN_QUICK (~115 CPU s, twice quick's budget) |f_PM(0.5)| was 0.107 / 0.089 on "
    "calibration seeds 101 / 102, while f_l2(0.5) was near the MMSE 0.241",
    "prior": "at LAPLACIAN_QUICK (~115 CPU s, twice quick's budget) the prior error was 0.159 / 0.138 on "
    "calibration seeds 101 / 102 (0.2003 on seed 0)",
}
LAPLACIAN_FULL = LaplacianConfig(batch_size=2000, pretrain_scale=0.5, pm_scale=0.5)
# The spec's CPU-scale digits run is DigitsConfig() (3k l1 + 4 x 1k PM steps).
DIGITS_SMOKE = DigitsConfig(
    hidden=32,
    pretrain_steps=40,
    stage_steps=10,
    n_test=40,
    prior_images=8,
    pnp_images=8,
    pnp_iters=10,
    converge_iters_long=20,
)
# Quick digits: width 128 (not 256), batch 100 (not 200), 300 l1 + 4 x 50 PM steps (the l1 : PM split of the
# schedule kept near 1 : 1), the prior study on 50 images with mixes at lambda 0, .5, 1 (what the nonconvexity
# claim reads). Calibrated on seeds 101, 102, 103 (disjoint from the evaluated seeds 0, 1, 2; 1 thread, 2026-12-02):
# - 300 + 4 x 50 steps: LPN vs l2 MLP -0.31 / -0.32 / -0.43 dB (margin 1 dB); smallest prior increase 0.079 /
#   0.036 / 0.057 (rule > 0, 50 images); PnP - zero fill +5.9 / +6.1 / +5.1 dB (margin 3); PnP - wavelet +3.2 /
#   +3.9 / +2.6 dB; PnP - PnP with the MLP -1.5 / +0.4 / +0.1 dB (margin 1); nonconvex share 0.04 / 0.24 / 0.16
#   (rule >= 0.8); step norm at iteration 100 0.017 / 0.008 / 0.029 (rule < 1e-4). ~12 CPU s of training per seed.
# - 200 + 4 x 50 steps (width 64 or 128, 30 prior images): the prior increase was negative on seed 102 (-0.059 /
#   -0.05) and width 64 fell 1.15 dB behind the MLP: too small.
# - the denoising gain over the noisy input was 1.99 / 1.78 / 1.75 dB at 300 + 4 x 50 (2.2 dB at 400 + 4 x 100 on
#   seed 101; 3.27 dB mean at the former quick config, 2000 steps at width 256, 3x the CPU) against the rule's
#   3 dB: no config within a minute shows it, so that claim is gated in --full only (DIGITS_FULL_ONLY) and quick
#   records its numbers. --full's one digits seed leaves it inconclusive; the MNIST block of --full gates the same
#   effect with ConvLPN28 (unpaired, one seed).
DIGITS_QUICK = DigitsConfig(
    hidden=128,
    batch_size=100,
    pretrain_steps=300,
    stage_steps=50,
    prior_images=50,
    mix_lambdas=(0.0, 0.5, 1.0),
    pnp_images=50,
)
DIGITS_FULL_ONLY = ("denoise_noisy",)
DIGITS_FULL = DigitsConfig()
# Seeds of the digits block (smoke, quick, full): its PSNR comparisons are decided over them, paired (95 % t-interval
# of the per-seed slack). At the former quick config (2000 steps at width 256) the PnP slacks spread far more than
# their margins on seeds 0, 101 and 102 (PnP vs zero fill +0.9 / +7.5 / +5.8 dB over the 3 dB margin; PnP vs the
# l2 MLP -4.6 / +0.6 / +0.8 dB over its 1 dB margin, so one seed's verdict flips), so quick runs 3 seeds; the seeds
# after the first skip the studies read on the first seed only (``run_digits(studies=False)``). --full runs 3 seeds
# too (it ran one until 2026-12-02, so its paired claims, and the denoising gain gated in --full only, were
# inconclusive by construction in every full run; the two extra seeds skip the studies: ~2 min here). The
# prior-vs-noise, nonconvexity and convergence claims are read on the first seed.
DIGITS_SEEDS = (1, 3, 3)
# ConvLPN28 on real MNIST, in --full only (CPU scale: hidden 16 instead of the official 64, 900 steps at batch 32
# instead of 40k at batch 200; one training step of the official width takes ~3 s on one CPU thread).
MNIST_FULL = MnistConfig(hidden=16, baseline_hidden=16, batch_size=32, pretrain_steps=500, stage_steps=100)

NAME = "lpn"


def _pyplot():
    from iclr24.paperkit.plots import pyplot

    return pyplot()


def _plot_laplacian(res: dict):
    plt = _pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    g = res["grid"]
    ax[0].plot(g, res["soft"], "k--", label="MAP: soft-threshold")
    for k, lab in (("l2", "LPN, l2 loss"), ("l1", "LPN, l1 loss"), ("pm", "LPN, proximal matching")):
        ax[0].plot(g, res["outputs"][k], label=lab)
    ax[0].set(xlabel="y", ylabel="f(y)", title="learned denoisers (Laplace(1) + N(0,1))")
    ax[0].legend(fontsize=8)
    x = res["prior_x"]
    ax[1].plot(x, np.abs(x), "k--", label="true prior |x|")
    ax[1].plot(x, res["prior_pm"], label="R(x) - R(0), proximal matching")
    ax[1].plot(x, res["prior_l2"], label="R(x) - R(0), l2")
    ax[1].set(xlabel="x", ylabel="R(x) - R(0)", title="recovered prior")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def _plot_digits(res: dict):
    plt = _pyplot()
    ex = res["examples"]
    rows = [
        ("clean", ex["clean"]),
        ("noisy", ex["noisy"]),
        ("LPN", ex["lpn"]),
        ("inpaint in", ex["measured"]),
        ("PnP-PGD", ex["pnp"]),
        ("PnP l2 MLP", ex["pnp_mlp"]),
    ]
    # one mosaic image (9 px per digit: 8 + a grey gap), fast to draw, instead of one axes per digit
    tiles = [
        torch.nn.functional.pad(imgs.reshape(-1, 8, 8).clamp(0, 1), (0, 1, 0, 1), value=0.5)
        for _, imgs in rows
    ]
    mosaic = torch.cat([torch.cat(list(t), dim=1) for t in tiles], dim=0)
    fig = plt.figure(figsize=(10, 8))
    gs = fig.add_gridspec(2, 2, height_ratios=[1.1, 1])
    a = fig.add_subplot(gs[0, :])
    a.imshow(mosaic.numpy(), cmap="gray", vmin=0, vmax=1)
    a.set_yticks([9 * k + 4 for k in range(len(rows))], [name for name, _ in rows], fontsize=8)
    a.set_xticks([])
    a.set_title("digits: denoising (sigma 0.1) and 40 % inpainting by PnP-PGD", fontsize=9)
    a = fig.add_subplot(gs[1, 0])
    curve = res["pnp_step_norms"] + res["pnp_tail_step_norms"]
    a.semilogy(np.maximum(curve, 1e-12), label="LPN (the gated run)")
    a.semilogy(np.maximum(res["pnp_mlp_step_norms"], 1e-12), label="unconstrained l2 MLP")
    a.semilogy(np.maximum(res["step1_clip_step_norms"], 1e-12), ":", label="LPN, step 1, clip [0,1]")
    a.axvline(len(res["pnp_step_norms"]) - 1, color="gray", lw=0.5)
    a.legend(fontsize=7)
    a.set(xlabel="iteration k", ylabel="||x_{k+1} - x_k||", title="PnP-PGD convergence")
    a = fig.add_subplot(gs[1, 1])
    a.plot(res["prior_sigmas"], res["prior_noise"], "o-")
    a.set(xlabel="noise sigma", ylabel="mean R(x)", title="prior vs noise")
    fig.tight_layout()
    return fig


def _laplacian_common(lap: dict, lap_cfg: LaplacianConfig, config: RunConfig) -> dict:
    return {
        "steps": lap["steps"],
        "batch_size": lap_cfg.batch_size,
        "timings": {"train_seconds": lap["train_seconds"]},
        "seed": config.seed,
        "y": lap["probe"],
        "f_at_y": lap["f_at_probe"],
        "mmse_at_y": lap["mmse_at_probe"],
        "median_at_y": lap["median_at_probe"],
    }


LAPLACIAN_CLAIMS = {  # name: (claim, rule)
    "soft_threshold": (
        "1-D Laplacian: the proximal-matching LPN recovers the MAP denoiser (soft-threshold)",
        "ours <= 0.15",
    ),
    "map_at_half": (
        "1-D Laplacian: f_PM(0.5) ~ 0 (MAP) while the l2 model gives the MMSE value ~0.24",
        "ours < 0.1 and 0.18 <= baseline <= 0.30",
    ),
    "prior": ("1-D Laplacian: the recovered prior R(x) - R(0) of the PM model is |x|", "ours <= 0.2"),
}


def _laplacian_claims(claims: ClaimSet, lap_cfg: LaplacianConfig, config: RunConfig) -> list[float]:
    """The three Laplacian claims (smoke, full); returns the seconds each one took (see ``_seconds``)."""
    lap = run_laplacian(lap_cfg, show_progress=config.progress)
    arts = [claims.figure(_plot_laplacian(lap), "laplacian.png")]
    soft = lap["soft"]
    away = np.abs(np.abs(lap["grid"]) - 1.0) > 0.2
    l2_err = float(np.abs(lap["outputs"]["l2"] - soft)[away].max())
    common = _laplacian_common(lap, lap_cfg, config)
    claim, rule = LAPLACIAN_CLAIMS["soft_threshold"]
    claims.add(
        claim=claim,
        metric="max |f_PM(y) - soft(y)| on [-3,3] outside 0.8<=|y|<=1.2",
        ours=lap["pm_soft_max_err"],
        baseline_name="LPN trained with l2 loss",
        baseline=l2_err,
        paper_value=None,  # the paper shows this in a figure, with no number to compare
        rule=rule,
        details=common,
        artifacts=arts,
    )
    f_pm, f_l2 = lap["f_at_probe"]["pm"][0], lap["f_at_probe"]["l2"][0]
    claim, rule = LAPLACIAN_CLAIMS["map_at_half"]
    claims.add(
        claim=claim,
        metric="|f_PM(0.5)| (baseline: f_l2(0.5))",
        ours=abs(f_pm),
        baseline_name="LPN trained with l2 loss",
        baseline=f_l2,
        paper_value=None,  # the paper shows this in a figure, with no number to compare
        rule=rule,
        variables={"mmse_reference": lap["mmse_at_probe"][0]},
        details=common,
        artifacts=arts,
    )
    l2_prior_err = float(np.abs(lap["prior_l2"] - np.abs(lap["prior_x"])).max())
    claim, rule = LAPLACIAN_CLAIMS["prior"]
    claims.add(
        claim=claim,
        metric="max |R_PM(x) - R_PM(0) - |x|| on [-2, 2]",
        ours=lap["prior_max_err"],
        baseline_name="same for the l2-trained LPN",
        baseline=l2_prior_err,
        paper_value=None,  # the paper shows this in a figure, with no number to compare
        rule=rule,
        details={**common, "prior_pm": lap["prior_pm"][::10].tolist(), "x": lap["prior_x"][::10].tolist()},
        artifacts=arts,
    )
    _laplacian_facts(claims, lap_cfg)
    tr, ev = lap["train_seconds"], lap["eval_seconds"]
    models = tr["pm"] + tr["l2"]  # the PM model (its l1 part included) and the l2 baseline
    return [models + ev["denoisers"], models + ev["denoisers"], models + ev["priors"]]


def _laplacian_not_run(claims: ClaimSet, lap_cfg: LaplacianConfig) -> None:
    """--quick: the Laplacian claims are all in ``LAPLACIAN_FULL_ONLY``, so no Laplacian model is trained; each
    claim is recorded as skipped with the calibration numbers, and the facts (quadrature, no training) are kept."""
    for name in LAPLACIAN_FULL_ONLY:
        claim, rule = LAPLACIAN_CLAIMS[name]
        claims.skip(
            claim,
            f"gated in --full only and not run in --quick (LAPLACIAN_FULL_ONLY in reproduce.py, decided on "
            f"calibration seeds): {LAPLACIAN_CALIBRATION[name]} (rule {rule})",
        )
    _laplacian_facts(claims, lap_cfg)


def _add_or_skip(claims: ClaimSet, gate: bool, where: str, **kw) -> None:
    """A gated claim (``claims.add`` or, with ``paired=True``, ``claims.paired``), or (``gate=False``) a skipped
    record that keeps the measured numbers in its message; ``where`` names the config constant that gates it."""
    paired = kw.pop("paired", False)
    if gate:
        (claims.paired if paired else claims.add)(**kw)
        return
    if paired:
        fmt = lambda v: ", ".join(f"{x:.4g}" for x in v)  # noqa: E731
        measured = (
            f"{kw['metric']} over seeds {kw['seeds']}: ours {fmt(kw['ours'])}, {kw['baseline_name']} "
            f"{fmt(kw['baseline'])} (rule ours >= baseline {-kw['margin']:+g}, paired)"
        )
    else:
        measured = f"{kw['metric']}: ours {kw['ours']:.4g}, {kw['baseline_name']} {kw['baseline']:.4g} (rule {kw['rule']})"
    claims.skip(
        kw["claim"],
        f"gated in --full only ({where} in reproduce.py, decided on calibration seeds); measured here: "
        f"{measured}",
    )


def _laplacian_facts(claims: ClaimSet, lap_cfg: LaplacianConfig) -> None:
    """The exact posterior mean / median of Laplace(b) + N(0, sigma^2) at y = 0.5 (numerical quadrature): the
    targets of the l2 and l1 models, computed, not learned."""
    where = f"Laplace(b={lap_cfg.scale_b}) prior, N(0, {lap_cfg.sigma}^2) noise, y = 0.5"
    claims.fact(
        "exact MMSE denoiser E[x | y = 0.5]",
        value=float(laplace_posterior_mmse([0.5], lap_cfg.scale_b, lap_cfg.sigma)[0]),
        description=f"{where}; posterior mean by quadrature (what l2 training targets)",
    )
    claims.fact(
        "exact posterior median at y = 0.5",
        value=float(laplace_posterior_median([0.5], lap_cfg.scale_b, lap_cfg.sigma)[0]),
        description=f"{where}; by quadrature (what l1 training targets)",
    )


def _digits_common(dig: dict, dig_cfg: DigitsConfig, config: RunConfig) -> dict:
    return {
        "steps": dig["steps"],
        "hidden": dig_cfg.hidden,
        "sigma": dig_cfg.sigma,
        "seed": config.seed,
        "timings": {"train_seconds": dig["train_seconds"]},
        "psnr": dig["psnr"],
        "psnr_std": dig["psnr_std"],
        "ssim": dig["ssim"],
    }


def _paired_psnr(
    claims: ClaimSet, digs: list[dict], seeds: list[int], ours, base, margin: float, **kw
) -> None:
    """A PSNR claim decided over the paired seeds (each seed: its own split, models and noise; LPN and baseline
    share them): ``ours >= baseline - margin`` at the conservative end of the 95 % t-interval of the per-seed
    slack (a negative margin asks for a win by at least ``-margin`` dB)."""
    claims.paired(
        ours=[ours(d) for d in digs],
        baseline=[base(d) for d in digs],
        seeds=seeds,
        better="higher",
        margin=margin,
        **kw,
    )


def _digits_denoising_claims(
    claims: ClaimSet, digs: list[dict], seeds: list[int], dcommon: dict, arts: list[str], config: RunConfig
) -> list[str]:
    """Denoising against the noisy input (``DIGITS_FULL_ONLY``: skipped in quick with its numbers) and the l2 MLP
    (paired seeds), and the prior against the noise level (first seed)."""
    per_seed = {"psnr_per_seed": [d["psnr"] for d in digs]}
    _add_or_skip(
        claims,
        config.mode != "quick" or "denoise_noisy" not in DIGITS_FULL_ONLY,
        "DIGITS_FULL_ONLY",
        paired=True,
        ours=[d["psnr"]["lpn"] for d in digs],
        baseline=[d["psnr"]["noisy"] for d in digs],
        seeds=seeds,
        better="higher",
        margin=-3.0,
        claim="digits sigma=0.1: LPN denoising improves on the noisy input by >= 3 dB",
        metric="test PSNR (dB), per seed",
        baseline_name="noisy input",
        details={**dcommon, **per_seed},
        artifacts=arts,
    )
    _paired_psnr(
        claims,
        digs,
        seeds,
        lambda d: d["psnr"]["lpn"],
        lambda d: d["psnr"]["l2_mlp"],
        1.0,
        claim="digits sigma=0.1: the convex-potential LPN is competitive with an unconstrained l2 MLP (within 1 dB)",
        metric="test PSNR (dB), per seed",
        baseline_name="unconstrained MLP, l2 loss, same steps",
        details={**dcommon, **per_seed},
        artifacts=arts,
    )
    dig = digs[0]
    pr = dig["prior_noise"]
    incs = np.diff(pr)
    claims.add(
        claim="digits: the learned prior R increases monotonically with the noise level",
        metric="smallest increase of mean R between consecutive sigma in {0,.05,.1,.2,.3}",
        ours=float(incs.min()),
        baseline_name="mean R of clean images",
        baseline=pr[0],
        rule="ours > 0",
        details={
            **dcommon,
            "sigmas": dig["prior_sigmas"],
            "mean_R": pr,
            "mix_lambdas": dig["mix_lambdas"],
            "mean_R_mix": dig["prior_mix"],
            "frac_mid_above_chord": dig["frac_nonconvex"],
        },
        artifacts=arts,
    )
    return ["denoise_noisy", "denoise_mlp", "prior_noise"]


def _pnp_run_details(dig: dict, dig_cfg: DigitsConfig, dcommon: dict) -> tuple[str, dict]:
    """The gated PnP-PGD run's setting in words and the details every claim on that run records."""
    norms = dig["pnp_step_norms"]
    setting = f"step {dig_cfg.pnp_step}, {'clip [0,1]' if dig_cfg.pnp_clip else 'no clip'}, {len(norms)} it."
    details = {
        **dcommon,
        "iterations": len(norms),
        "step": dig_cfg.pnp_step,
        "clip": dig_cfg.pnp_clip,
        "step_norms": norms + dig["pnp_tail_step_norms"],
        "variant_step1_clip_psnr": dig["step1_clip_psnr"],
        "variant_step1_clip_final_norm": dig["step1_clip_step_norms"][-1],
        "pnp_ssim": dig["pnp_ssim"],
    }
    return setting, details


def _digits_pnp_claims(
    claims: ClaimSet,
    digs: list[dict],
    seeds: list[int],
    dig_cfg: DigitsConfig,
    dcommon: dict,
    arts: list[str],
) -> list[str]:
    """The three PnP claims, each seed's on one PnP-PGD run (``dig_cfg.pnp_step``, ``pnp_clip``), decided over the
    paired seeds; returns, per claim added, the key of the seconds it took (see ``_seconds``)."""
    setting, run_details = _pnp_run_details(digs[0], dig_cfg, dcommon)
    keys = ("pnp_psnr", "zero_fill_psnr", "pnp_mlp_psnr", "pnp_wavelet_psnr")
    run_details["pnp_psnr_per_seed"] = {k: [d[k] for d in digs] for k in keys}
    lpn = lambda d: d["pnp_psnr"]  # noqa: E731
    _paired_psnr(
        claims,
        digs,
        seeds,
        lpn,
        lambda d: d["zero_fill_psnr"],
        -3.0,
        claim=f"digits: PnP-PGD with the LPN on 40% random inpainting ({setting}) beats zero filling by >= 3 dB",
        metric="PSNR (dB), per seed",
        baseline_name="zero-filled measurement",
        details=run_details,
        artifacts=arts,
    )
    _paired_psnr(
        claims,
        digs,
        seeds,
        lpn,
        lambda d: d["pnp_mlp_psnr"],
        1.0,
        claim=f"digits: PnP-PGD with the LPN is within 1 dB of PnP-PGD with an unconstrained denoiser ({setting})",
        metric="PSNR (dB), per seed",
        baseline_name="PnP-PGD, unconstrained l2 MLP of the same width, same data and steps",
        details={**run_details, "baseline_step_norms": digs[0]["pnp_mlp_step_norms"]},
        artifacts=arts,
    )
    _paired_psnr(
        claims,
        digs,
        seeds,
        lpn,
        lambda d: d["pnp_wavelet_psnr"],
        0.0,
        claim=f"digits: PnP-PGD with the LPN beats PnP-PGD with a classical wavelet prior ({setting})",
        metric="PSNR (dB), per seed",
        baseline_name="PnP-PGD, Haar soft-threshold (threshold chosen on training images)",
        details={
            **run_details,
            "wavelet_tau": digs[0]["pnp_wavelet_tau"],
            "wavelet_tau_per_seed": [d["pnp_wavelet_tau"] for d in digs],
            "wavelet_calibration_psnr_train": digs[0]["pnp_wavelet_calibration"],
        },
        artifacts=arts,
    )
    return ["pnp_zero_fill", "pnp_mlp", "pnp_wavelet"]


def _digits_mix_converge_claims(
    claims: ClaimSet, dig: dict, dig_cfg: DigitsConfig, arts: list[str]
) -> list[str]:
    """The nonconvexity claim and the convergence of the gated PnP run; returns their seconds keys."""
    norms = dig["pnp_step_norms"]
    curve = norms + dig["pnp_tail_step_norms"]
    setting, _ = _pnp_run_details(dig, dig_cfg, {})
    claims.add(
        claim="digits: the learned prior is nonconvex: R(mid-point of two digits) > mean of the ends",
        metric="fraction of pairs with R(lambda=.5) > (R(0) + R(1)) / 2",
        ours=dig["frac_nonconvex"],
        baseline_name="a convex prior (fraction 0)",
        baseline=0.0,
        rule="ours >= 0.8",
        details={"mix_lambdas": dig["mix_lambdas"], "mean_R_mix": dig["prior_mix"]},
        artifacts=arts,
    )
    below = [k + 1 for k, v in enumerate(curve) if v < 1e-4]
    claims.add(
        claim="digits: PnP-PGD iterates with the LPN converge (||x_{k+1} - x_k|| -> 0) on the run above",
        metric=f"max over images of ||x_(k+1) - x_k|| at iteration {len(norms)} ({setting})",
        ours=norms[-1],
        baseline_name="first-iteration step norm",
        baseline=norms[0],
        rule="ours < 1e-4",
        details={
            "step_norms": curve,
            "gated_iteration": len(norms),
            "first_iteration_below_1e-4": below[0] if below else None,
            "after_long_run": curve[-1],
            "long_run_iters": len(curve),
            "psnr_after_long_run": dig["pnp_tail_psnr"],
            "baseline_mlp_final_norm": dig["pnp_mlp_step_norms"][-1],
        },
        artifacts=arts,
    )
    return ["prior_mix", "converge"]


def _digits_seconds(dig: dict) -> dict[str, float]:
    """Seconds per digits claim: the training of the models it uses plus its own evaluation. A model shared by
    several claims counts in each, so these do not add up to the run's time. A seed run without the studies
    (``run_digits(studies=False)``) has the paired claims' keys only."""
    tr, ev = dig["train_seconds"], dig["eval_seconds"]
    lpn, both = tr["lpn"], tr["lpn"] + tr["l2_mlp"]
    secs = {
        "denoise_noisy": lpn + ev["denoise"],
        "denoise_mlp": both + ev["denoise"],
        "pnp_zero_fill": lpn + ev["pnp_lpn"],
        "pnp_mlp": both + ev["pnp_lpn"] + ev["pnp_l2_mlp"],
        "pnp_wavelet": lpn + ev["pnp_lpn"] + ev["pnp_wavelet"],
    }
    if "prior_noise" in ev:
        secs["prior_noise"] = lpn + ev["prior_noise"]
        secs["prior_mix"] = lpn + ev["prior_mix"]
        secs["converge"] = lpn + ev["pnp_lpn"] + ev["pnp_lpn_tail"]
    return secs


PAIRED_KEYS = ("denoise_noisy", "denoise_mlp", "pnp_zero_fill", "pnp_mlp", "pnp_wavelet")


def _digits_claims(claims: ClaimSet, dig_cfg: DigitsConfig, n_seeds: int, config: RunConfig) -> list[float]:
    """The digits block: ``n_seeds`` seeds (``config.seed``, ``+1``, ...), each its own split, models and noise.
    The PSNR comparisons are paired over them; the other claims are read on the first seed, so the other seeds
    skip those studies (``run_digits(studies=False)``)."""
    seeds = [config.seed + i for i in range(n_seeds)]
    digs = [
        run_digits(replace(dig_cfg, seed=s), show_progress=config.progress, studies=i == 0)
        for i, s in enumerate(seeds)
    ]
    arts = [claims.figure(_plot_digits(digs[0]), "digits.png")]
    dcommon = _digits_common(digs[0], dig_cfg, config)
    keys = _digits_denoising_claims(claims, digs, seeds, dcommon, arts, config)
    keys += _digits_pnp_claims(claims, digs, seeds, dig_cfg, dcommon, arts)
    keys += _digits_mix_converge_claims(claims, digs[0], dig_cfg, arts)
    secs = [_digits_seconds(d) for d in digs]
    return [sum(x[k] for x in secs) if k in PAIRED_KEYS else secs[0][k] for k in keys]


def _plot_mnist(res: dict):
    plt = _pyplot()
    ex, pn = res["examples"], res["pnp"]
    rows = [("clean", ex["clean"]), ("noisy", ex["noisy"]), ("LPN", ex["lpn"])]
    for task in ("inpaint", "deblur"):
        e = pn[task]["examples"]
        rows += [(f"{task} in", e["measured"]), (f"{task} LPN", e["lpn"]), (f"{task} conv", e["conv_l2"])]
    n = min(len(imgs) for _, imgs in rows)
    mosaic = torch.cat([torch.cat(list(imgs[:n, 0].clamp(0, 1)), dim=1) for _, imgs in rows], dim=0)
    fig, ax = plt.subplots(1, 4, figsize=(16, 6), gridspec_kw={"width_ratios": [1.4, 1, 1, 1]})
    ax[0].imshow(mosaic.numpy(), cmap="gray", vmin=0, vmax=1)  # one image: fast to draw
    ax[0].set_yticks([28 * k + 14 for k in range(len(rows))], [name for name, _ in rows], fontsize=7)
    ax[0].set_xticks([])
    ax[0].set_title("ConvLPN28: denoising, PnP-PGD (LPN vs conv)", fontsize=9)
    panels = (
        ("prior_sigmas", "prior_noise", "noise sigma"),
        ("blur_sigmas", "prior_blur", "blur sigma"),
        ("mix_lambdas", "prior_mix", "mix lambda"),
    )
    for a, (xs, ys, lab) in zip(ax[1:], panels):
        a.plot(res[xs], res[ys], "o-")
        a.set(xlabel=lab, ylabel="mean R(x)", title=f"prior vs {lab.split()[0]}")
    fig.tight_layout()
    return fig


def _mnist_claims(claims: ClaimSet, cfg: MnistConfig, config: RunConfig) -> list[float]:
    """ConvLPN28 on real MNIST: denoising, the prior study (noise, blur, mixes) and PnP-PGD (inpainting,
    deblurring) against an unconstrained conv denoiser trained on the same data and steps."""
    from iclr24.paperkit.datasets.mnist import load_mnist

    data = load_mnist(config.data_dir)
    train_x = torch.as_tensor(data["train"][0]).reshape(-1, 1, 28, 28)
    test_x = torch.as_tensor(data["val"][0]).reshape(-1, 1, 28, 28)
    res = run_mnist(cfg, train_x, test_x, show_progress=config.progress)
    return _mnist_records(claims, res, cfg, config)


def _mnist_records(claims: ClaimSet, res: dict, cfg: MnistConfig, config: RunConfig) -> list[float]:
    """The eight MNIST claims from one ``run_mnist`` result; returns the seconds of each (see ``_seconds``)."""
    arts = [claims.figure(_plot_mnist(res), "mnist.png")]
    common = _mnist_common(res, cfg, config)
    _mnist_denoise_claims(claims, res, common, arts)
    _mnist_prior_claims(claims, res, cfg, common, arts)
    _mnist_pnp_claims(claims, res, cfg, common, arts)
    return _mnist_seconds(res)


def _mnist_common(res: dict, cfg: MnistConfig, config: RunConfig) -> dict:
    return {
        "arch": "conv28",
        "hidden": cfg.hidden,
        "baseline_hidden": cfg.baseline_hidden,
        "params": res["params"],
        "steps": res["steps"],
        "batch_size": cfg.batch_size,
        "n_train": res["n_train"],
        "sigma": cfg.sigma,
        "seed": config.seed,
        "psnr": res["psnr"],
        "ssim": res["ssim"],
        "timings": {"train_seconds": res["train_seconds"]},
    }


def _mnist_denoise_claims(claims: ClaimSet, res: dict, common: dict, arts: list[str]) -> None:
    p = res["psnr"]
    claims.add(
        claim="MNIST sigma=0.1: ConvLPN28 denoising improves on the noisy input",
        metric="PSNR (dB) on validation images (SSIM in details)",
        ours=p["lpn"],
        baseline_name="noisy input",
        baseline=p["noisy"],
        rule="ours >= baseline + 3",
        details=common,
        artifacts=arts,
    )
    claims.add(
        claim="MNIST sigma=0.1: ConvLPN28 is competitive with an unconstrained conv denoiser (l2, same data/steps)",
        metric="PSNR (dB) on validation images (SSIM in details)",
        ours=p["lpn"],
        baseline_name="unconstrained 5-layer conv denoiser, l2 loss",
        baseline=p["conv_l2"],
        rule="ours >= baseline - 1.0",
        details=common,
        artifacts=arts,
    )


def _mnist_prior_claims(claims: ClaimSet, res: dict, cfg: MnistConfig, common: dict, arts: list[str]) -> None:
    """The prior study: R rises with noise and with blur, and peaks in the middle of convex mixes."""
    for kind, xs, ys in (
        ("Gaussian noise", "prior_sigmas", "prior_noise"),
        ("blur", "blur_sigmas", "prior_blur"),
    ):
        vals = res[ys]
        claims.add(
            claim=f"MNIST: the ConvLPN28 prior R increases monotonically with {kind}",
            metric=f"smallest increase of mean R between consecutive levels {res[xs]}",
            ours=float(np.diff(vals).min()),
            baseline_name="mean R of clean images",
            baseline=vals[0],
            rule="ours > 0",
            details={**common, "levels": res[xs], "mean_R": vals, "images": cfg.prior_images},
            artifacts=arts,
        )
    claims.add(
        claim="MNIST: the ConvLPN28 prior is nonconvex: R(mid-point of two digits) > mean of the ends",
        metric="fraction of pairs with R(lambda=.5) > (R(0) + R(1)) / 2",
        ours=res["frac_nonconvex"],
        baseline_name="a convex prior (fraction 0)",
        baseline=0.0,
        rule="ours >= 0.8",
        details={**common, "mix_lambdas": res["mix_lambdas"], "mean_R_mix": res["prior_mix"]},
        artifacts=arts,
    )


def _mnist_pnp_claims(claims: ClaimSet, res: dict, cfg: MnistConfig, common: dict, arts: list[str]) -> None:
    """PnP-PGD inpainting and deblurring against the conv denoiser, and convergence of the inpainting run."""
    pn = res["pnp"]
    setting = f"step {cfg.pnp_step}, no clip, {cfg.pnp_iters} it."
    names = {
        "inpaint": f"{cfg.inpaint_missing:.0%} random inpainting",
        "deblur": f"Gaussian deblurring (blur {cfg.deblur_sigma}, noise {cfg.deblur_noise})",
    }
    for task in ("inpaint", "deblur"):
        r = pn[task]
        claims.add(
            claim=f"MNIST: PnP-PGD with ConvLPN28 on {names[task]} is within 1 dB of PnP-PGD with the "
            f"unconstrained conv denoiser ({setting})",
            metric="PSNR (dB) (SSIM in details)",
            ours=r["lpn_psnr"],
            baseline_name="PnP-PGD, unconstrained conv denoiser (l2), same run settings",
            baseline=r["conv_l2_psnr"],
            rule="ours >= baseline - 1.0",
            details={
                **common,
                **{k: r[k] for k in ("measurement_psnr", "lpn_ssim", "conv_l2_ssim")},
                **{k: r[k] for k in ("lpn_step_norms", "conv_l2_step_norms")},
                "images": cfg.pnp_images,
            },
            artifacts=arts,
        )
    norms = pn["inpaint"]["lpn_step_norms"]
    claims.add(
        claim="MNIST: PnP-PGD iterates with ConvLPN28 converge on the inpainting run above",
        metric=f"max over images of ||x_(k+1) - x_k|| at iteration {len(norms)} ({setting})",
        ours=norms[-1],
        baseline_name="first-iteration step norm",
        baseline=norms[0],
        rule="ours < 1e-4",
        details={"step_norms": norms, "conv_l2_final_norm": pn["inpaint"]["conv_l2_step_norms"][-1]},
        artifacts=arts,
    )


def _mnist_seconds(res: dict) -> list[float]:
    """Seconds per MNIST claim, in the order ``_mnist_records`` adds them (training used + own evaluation)."""
    tr, ev = res["train_seconds"], res["eval_seconds"]
    lpn, both = tr["lpn"], tr["lpn"] + tr["conv_l2"]
    return [
        lpn + ev["denoise"],
        both + ev["denoise"],
        lpn + ev["prior_noise"],
        lpn + ev["prior_blur"],
        lpn + ev["prior_mix"],
        both + ev["pnp_inpaint_lpn"] + ev["pnp_inpaint_conv_l2"],
        both + ev["pnp_deblur_lpn"] + ev["pnp_deblur_conv_l2"],
        lpn + ev["pnp_inpaint_lpn"],
    ]


def _seconds(claims: ClaimSet, name: str, measure) -> None:
    """Run ``measure(claims) -> [seconds per claim added]`` in a timed block, then give each claim its own
    measured seconds (the block's time stays on an error record if ``measure`` raises)."""
    first = len(claims.claims)
    secs: list[float] = []
    with claims.timed(name):
        secs = measure()
    added = claims.claims[first:]
    if len(secs) == len(added) and all(c.status != "error" for c in added):
        for i, sec in enumerate(secs):
            claims.claims[first + i] = dataclasses.replace(added[i], seconds=float(sec))


def run(config: RunConfig) -> ClaimSet:
    seed_everything(config.seed)
    lap_cfg = replace(config.pick(LAPLACIAN_SMOKE, LAPLACIAN_QUICK, LAPLACIAN_FULL), seed=config.seed)
    dig_cfg = replace(config.pick(DIGITS_SMOKE, DIGITS_QUICK, DIGITS_FULL), seed=config.seed)
    claims = ClaimSet(NAME, config)
    if config.mode == "quick":
        _laplacian_not_run(claims, lap_cfg)  # every Laplacian claim is --full only: no model is trained
    else:
        _seconds(
            claims,
            "1-D Laplacian: l2, l1 and proximal-matching LPNs",
            lambda: _laplacian_claims(claims, lap_cfg, config),
        )
    _seconds(
        claims,
        "sklearn digits: denoising, prior and PnP-PGD",
        lambda: _digits_claims(claims, dig_cfg, config.pick(*DIGITS_SEEDS), config),
    )
    mnist_cfg = config.pick(None, None, MNIST_FULL)  # real MNIST at 28x28: --full only (see MNIST_FULL)
    if mnist_cfg is not None:
        _seconds(
            claims,
            "MNIST: ConvLPN28 denoising, prior study and PnP-PGD",
            lambda: _mnist_claims(claims, replace(mnist_cfg, seed=config.seed), config),
        )
    return claims


PAPER = Paper(
    name=NAME,
    title="What's in a Prior? Learned Proximal Networks for Inverse Problems",
    summary="Learned proximal networks are exact proximal operators of a learned prior that can be evaluated, "
    "and work as PnP denoisers.",
    run=run,
    budgets={"full": 1800},  # 30 CPU minutes: this paper's effects need more training than ten give
    data=("mnist",),
    paper_scale=paper_scale,
)
