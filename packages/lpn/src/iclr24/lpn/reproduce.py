"""The paper's claims, checked at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

- 1-D Laplacian (Sec. 5.1): proximal matching recovers the MAP denoiser (soft-thresholding) and the prior |x|;
  l2 training gives the MMSE denoiser instead.
- sklearn digits (the MNIST study of Sec. 5.2 at 8x8): denoising PSNR against the noisy input and an unconstrained
  l2-trained MLP of similar size; the learned prior grows with the noise level and is nonconvex along convex mixes;
  PnP-PGD with the LPN on random inpainting beats zero filling, is compared with PnP-PGD using the unconstrained
  MLP, and its iterates converge: all three on one PnP run (the setting the convergence theory covers).
- real MNIST with the paper's ConvLPN28 at the official width, on checkpoints trained once by ``lpn train`` and
  shipped in the package (``mnist_claims.py``; quick and full): denoising PSNR/SSIM against the noisy input and an
  unconstrained conv denoiser (paired over three checkpoint pairs), PnP-PGD inpainting / deblurring against PnP with
  that conv denoiser, ours (step 0.5, no clip) and the official setting (step 2, clip, 20 iterations); in full also
  the prior under noise, blur and convex mixes and the convergence of the inpainting run at the calibrated iteration.

The claims table is ``CLAIMS`` (``claims_table.py``). Each claim's seconds are measured: the training of the models
it uses plus its own evaluation.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import torch

from iclr24.paperkit import ClaimSet
from iclr24.paperkit import Paper
from iclr24.paperkit import RunConfig
from iclr24.paperkit import seed_everything

from .claims_table import CLAIMS
from .claims_table import DIGITS_CONVERGE_CALIBRATION
from .claims_table import DIGITS_CONVERGE_ITERS
from .claims_table import ROW
from .data import laplace_posterior_median
from .data import laplace_posterior_mmse
from .experiments import DigitsConfig
from .experiments import LaplacianConfig
from .experiments import pnp_convergence_iteration
from .experiments import run_digits
from .experiments import run_laplacian
from .mnist_claims import MNIST_FULL
from .mnist_claims import MNIST_QUICK
from .mnist_claims import MNIST_SMOKE
from .mnist_claims import mnist_claims
from .paper_scale import PAPER_SCALE
from .paper_scale import paper_scale

__all__ = [
    "PAPER",
    "run",
    "LAPLACIAN_SMOKE",
    "LAPLACIAN_QUICK",
    "LAPLACIAN_FULL",
    "DIGITS_SMOKE",
    "DIGITS_QUICK",
    "DIGITS_FULL",
    "MNIST_SMOKE",
    "MNIST_QUICK",
    "MNIST_FULL",
    "CLAIMS",
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
LAPLACIAN_CALIBRATION = {  # why the Laplacian rows are --full only (the claims table's modes)
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
#   3 dB: no config within a minute shows it, so that claim is a --full row of the claims table (quick does not
#   record it); the MNIST rows gate the same effect with the shipped ConvLPN28 checkpoints in quick and full.
DIGITS_QUICK = DigitsConfig(
    hidden=128,
    batch_size=100,
    pretrain_steps=300,
    stage_steps=50,
    prior_images=50,
    mix_lambdas=(0.0, 0.5, 1.0),
    pnp_images=50,
)
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
# MNIST: ConvLPN28 and the conv denoiser are shipped checkpoints (mnist_claims.py, MNIST_SMOKE/QUICK/FULL).

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
    a.semilogy(np.maximum(res["official_step_norms"], 1e-12), ":", label="LPN, official: step 2, clip [0,1]")
    a.axhline(1e-4, color="k", lw=0.5)
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


def _laplacian_claims(claims: ClaimSet, lap_cfg: LaplacianConfig, config: RunConfig) -> list[float]:
    """The three Laplacian claims (smoke, full); returns the seconds each one took (see ``_seconds``)."""
    lap = run_laplacian(lap_cfg, show_progress=config.progress)
    arts = [claims.figure(_plot_laplacian(lap), "laplacian.png")]
    soft = lap["soft"]
    away = np.abs(np.abs(lap["grid"]) - 1.0) > 0.2
    l2_err = float(np.abs(lap["outputs"]["l2"] - soft)[away].max())
    common = _laplacian_common(lap, lap_cfg, config)
    # the paper shows these in figures, with no number to compare (paper_value None)
    claims.add(
        spec=ROW["lap_soft"], ours=lap["pm_soft_max_err"], baseline=l2_err, details=common, artifacts=arts
    )
    f_pm, f_l2 = lap["f_at_probe"]["pm"][0], lap["f_at_probe"]["l2"][0]
    claims.add(
        spec=ROW["lap_map_half"],
        ours=abs(f_pm),
        baseline=f_l2,
        variables={"mmse_reference": lap["mmse_at_probe"][0]},
        details=common,
        artifacts=arts,
    )
    l2_prior_err = float(np.abs(lap["prior_l2"] - np.abs(lap["prior_x"])).max())
    claims.add(
        spec=ROW["lap_prior"],
        ours=lap["prior_max_err"],
        baseline=l2_prior_err,
        details={**common, "prior_pm": lap["prior_pm"][::10].tolist(), "x": lap["prior_x"][::10].tolist()},
        artifacts=arts,
    )
    _laplacian_facts(claims, lap_cfg)
    tr, ev = lap["train_seconds"], lap["eval_seconds"]
    models = tr["pm"] + tr["l2"]  # the PM model (its l1 part included) and the l2 baseline
    return [models + ev["denoisers"], models + ev["denoisers"], models + ev["priors"]]


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


def _paired_psnr(claims: ClaimSet, rid: str, digs: list[dict], seeds: list[int], ours, base, **kw) -> None:
    """A PSNR claim (row ``rid``) decided over the paired seeds (each seed: its own split, models and noise; LPN
    and baseline share them): ``ours >= baseline - margin`` at the conservative end of the 95 % t-interval of the
    per-seed slack (a negative margin asks for a win by at least ``-margin`` dB)."""
    claims.paired(
        spec=ROW[rid], ours=[ours(d) for d in digs], baseline=[base(d) for d in digs], seeds=seeds, **kw
    )


def _digits_denoising_claims(
    claims: ClaimSet, digs: list[dict], seeds: list[int], dcommon: dict, arts: list[str], config: RunConfig
) -> list[str]:
    """Denoising against the noisy input (a --full row: no quick config shows it) and the l2 MLP (paired seeds),
    and the prior against the noise level (first seed); returns the seconds keys of the claims added."""
    per_seed = {"psnr_per_seed": [d["psnr"] for d in digs]}
    keys = []
    if ROW["dig_denoise_noisy"].in_mode(claims.mode):
        _paired_psnr(claims, "dig_denoise_noisy", digs, seeds, lambda d: d["psnr"]["lpn"],
                     lambda d: d["psnr"]["noisy"], details={**dcommon, **per_seed}, artifacts=arts)  # fmt: skip
        keys.append("denoise_noisy")
    _paired_psnr(claims, "dig_denoise_mlp", digs, seeds, lambda d: d["psnr"]["lpn"],
                 lambda d: d["psnr"]["l2_mlp"], details={**dcommon, **per_seed}, artifacts=arts)  # fmt: skip
    dig = digs[0]
    pr = dig["prior_noise"]
    claims.add(
        spec=ROW["dig_prior_noise"],
        ours=float(np.diff(pr).min()),
        baseline=pr[0],
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
    return [*keys, "denoise_mlp", "prior_noise"]


def _pnp_run_details(dig: dict, dig_cfg: DigitsConfig, dcommon: dict) -> dict:
    """The details every claim on the gated PnP-PGD run records."""
    norms = dig["pnp_step_norms"]
    return {
        **dcommon,
        "iterations": len(norms),
        "step": dig_cfg.pnp_step,
        "clip": dig_cfg.pnp_clip,
        "step_norms": norms + dig["pnp_tail_step_norms"],
        "psnr_along_iterations": dig["pnp_psnr_curve"],
        "official_setting": {
            "step": dig_cfg.official_step,
            "clip": [0.0, 1.0],
            "iterations": dig_cfg.official_iters,
        },
        "official_setting_psnr": dig["official_psnr"],
        "official_setting_final_step_norm": dig["official_step_norms"][-1],
        "official_setting_psnr_along_iterations": dig["official_psnr_curve"],
        "pnp_ssim": dig["pnp_ssim"],
    }


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
    run_details = _pnp_run_details(digs[0], dig_cfg, dcommon)
    keys = ("pnp_psnr", "zero_fill_psnr", "pnp_mlp_psnr", "pnp_wavelet_psnr", "official_psnr")
    run_details["pnp_psnr_per_seed"] = {k: [d[k] for d in digs] for k in keys}
    lpn = lambda d: d["pnp_psnr"]  # noqa: E731
    _paired_psnr(claims, "dig_pnp_zero_fill", digs, seeds, lpn, lambda d: d["zero_fill_psnr"],
                 details=run_details, artifacts=arts)  # fmt: skip
    _paired_psnr(claims, "dig_pnp_mlp", digs, seeds, lpn, lambda d: d["pnp_mlp_psnr"],
                 details={**run_details, "baseline_step_norms": digs[0]["pnp_mlp_step_norms"]}, artifacts=arts)  # fmt: skip
    wav = {
        "wavelet_tau": digs[0]["pnp_wavelet_tau"],
        "wavelet_tau_per_seed": [d["pnp_wavelet_tau"] for d in digs],
        "wavelet_calibration_psnr_train": digs[0]["pnp_wavelet_calibration"],
    }
    _paired_psnr(claims, "dig_pnp_wavelet", digs, seeds, lpn, lambda d: d["pnp_wavelet_psnr"],
                 details={**run_details, **wav}, artifacts=arts)  # fmt: skip
    return ["pnp_zero_fill", "pnp_mlp", "pnp_wavelet"]


def _digits_mix_converge_claims(
    claims: ClaimSet, dig: dict, dig_cfg: DigitsConfig, arts: list[str]
) -> list[str]:
    """The convergence claim at the calibrated iteration (the nonconvexity of the digits prior is a reported fact:
    the MNIST row decides that effect); returns the seconds keys."""
    curve = dig["pnp_step_norms"] + dig["pnp_tail_step_norms"]
    gate = DIGITS_CONVERGE_ITERS[claims.mode]
    claims.fact(
        "digits: share of convex mixes with R(lambda=.5) > (R(0) + R(1)) / 2 (reported, not gated)",
        value=dig["frac_nonconvex"],
        description="the MLP-ICNN prior on 8x8 digits along convex mixes of two test digits; the nonconvexity "
        "claim is decided on MNIST with ConvLPN28 (mn_nonconvex)",
        details={"mix_lambdas": dig["mix_lambdas"], "mean_R_mix": dig["prior_mix"]},
    )
    psnr_curve = dig["pnp_psnr_curve"]
    at = min(gate, len(curve))  # a run that reached an exact fixed point (step norm 0) stopped there
    claims.add(
        spec=ROW["dig_converge"],
        ours=curve[at - 1],
        baseline=curve[0],
        details={
            "step_norms": curve,
            "gated_iteration": gate,
            "calibration": DIGITS_CONVERGE_CALIBRATION.get(claims.mode, "smoke: pipeline only"),
            "first_iteration_staying_below_1e-4": pnp_convergence_iteration(curve),
            "psnr_along_iterations": psnr_curve,
            "psnr_at_100": psnr_curve[min(99, len(psnr_curve) - 1)],
            "psnr_at_gate": psnr_curve[min(at, len(psnr_curve)) - 1],
            "baseline_mlp_final_norm": dig["pnp_mlp_step_norms"][-1],
            "step": dig_cfg.pnp_step,
            "clip": dig_cfg.pnp_clip,
        },
        artifacts=arts,
    )
    return ["converge"]


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
        secs["converge"] = lpn + ev["pnp_lpn"] + ev["pnp_lpn_tail"]
    return secs


PAIRED_KEYS = ("denoise_noisy", "denoise_mlp", "pnp_zero_fill", "pnp_mlp", "pnp_wavelet")


def _digits_claims(claims: ClaimSet, dig_cfg: DigitsConfig, n_seeds: int, config: RunConfig) -> list[float]:
    """The digits block: ``n_seeds`` seeds (``config.seed``, ``+1``, ...), each its own split, models and noise.
    The PSNR comparisons are paired over them; the other claims are read on the first seed, so the other seeds
    skip those studies (``run_digits(studies=False)``). The first seed's PnP run goes on to the iteration the
    convergence claim is gated at."""
    seeds = [config.seed + i for i in range(n_seeds)]
    gate = DIGITS_CONVERGE_ITERS[config.mode]
    dig_cfg = replace(dig_cfg, converge_iters_long=max(gate, dig_cfg.pnp_iters + 1))
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


def _plot_mnist(res: dict, cfg):
    plt = _pyplot()
    ex, pn = res["examples"], res["pnp"]
    rows = [("clean", ex["clean"]), ("noisy", ex["noisy"]), ("LPN", ex["lpn"])]
    for task in ("inpaint", "deblur"):
        e = pn[task]["examples"]
        rows += [(f"{task} in", e["measured"]), (f"{task} LPN", e["lpn"]), (f"{task} conv", e["conv_l2"])]
    n = min(len(imgs) for _, imgs in rows)
    mosaic = torch.cat([torch.cat(list(imgs[:n, 0].clamp(0, 1)), dim=1) for _, imgs in rows], dim=0)
    studies = "prior_noise" in res
    fig, ax = plt.subplots(1, 5 if studies else 2, figsize=(20 if studies else 10, 6))
    ax[0].imshow(mosaic.numpy(), cmap="gray", vmin=0, vmax=1)  # one image: fast to draw
    ax[0].set_yticks([28 * k + 14 for k in range(len(rows))], [name for name, _ in rows], fontsize=7)
    ax[0].set_xticks([])
    ax[0].set_title("ConvLPN28 (shipped checkpoint, seed 0): denoising, PnP-PGD", fontsize=9)
    a = ax[1]
    inp = pn["inpaint"]
    curve = inp.get("converge_psnr_curve", inp["lpn_psnr_curve"])
    a.plot(range(1, len(curve) + 1), curve, label=f"LPN, step {cfg.pnp_step}, no clip")
    a.plot(range(1, len(inp["conv_l2_psnr_curve"]) + 1), inp["conv_l2_psnr_curve"], label="conv, same")
    a.plot(
        range(1, cfg.official_iters + 1),
        inp["official_lpn_psnr_curve"],
        "--",
        label="LPN, official (2, clip)",
    )
    a.plot(range(1, cfg.official_iters + 1), inp["official_conv_l2_psnr_curve"], ":", label="conv, official")
    a.set(xlabel="iteration", ylabel="PSNR (dB)", title="inpainting: PSNR along the iterations", xscale="log")
    a.legend(fontsize=7)
    if studies:
        panels = (
            ("prior_sigmas", "prior_noise", "noise sigma"),
            ("blur_sigmas", "prior_blur", "blur sigma"),
            ("mix_lambdas", "prior_mix", "mix lambda"),
        )
        for a, (xs, ys, lab) in zip(ax[2:], panels):
            a.plot(res[xs], res[ys], "o-")
            a.set(xlabel=lab, ylabel="mean R(x)", title=f"prior vs {lab.split()[0]}")
    fig.tight_layout()
    return fig


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
    if ROW["lap_prior"].in_mode(config.mode):
        _seconds(
            claims,
            "1-D Laplacian: l2, l1 and proximal-matching LPNs",
            lambda: _laplacian_claims(claims, lap_cfg, config),
        )
    else:  # --quick: the Laplacian rows are --full only (LAPLACIAN_CALIBRATION); the quadrature facts stay
        _laplacian_facts(claims, lap_cfg)
    _seconds(
        claims,
        "sklearn digits: denoising, prior and PnP-PGD",
        lambda: _digits_claims(claims, dig_cfg, config.pick(*DIGITS_SEEDS), config),
    )
    with claims.timed("MNIST: ConvLPN28 checkpoints: denoising, PnP-PGD, prior study"):
        mnist_claims(claims, config, _plot_mnist)
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
    claims=CLAIMS,
)
