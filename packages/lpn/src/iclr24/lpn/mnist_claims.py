"""The MNIST claims of ``lpn reproduce`` (quick and full), evaluated on the shipped checkpoints.

ConvLPN28 and the unconstrained conv denoiser are trained once by ``lpn train`` (the commands in
``checkpoints/commands.json``; ``tools/train_checkpoints.py lpn`` re-runs them) and shipped inside the package;
``reproduce`` loads them (sha256 checked), or with ``--from-scratch`` retrains them by their recorded commands. Each
claim's details name what it was evaluated on (``training_label``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from iclr24.paperkit import ClaimSet
from iclr24.paperkit import RunConfig

from .claims_table import MNIST_CONVERGE_CALIBRATION
from .claims_table import MNIST_CONVERGE_ITERS
from .claims_table import MNIST_SEEDS
from .claims_table import ROW
from .experiments import ConvDenoiser
from .experiments import MnistConfig
from .experiments import evaluate_mnist
from .experiments import pnp_convergence_iteration

__all__ = [
    "MNIST_SMOKE",
    "MNIST_QUICK",
    "MNIST_FULL",
    "MNIST_IDS",
    "LPN_NAME",
    "BASELINE_NAME",
    "load_shipped",
    "mnist_claims",
]

PACKAGE = "iclr24.lpn"
LPN_NAME, BASELINE_NAME = "conv-lpn28-h64-s{}", "conv-denoiser-h32-s{}"
# Evaluation configs (the models are the shipped checkpoints; these fix what is measured on them).
MNIST_SMOKE = MnistConfig(
    hidden=64, baseline_hidden=32, n_test=8, prior_images=3, prior_max_iter=5, pnp_images=3, pnp_iters=3,
    official_iters=2, prior_sigmas=(0.0, 0.1), blur_sigmas=(0.0, 1.0), mix_lambdas=(0.0, 0.5, 1.0),
    converge_iters=MNIST_CONVERGE_ITERS["smoke"],
)  # fmt: skip
# quick: denoising on 200 images and the PnP runs on full's 20 images per checkpoint pair (the same evaluation as
# full's PnP rows, so both modes decide the headlines on the same numbers); no prior study, no long run. Until
# 2026-12-07 quick ran the PnP rows on 10 images (quick's inpainting headline came out inconclusive there, [-3.33,
# +0.05], full's fails on 20); 20 fit quick's minute.
MNIST_QUICK = MnistConfig(hidden=64, baseline_hidden=32, n_test=200, pnp_images=20)
MNIST_FULL = MnistConfig(
    hidden=64, baseline_hidden=32, n_test=200, prior_images=20, pnp_images=20,
    converge_iters=MNIST_CONVERGE_ITERS["full"],
)  # fmt: skip
MNIST_IDS = tuple(i for i in (r.id for r in ROW.values()) if i.startswith("mn_"))


def load_shipped(config: RunConfig, seed: int) -> tuple[Any, Any, dict[str, str]]:
    """(ConvLPN28, conv denoiser, their training labels) of checkpoint pair ``seed``: the shipped folders
    (sha256 checked), or retrained now by their recorded commands under ``--from-scratch``."""
    from iclr24.paperkit.shipped import model_folder
    from iclr24.paperkit.shipped import training_label

    from .train import load_model

    lf = model_folder(config, PACKAGE, LPN_NAME.format(seed))
    bf = model_folder(config, PACKAGE, BASELINE_NAME.format(seed))
    return (
        load_model(lf),
        ConvDenoiser.from_pretrained(bf).eval(),
        {
            "lpn": training_label(lf),
            "conv_l2": training_label(bf),
        },
    )


def _skip_all(claims: ClaimSet, reason: str) -> None:
    for i in MNIST_IDS:
        if ROW[i].in_mode(claims.mode):
            claims.skip(ROW[i].claim, reason, data="mnist", kind=ROW[i].kind)


def mnist_claims(claims: ClaimSet, config: RunConfig, plot) -> None:
    """Every MNIST row of the mode, on the shipped checkpoint pairs ``MNIST_SEEDS``."""
    from iclr24.paperkit.data.folder import DataMissing
    from iclr24.paperkit.data.mnist import load_mnist

    cfg = config.pick(MNIST_SMOKE, MNIST_QUICK, MNIST_FULL)
    try:
        data = load_mnist(config.data_dir)
    except DataMissing as e:
        _skip_all(claims, f"real data missing: {' '.join(str(e).split())}")
        return
    test_x = torch.as_tensor(data["val"][0]).reshape(-1, 1, 28, 28)
    seeds = list(MNIST_SEEDS[:1] if claims.mode == "smoke" else MNIST_SEEDS)
    runs, labels, secs = [], [], []
    for i, s in enumerate(seeds):
        t0 = time.process_time()
        lpn, base, label = load_shipped(config, s)
        ecfg = replace(cfg, seed=config.seed + s)
        first = i == 0
        full = first and claims.mode == "full"  # the prior study and the long run: full-only rows
        res = evaluate_mnist(
            ecfg, lpn, base, test_x, studies=full, converge=full, show_progress=config.progress
        )
        runs.append(res)
        labels.append(label)
        secs.append(time.process_time() - t0)
    arts = [claims.figure(plot(runs[0], cfg), "mnist.png")]
    common = {
        "evaluated_on": labels,
        "checkpoint_seeds": seeds,
        "params": runs[0]["params"],
        "official_scale": "hidden 64, batch 200, 40,000 steps (20k l1 + 4 x 5k proximal matching)",
        "psnr_per_pair": [r["psnr"] for r in runs],
        "ssim_per_pair": [r["ssim"] for r in runs],
        "cpu_seconds_per_pair": secs,
    }
    _records(claims, runs, seeds, cfg, common, arts)


def _paired(claims: ClaimSet, rid: str, ours, base, seeds, details, arts) -> None:
    claims.paired(spec=ROW[rid], ours=ours, baseline=base, seeds=seeds, details=details, artifacts=arts)


def _records(claims, runs, seeds, cfg, common, arts) -> None:
    mode = claims.mode
    p = [r["psnr"] for r in runs]
    _paired(claims, "mn_denoise_noisy", [x["lpn"] for x in p], [x["noisy"] for x in p], seeds, common, arts)
    _paired(claims, "mn_denoise_conv", [x["lpn"] for x in p], [x["conv_l2"] for x in p], seeds, common, arts)
    r0 = runs[0]
    if ROW["mn_prior_noise"].in_mode(mode):
        for rid, xs, ys in (("mn_prior_noise", "prior_sigmas", "prior_noise"),
                            ("mn_prior_blur", "blur_sigmas", "prior_blur")):  # fmt: skip
            vals = r0[ys]
            claims.add(spec=ROW[rid], ours=float(np.diff(vals).min()), baseline=vals[0], artifacts=arts,
                       details={**common, "levels": r0[xs], "mean_R": vals, "images": cfg.prior_images})  # fmt: skip
        claims.add(spec=ROW["mn_nonconvex"], ours=r0["frac_nonconvex"], baseline=0.0, artifacts=arts,
                   details={**common, "mix_lambdas": r0["mix_lambdas"], "mean_R_mix": r0["prior_mix"]})  # fmt: skip
    for task in ("inpaint", "deblur"):
        pn = [r["pnp"][task] for r in runs]
        det = {
            **common,
            "images": cfg.pnp_images,
            "measurement_psnr": [x["measurement_psnr"] for x in pn],
            "ssim": {k: [x[f"{k}_ssim"] for x in pn] for k in ("lpn", "conv_l2")},
            "psnr_along_iterations_lpn": pn[0]["lpn_psnr_curve"],
            "psnr_along_iterations_conv_l2": pn[0]["conv_l2_psnr_curve"],
            "step_norms_lpn": pn[0]["lpn_step_norms"],
            "official_setting_psnr": {k: [x[f"official_{k}_psnr"] for x in pn] for k in ("lpn", "conv_l2")},
        }
        _paired(claims, f"mn_pnp_{task}", [x["lpn_psnr"] for x in pn], [x["conv_l2_psnr"] for x in pn], seeds,
                det, arts)  # fmt: skip
        det_o = {
            **common,
            "images": cfg.pnp_images,
            "step": cfg.official_step,
            "iterations": cfg.official_iters,
            "clip": [0.0, 1.0],
            "psnr_along_iterations_lpn": pn[0]["official_lpn_psnr_curve"],
            "step_norms_lpn": pn[0]["official_lpn_step_norms"],
            "ours_setting_psnr": {k: [x[f"{k}_psnr"] for x in pn] for k in ("lpn", "conv_l2")},
        }
        _paired(claims, f"mn_pnp_{task}_official",
                [x["official_lpn_psnr"] for x in pn], [x["official_conv_l2_psnr"] for x in pn], seeds, det_o, arts)  # fmt: skip
    if ROW["mn_converge"].in_mode(mode):
        r = r0["pnp"]["inpaint"]
        norms, curve = r["converge_step_norms"], r["converge_psnr_curve"]
        claims.add(
            spec=ROW["mn_converge"], ours=norms[-1], baseline=norms[0], artifacts=arts,
            details={
                **common, "gated_iteration": len(norms), "calibration": MNIST_CONVERGE_CALIBRATION,
                "step_norms": norms, "psnr_along_iterations": curve,
                "first_iteration_staying_below_1e-4": pnp_convergence_iteration(norms),
                "psnr_at_100": curve[min(99, len(curve) - 1)], "psnr_at_gate": curve[-1],
                "conv_l2_step_norm_at_100": r["conv_l2_step_norms"][-1],
            },
        )  # fmt: skip
