"""The paper's claims, checked at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

``CLAIMS`` below is the claims table, executed by ``run``; the experiments are in :mod:`.experiments`, and how
every recipe, rate, step count and seed count was chosen is in ``docs/calibration.md``. Headline: on cameraman
(128^2 grey) ASMR beats a MAC-matched SIREN by >= 3 dB and is within 1 dB of the same-size SIREN 4x128 at 27x
fewer MACs, at equal CPU time. Supporting: the same on unseen RGB images (astronaut in ``--quick``, coffee and
chelsea added in ``--full``); a full-grid render >= 5x faster than SIREN at the paper's cameraman architecture
(512^2, h = 256; a timing claim, paired over interleaved rounds, the rounds sized by the power rule); in
``--full``, a 1024^2 image trained on the official uniform-grid batches. The MAC counts are facts.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

import numpy as np

from iclr24.paperkit import ClaimSet
from iclr24.paperkit import ClaimSpec
from iclr24.paperkit import Paper
from iclr24.paperkit import RunConfig
from iclr24.paperkit import pinned_threads
from iclr24.paperkit import run_claims
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.power import Calibration

from . import experiments as ex
from .data import camera_image
from .data import sample_image
from .experiments import CALIBRATION_IMAGE
from .experiments import CALIBRATION_SEED
from .experiments import DEPTH_BASES
from .experiments import FULL
from .experiments import MEGAPIXEL_CALIBRATION_IMAGE
from .experiments import PAPER_CONFIG
from .experiments import PART_KINDS
from .experiments import ImageConfig
from .experiments import calibrate
from .experiments import depth_table
from .experiments import equal_time_steps
from .experiments import lr_sweep
from .experiments import matched_siren_hidden
from .experiments import megapixel_lr_sweep
from .experiments import whole_epochs
from .paper_scale import PAPER_SCALE
from .paper_scale import paper_scale

__all__ = [
    "NAME",
    "CLAIMS",
    "ImageConfig",
    "PAPER_CONFIG",
    "PAPER_SCALE",
    "paper_scale",
    "SMOKE",
    "QUICK",
    "FULL",
    "CALIBRATION_IMAGE",
    "MEGAPIXEL_CALIBRATION_IMAGE",
    "RENDER_CALIBRATION",
    "DEPTH_BASES",
    "depth_table",
    "matched_siren_hidden",
    "equal_time_steps",
    "whole_epochs",
    "calibrate",
    "CALIBRATED_SECONDS_PER_STEP",
    "PART_KINDS",
    "lr_sweep",
    "megapixel_lr_sweep",
    "PARTS",
    "run",
    "PAPER",
]

NAME = "asmr"

# The render claim's calibration: rounds 0-9 of experiments.render_rounds(PAPER_CONFIG, 10), in a process of their
# own before any evaluated run (docs/calibration.md). The rounds are timing repetitions, not training seeds: the
# evaluated rounds are labelled 100, 101, ... so that the two sets stay disjoint.
RENDER_CALIBRATION = Calibration(
    seeds=tuple(range(10)),
    ours=(302.3, 305.2, 305.6, 315.3, 305.0, 318.6, 304.1, 304.1, 307.2, 299.9),  # ASMR, ms per render
    baseline=(1596.6, 1630.9, 1670.8, 1681.3, 1653.3, 1714.8, 1645.4, 1629.7, 1618.3, 1577.5),  # SIREN 4x256
    seconds_per_seed=6.2,  # CPU s of one round: 3 renders of each of the three networks
    measured="2026-12-03 06:50 UTC, commit 9598901 + this change, 1 thread, kernels pinned to AVX2, shared 2-vCPU "
    "Xeon under load average 8-10 (CPU seconds inflated)",
    note="5.35x (log slack +0.068, sd 0.013 per round); the MAC-matched SIREN 4x24 took 89-104 ms",
)

# The two headlines' fits: mean PSNR on cameraman, one seed in quick, three in full
_CAMERAMAN = dict(
    kind="headline",
    metric="PSNR (dB), mean over seeds",
    data="scikit-image camera (cameraman), resized to 128x128 grey",
    seeds={"quick": (0,), "full": (0, 1, 2)},
)
CLAIMS = (
    ClaimSpec(
        id="matched_siren",
        claim="ASMR beats a MAC-matched SIREN by >= 3 dB PSNR (cameraman, equal CPU time)",
        baseline="the MAC-matched SIREN (the widest 4-layer SIREN with no more MAC/px than ASMR: 4x23), lr 3e-3",
        rule="ours >= baseline + 3",
        seeds_why="a threshold rule on the mean, not a paired one: on the calibration image (rocket, seeds 100-101) "
        "ASMR led the MAC-matched SIREN by +5.6 and +6.0 dB at quick's steps (the 3 dB line), and in the recorded "
        "full run by +47 to +51 dB on every seed, margins several times the seed spread (1.3 dB on rocket at quick's "
        "steps, 3.6 dB at full's 77 dB); one seed in quick, three in full",
        budget={"quick": 15, "full": 150},
        **_CAMERAMAN,
    ),
    ClaimSpec(
        id="same_siren",
        claim="ASMR is within 1 dB of (or above) SIREN 4x128 (cameraman, equal CPU time)",
        baseline="SIREN 4x128 (same depth and width, 27x the MAC/px), lr 3e-3",
        rule="ours >= baseline - 1",
        seeds_why="the same fits as the MAC-matched claim (one seed in quick, three in full); on rocket ASMR led "
        "SIREN 4x128 by +1.3 and +2.1 dB at quick's steps (2.3-3.1 dB above the -1 dB line), in the recorded full "
        "run by +10 to +17 dB per seed",
        budget={"quick": 1, "full": 1},
        **_CAMERAMAN,
    ),
    ClaimSpec(
        id="render",
        kind="supporting",
        claim="ASMR's full-grid render is >= 5x faster than SIREN 4x256 at the paper's cameraman architecture "
        "(512x512 grey, L = 4, h = 256, bases [[4,4,4,8]]^2)",
        metric="ms per full-grid render, median of 3 interleaved renders per round (process CPU time, 1 thread)",
        baseline="SIREN 4x256 (same depth and width)",
        data="untrained networks on the 512x512 grid (a render's cost does not depend on the weights)",
        better="lower",
        factor=0.2,
        seeds={"quick": tuple(range(100, 140)), "full": tuple(range(100, 140))},
        calibration={"quick": RENDER_CALIBRATION, "full": RENDER_CALIBRATION},
        budget={"quick": 25, "full": 40},
        seeds_why="the power rule on calibration rounds 0-9 (RENDER_CALIBRATION), fixed before the run: the "
        "smallest number of interleaved rounds whose 95 % interval excludes the 5x line with 80 % power",
        timing=True,
    ),
    ClaimSpec(
        id="rgb",
        kind="supporting",
        claim="ASMR is within 1 dB of (or above) SIREN 4x128 on every unseen RGB image (equal CPU time)",
        metric="PSNR (dB) on the image where ASMR's margin is smallest",
        baseline="SIREN 4x128 (same depth and width), lr 3e-3",
        data="scikit-image astronaut (quick; full adds coffee and chelsea), centre square resized to 128x128 RGB, "
        "never used for tuning",
        rule="ours >= baseline - 1",
        seeds={"quick": (0,), "full": (0,)},
        seeds_why="one seed per image: on rocket (RGB) ASMR led by +3.6 dB at quick's 100 steps, and the recorded "
        "full run's margins were +0.5, -0.1 and +3.5 dB on the three images (the rule allows -1)",
        budget={"quick": 10, "full": 60},
    ),
    ClaimSpec(
        id="megapixel",
        kind="supporting",
        claim="ASMR is within 1 dB of (or above) SIREN 4x128 on a 1024x1024 RGB image (official uniform grid "
        "sampler, equal CPU time)",
        metric="PSNR (dB) of the full render",
        baseline="SIREN 4x128 (same depth and width), lr 3e-3 (the megapixel sweep)",
        data="scikit-image retina, centre square resized to 1024x1024 RGB; batches of 2^14 from the uniform grid "
        "sampler over 16x16 cells; learning rates chosen on hubble_deep_field",
        rule="ours >= baseline - 1",
        modes=("full",),
        seeds={"full": (0,)},
        seeds_why="one seed: one pair of megapixel fits is a third of full's budget",
        budget={"full": 300},
    ),
)

# Median CPU seconds of one training step of each network (calibrate(FULL, repeats=31), three runs, 2026-12-01/02,
# one thread; docs/calibration.md): the configs' step counts are equal_time_steps() of these (a test checks it).
CALIBRATED_SECONDS_PER_STEP = {
    "grey": {"ASMR": 0.07772, "SIREN 4x23 (MAC-matched)": 0.02656, "SIREN 4x128": 0.15339},
    "rgb": {"ASMR": 0.07907, "SIREN 4x128": 0.15848},
    "megapixel": {"ASMR": 0.23917, "SIREN 4x128": 0.14418},
}
CALIBRATION_NOTE = (
    "per-step CPU times of calibrate(FULL, repeats=31) on 2026-12-01/02, medians of three runs on a shared 2-vCPU "
    "Xeon @ 2.00GHz under load, one torch thread; CALIBRATED_SECONDS_PER_STEP; docs/calibration.md"
)

# QUICK: cameraman at 150 ASMR steps, astronaut at 100 (chosen on rocket: docs/calibration.md)
QUICK = replace(
    FULL,
    steps=150,
    siren_steps=76,
    matched_steps=439,
    rgb_images=("astronaut",),
    rgb_steps=100,
    rgb_siren_steps=50,
    kodak_render=False,
)
# SMOKE: the pipeline only (no verdicts), tiny networks
SMOKE = replace(
    FULL,
    size=16,
    bases=((2, 2, 2, 2), (2, 2, 2, 2)),
    hidden=16,
    siren_hidden=16,
    steps=20,
    siren_steps=29,
    matched_steps=38,
    rgb_images=("astronaut",),
    rgb_steps=10,
    rgb_siren_steps=16,
    megapixel_size=32,
    megapixel_steps=16,
    megapixel_siren_steps=32,
    megapixel_batch=64,
    megapixel_cells=4,
    render_size=16,
    render_bases=((2, 2, 2, 2), (2, 2, 2, 2)),
    render_hidden=16,
    render_repeats=1,
    cpu_scale_render_repeats=1,
    kodak_render=False,
)
MODES = {"smoke": SMOKE, "quick": QUICK, "full": FULL}
PARTS = {
    "cameraman": ("matched_siren", "same_siren"),
    "render": ("render",),
    "rgb": ("rgb",),
    "megapixel": ("megapixel",),
}


def _common(cfg: ImageConfig, config: RunConfig) -> dict:
    return {
        "mode": config.mode,
        "budget": f"step counts fixed in the config, calibrated once for equal CPU time (one thread): {CALIBRATION_NOTE}",
        "bases": [list(b) for b in cfg.bases],
        "hidden": cfg.hidden,
        "lr_min_ratio": cfg.lr_min_ratio,
        "calibration": f"learning rates from lr_sweep() on {CALIBRATION_IMAGE} (seed {CALIBRATION_SEED})",
    }


class _Run:
    """One run's state: the config, the fits shared by several claims, images and results for the figures."""

    def __init__(self, claims: ClaimSet) -> None:
        self.claims = claims
        self.config = claims.config
        self.cfg: ImageConfig = MODES[claims.mode]
        self.common = _common(self.cfg, self.config)
        self.results: dict[str, dict] = {}
        self.images: dict[str, np.ndarray] = {}
        self.grey = ex.makers(self.cfg, "grey")

    def cameraman(self, spec: ClaimSpec, seeds: list[int]) -> None:
        if "cameraman" not in self.results:
            mk, lrs, _, steps = self.grey
            self.images["cameraman"] = camera_image(self.cfg.size)
            task = ex.FitTask(
                "cameraman", self.images["cameraman"], mk, lrs, steps, None, self.cfg.lr_min_ratio
            )
            self.results["cameraman"] = ex.run_task(task, seeds, self.config)
        res = self.results["cameraman"]
        names = list(res["records"])
        summ = {k: ex.summary(res, k) for k in names}
        other = names[1] if spec.id == "matched_siren" else names[2]
        self.claims.add(
            spec=spec,
            ours=summ[names[0]]["psnr_mean"],
            baseline=summ[other]["psnr_mean"],
            details={
                **self.common,
                "image": "cameraman",
                "image_desc": f"skimage camera resized to {self.cfg.size}x{self.cfg.size}",
                "seeds": seeds,
                "baseline_network": other,
                "baseline_steps": summ[other]["steps"],
                "macs_per_px": self.grey[2],
                "networks": summ,
                "per_seed": res["records"],
            },
        )

    def render(self, spec: ClaimSpec, seeds: list[int]) -> None:
        cfg, device = self.cfg, self.config.device
        r = ex.render_rounds(cfg, len(seeds), device, seed=seeds[0])
        asmr, siren, matched = r["names"]
        ours, base, low = r["ms"][asmr], r["ms"][siren], r["ms"][matched]
        speedups = [b / o for o, b in zip(ours, base)]
        beside = {"cpu_scale": ex.cpu_scale_render(cfg, seeds[0])}
        if cfg.kodak_render:
            beside["kodak"] = ex.kodak_render(seeds[0])
        self.claims.paired(
            spec=spec,
            ours=ours,
            baseline=base,
            seeds=seeds,
            details={
                "render_size": cfg.render_size,
                "bases": [list(b) for b in cfg.render_bases],
                "hidden": cfg.render_hidden,
                "repeats_per_round": cfg.render_repeats,
                "speedup_per_round": speedups,
                "speedup_median": statistics.median(speedups),
                "matched_siren": {"network": matched, "ms_per_round": low},
                "beside": beside,
                "round_cpu_seconds": r["round_cpu_seconds"],
                "clock": r["clock"],
                "threads": 1,
                "device": device,
            },
        )
        self.claims.fact(
            f"render time of {matched} / ASMR's (the render claim's grid and rounds)",
            value=statistics.median(low) / statistics.median(ours),
            description=f"medians over the claim's rounds: {statistics.median(low):.1f} vs "
            f"{statistics.median(ours):.1f} ms; below 1 = the MAC-matched SIREN renders faster than ASMR (ASMR's "
            "time does not track its MACs: the per-pixel sine and modulation work stays O(h))",
            timing=True,
        )
        extra = "; ".join(f"{v['network']}: {v['speedup']:.2f}x" for v in beside.values())
        self.claims.fact(
            "render speed-up of ASMR over SIREN at the CPU-scale networks (and the Kodak network in --full)",
            value=beside["cpu_scale"]["speedup"],
            description=f"one interleaved benchmark each, 1 thread, process CPU time: {extra}",
            details=beside,
            timing=True,
        )

    def rgb(self, spec: ClaimSpec, seeds: list[int]) -> None:
        cfg = self.cfg
        mk, lrs, macs, steps = ex.makers(cfg, "rgb")
        names = list(mk)
        per_image = {}
        for name in cfg.rgb_images:
            self.images[name] = sample_image(name, cfg.size)
            task = ex.FitTask(name, self.images[name], mk, lrs, steps, None, cfg.lr_min_ratio)
            self.results[name] = ex.run_task(task, seeds[:1], self.config)
            per_image[name] = {k: ex.summary(self.results[name], k) for k in names}
        gaps = {
            n: per_image[n][names[0]]["psnr_mean"] - per_image[n][names[1]]["psnr_mean"] for n in per_image
        }
        worst = min(gaps, key=gaps.get)
        self.claims.add(
            spec=spec,
            ours=per_image[worst][names[0]]["psnr_mean"],
            baseline=per_image[worst][names[1]]["psnr_mean"],
            details={
                **self.common,
                "image": worst,
                "images": {
                    n: f"skimage {n}, centre square crop resized to {cfg.size}x{cfg.size} RGB" for n in gaps
                },
                "steps": steps,
                "seed": seeds[0],
                "macs_per_px": macs,
                "per_image": per_image,
                "margins_db": gaps,
            },
        )

    def megapixel(self, spec: ClaimSpec, seeds: list[int]) -> None:
        cfg = self.cfg
        img = sample_image(cfg.megapixel_image, cfg.megapixel_size)
        task = ex.megapixel_task(cfg, img, cfg.megapixel_image)
        res = self.results[cfg.megapixel_image] = ex.run_task(task, seeds[:1], self.config)
        names = list(task.makers)
        summ = {k: ex.summary(res, k) for k in names}
        per_epoch = cfg.megapixel_size**2 // cfg.megapixel_batch
        self.claims.add(
            spec=spec,
            ours=summ[names[0]]["psnr_mean"],
            baseline=summ[names[1]]["psnr_mean"],
            details={
                **self.common,
                "image": f"skimage {cfg.megapixel_image}, centre square resized to {cfg.megapixel_size}^2 RGB",
                "sampler": f"uniform grid, {cfg.megapixel_cells}x{cfg.megapixel_cells} cells, batches of "
                f"{cfg.megapixel_batch} ({per_epoch} per epoch), cosine stepped once per epoch",
                "steps": task.steps,
                "epochs": {k: v // per_epoch for k, v in task.steps.items()},
                "lrs": task.lrs,
                "lr_calibration": f"megapixel_lr_sweep() on {MEGAPIXEL_CALIBRATION_IMAGE} (seed {CALIBRATION_SEED})",
                "bases": ex.bases_for_size(cfg.megapixel_size, cfg),
                "seed": seeds[0],
                "macs_per_px": ex.makers(cfg, "megapixel")[2],
                "networks": summ,
            },
        )


def run(config: RunConfig, parts: tuple[str, ...] | None = None) -> ClaimSet:
    """The claims table in this mode, the MAC facts and the CPU-time ratios of the fits (a timing fact: were the
    configured budgets equal on this machine?). ``parts`` runs a subset of :data:`PARTS` (default: all)."""
    parts = tuple(PARTS) if parts is None else tuple(parts)
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise InputError(f"unknown parts {unknown}; choose from {tuple(PARTS)}")
    ids = {i for p in parts for i in PARTS[p]}
    claims = ClaimSet(NAME, config)
    r = _Run(claims)
    measures = {
        "matched_siren": r.cameraman,
        "same_siren": r.cameraman,
        "render": r.render,
        "rgb": r.rgb,
        "megapixel": r.megapixel,
    }
    with pinned_threads(1):  # every fit and timing on one torch thread: "CPU seconds" mean one core
        run_claims(claims, tuple(c for c in CLAIMS if c.id in ids), measures)
    curves = {k: v for k, v in r.results.items() if v["curves"]}
    if curves:
        arts = [
            claims.figure(ex.curves_figure(curves), "psnr_curves.png"),
            claims.figure(ex.reconstruction_figure(r.images, curves), "reconstructions.png"),
        ]
        for i, c in enumerate(claims.claims):
            if c.details.get("image") in curves and c.status not in ("skipped", "error"):
                claims.claims[i] = replace(c, artifacts=[*c.artifacts, *arts])
    if r.results:
        ex.budget_fact(claims, r.results, CALIBRATION_NOTE)
    ex.mac_facts(claims, r.cfg, r.grey[0])
    return claims


PAPER = Paper(
    name=NAME,
    title="ASMR: Activation-Sharing Multi-Resolution Coordinate Networks for Efficient Inference",
    summary="ASMR reaches SIREN-level fidelity at a near-constant, far smaller MAC count per point.",
    run=run,
    paper_scale=paper_scale,
    claims=CLAIMS,
)
