"""The paper's claims, checked at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

Every network trains full batch on one image with Adam and a cosine schedule to ``lr / 10``. The budget is
equal CPU time, fixed as step counts in the config: each network's steps were set once, from per-step CPU times
measured on one machine (:func:`calibrate`, one torch thread, interleaved medians; the numbers are in
:data:`CALIBRATED_SECONDS_PER_STEP`), so that it gets the CPU time of ASMR's steps there (SIREN 4x128 about half
of ASMR's steps, the cheaper MAC-matched SIREN about three times as many). Nothing is measured to set a budget
during a run, so every machine trains the same networks for the same steps; each run reports, as a timing fact,
each network's training CPU time over ASMR's on that machine. Learning rates are fixed in the config: each network
uses the best of a sweep on scikit-image's ``rocket`` (:func:`lr_sweep`), an image that is never evaluated, with
its own seed (100); the paper's own 1e-4 is far from best for every network at CPU scale.

Claims: on cameraman, ASMR against the MAC-matched SIREN (>= 3 dB) and against SIREN 4x128 (within 1 dB); on
colour images the package was never tuned on (astronaut; ``--full`` adds coffee and chelsea), ASMR against SIREN
4x128 on each; the full-grid render speed-up (one thread, process CPU time; a timing claim decided over
interleaved rounds by the paired rule in ratio form); ``--full`` adds a megapixel image trained on sampled
coordinate batches. The MAC counts are tabulated from the architecture: facts.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

import numpy as np
import torch

from iclr24.paperkit import (
    ClaimSet,
    Paper,
    RunConfig,
    benchmark,
    benchmark_many,
    progress,
    seed_everything,
    torch_threads,
)
from iclr24.paperkit.io import atomic_write_text

from .data import camera_image, sample_image
from .decomposition import grid_coords, suggest_bases
from .macs import asmr_macs_per_point, count_linear_macs, macs_per_point, mlp_macs_per_point
from .models import ASMR, SIREN
from .paper_scale import PAPER_SCALE, paper_scale
from .train import fit

__all__ = [
    "NAME",
    "ImageConfig",
    "PAPER_CONFIG",
    "PAPER_SCALE",
    "paper_scale",
    "SMOKE",
    "QUICK",
    "FULL",
    "CALIBRATION_IMAGE",
    "DEPTH_BASES",
    "depth_table",
    "matched_siren_hidden",
    "equal_time_steps",
    "calibrate",
    "CALIBRATED_SECONDS_PER_STEP",
    "QUICK_LENGTH_CALIBRATION",
    "PART_KINDS",
    "lr_sweep",
    "PARTS",
    "run",
    "PAPER",
]

NAME = "asmr"
CALIBRATION_IMAGE = "rocket"  # learning rates are chosen on this image only; it is never evaluated
CALIBRATION_SEED = 100  # seeds of the sweep: 100, 101, ... (evaluation seeds are --seed, --seed + 1, ...)
CALIBRATION_NOTE = (
    "per-step CPU times of calibrate(FULL, repeats=31) on 2026-12-01/02, medians of three runs on a shared 2-vCPU "
    "Xeon @ 2.00GHz (AVX-512) under load, one torch thread; CALIBRATED_SECONDS_PER_STEP"
)
# The calibration behind every CPU config's step counts: median CPU seconds of one training step of each network,
# one torch thread, process CPU time (``calibrate(FULL, repeats=31)``: 31 steps of each network interleaved round-
# robin, median), the median of three such runs made 2026-12-01 23:54 to 2026-12-02 00:15 on the shared 2-vCPU
# machine (Intel Xeon @ 2.00GHz, AVX-512, torch 2.15 CPU), which was not idle (load average 9-11 from other jobs:
# CPU time, not wall time, and ratios of interleaved steps are what the step counts use). The three runs, in ms per
# step: grey ASMR 75.7 / 82.0 / 77.7, SIREN 4x23 26.6 / 27.6 / 25.5, SIREN 4x128 152.6 / 162.0 / 153.4; RGB ASMR
# 79.9 / 79.1 / 79.0, SIREN 4x128 155.6 / 160.0 / 158.5; megapixel (batches of 2^14) ASMR 239.2 / 238.3 / 242.2,
# SIREN 4x128 138.0 / 147.6 / 144.2. The configs' counts are equal_time_steps(ASMR steps, these, "ASMR") (a test
# checks it).
CALIBRATED_SECONDS_PER_STEP = {
    "grey": {"ASMR": 0.07772, "SIREN 4x23 (MAC-matched)": 0.02656, "SIREN 4x128": 0.15339},
    "rgb": {"ASMR": 0.07907, "SIREN 4x128": 0.15848},
    "megapixel": {"ASMR": 0.23917, "SIREN 4x128": 0.14418},
}


@dataclass(frozen=True)
class ImageConfig:
    """The image experiments. Defaults are the paper's (512^2, L = 4, h = 256, 10k steps for every network,
    lr 1e-4). Every network's step count is fixed here: the CPU configs set them once from a calibration
    (:func:`calibrate`) so that each network gets the same CPU time on the calibration machine."""

    size: int = 512
    bases: tuple[tuple[int, ...], ...] = ((4, 4, 4, 8), (4, 4, 4, 8))
    hidden: int = 256
    siren_hidden: int = 256  # the same-architecture SIREN: len(bases[0]) x siren_hidden
    omega0: float = 30.0
    modulator: str = "linear"
    steps: int = 10_000  # ASMR's steps on the grey image (cameraman)
    siren_steps: int = 10_000  # SIREN L x siren_hidden on the grey image
    matched_steps: int = 10_000  # the MAC-matched SIREN on the grey image
    lr: float = 1e-4  # ASMR (official; the CPU configs use the best of lr_sweep() on CALIBRATION_IMAGE)
    siren_lr: float = 1e-4  # SIREN 4 x siren_hidden (official; idem)
    matched_lr: float = 1e-4  # the MAC-matched SIREN (idem)
    lr_min_ratio: float = 0.1  # cosine annealing to lr * lr_min_ratio (paper: 1e-4 -> 1e-5)
    seeds: int = 3
    render_rounds: int = 10  # interleaved rounds of the render speed claim (its paired "seeds")
    render_repeats: int = 5  # timed renders of each network per round (median per round)
    rgb_images: tuple[str, ...] = ("astronaut", "coffee", "chelsea")  # never used for tuning
    rgb_steps: int = 10_000  # ASMR on each RGB image
    rgb_siren_steps: int = 10_000  # SIREN L x siren_hidden on each RGB image
    megapixel: bool = False  # a 1024^2 RGB image (retina) on sampled coordinate batches
    megapixel_size: int = 1024
    megapixel_steps: int = 500  # ASMR on the megapixel image
    megapixel_siren_steps: int = 500  # SIREN L x siren_hidden on the megapixel image
    megapixel_batch: int = 1 << 14


PAPER_CONFIG = ImageConfig()
# CPU scale: 128^2, L = 4, h = 128, bases [[2,4,4,4]]^2 -> 1,234.875 MAC/px vs 33,537 (SIREN 4x128).
# Learning rates: the best of lr_sweep() on rocket (seed 100; grid 1e-4, 3e-4, 1e-3, 3e-3[, 1e-2]), each network
# at about its equal-time share of a 600-step ASMR budget (the previous QUICK): ASMR 600 steps -> 1e-3 (3e-3
# diverges), SIREN 4x128 200 steps -> 3e-3, SIREN 4x23 600 steps -> 3e-3 (1e-2 is worse). Chosen before any
# evaluation run (README table); kept, not re-swept, for QUICK's 200 (now 150) steps and FULL's 1,000.
#
# Step counts: equal CPU time on the calibration machine (CALIBRATED_SECONDS_PER_STEP above), fixed here and never
# measured during a run, so every machine trains the same networks for the same steps.
FULL = replace(
    PAPER_CONFIG,
    size=128,
    bases=((2, 4, 4, 4), (2, 4, 4, 4)),
    hidden=128,
    siren_hidden=128,
    steps=1000,
    siren_steps=507,
    matched_steps=2926,
    lr=1e-3,
    siren_lr=3e-3,
    matched_lr=3e-3,
    seeds=3,
    render_rounds=10,
    rgb_steps=600,
    rgb_siren_steps=299,
    megapixel=True,
    megapixel_siren_steps=829,
)
# QUICK: cameraman at 150 ASMR steps (200 before, 600 before that), the same networks, rates and calibration; the
# RGB claim is gated in --full only (no RGB image: rgb_images=(); its step counts are FULL's, unused). Chosen on
# the calibration image (rocket, seeds 100-101) to bring quick from 118 to about 60 CPU s: QUICK_LENGTH_CALIBRATION.
QUICK = replace(
    FULL,
    steps=150,
    siren_steps=76,
    matched_steps=439,
    seeds=1,
    rgb_images=(),
    megapixel=False,
)
# Quick's length, chosen 2026-12-02 before the evaluated quick run, on the calibration image only (rocket, centre
# square resized to 128^2; grey for the cameraman networks, RGB for the RGB ones; seeds 100 and 101, never
# evaluated): final PSNR (dB) of each network at ASMR's steps and the equal-time step counts of the other networks
# (equal_time_steps of CALIBRATED_SECONDS_PER_STEP). At 100 ASMR steps the 3 dB claim against the MAC-matched
# SIREN failed (+2.37 dB); at 150 both cameraman rules held on both seeds (+5.64 and +6.02 dB against the
# MAC-matched SIREN, +1.31 and +2.06 dB against SIREN 4x128). The cameraman fits at 150 steps take about 39 CPU s;
# the RGB pair would add about 17 CPU s even at 100 ASMR steps (where its rule held on rocket, +3.63 dB), more than
# a one-minute quick run leaves, so the RGB claim is gated in --full only (coffee, chelsea and astronaut there).
QUICK_LENGTH_CALIBRATION = {
    "image": "rocket",
    "grey": {
        100: {"seed 100": {"ASMR": 34.71, "SIREN 4x23 (MAC-matched)": 32.34, "SIREN 4x128": 32.66}},
        150: {
            "seed 100": {"ASMR": 38.52, "SIREN 4x23 (MAC-matched)": 32.88, "SIREN 4x128": 37.21},
            "seed 101": {"ASMR": 39.79, "SIREN 4x23 (MAC-matched)": 33.77, "SIREN 4x128": 37.73},
        },
        200: {"seed 100": {"ASMR": 41.62, "SIREN 4x23 (MAC-matched)": 33.17, "SIREN 4x128": 40.53}},
    },
    "rgb": {
        100: {"seed 100": {"ASMR": 31.01, "SIREN 4x128": 27.38}},
        200: {"seed 100": {"ASMR": 36.35, "SIREN 4x128": 33.98}},
    },
}
# SMOKE: the pipeline only (no verdicts); its step counts from one calibrate(SMOKE, repeats=3) on the same day.
SMOKE = replace(
    FULL,
    size=16,
    bases=((2, 2, 2, 2), (2, 2, 2, 2)),
    hidden=16,
    siren_hidden=16,
    steps=20,
    siren_steps=29,
    matched_steps=38,
    seeds=1,
    render_rounds=2,
    render_repeats=1,
    rgb_images=("astronaut",),
    rgb_steps=10,
    rgb_siren_steps=16,
    megapixel=True,
    megapixel_size=32,
    megapixel_steps=5,
    megapixel_siren_steps=7,
    megapixel_batch=64,
)

# The depth study: cameraman 512^2, h = 256, L = 3..7 (the official scripts/mac_experiment.sh).
DEPTH_BASES = {
    3: (8, 8, 8),
    4: (4, 4, 4, 8),
    5: (8, 2, 2, 2, 8),
    6: (4, 2, 2, 2, 2, 8),
    7: (2, 2, 2, 2, 2, 2, 8),
}


def depth_table(hidden: int = 256) -> list[dict]:
    """MAC/px of ASMR (512^2 grey, bases of :data:`DEPTH_BASES`) and of the L x hidden MLP, for L = 3..7."""
    rows = []
    for n_levels, b in DEPTH_BASES.items():
        a = asmr_macs_per_point([list(b), list(b)], hidden, 1)
        m = mlp_macs_per_point(2, hidden, n_levels, 1)
        rows.append({"L": n_levels, "bases": list(b), "asmr_macs": a, "mlp_macs": m, "ratio": m / a})
    return rows


def matched_siren_hidden(target_macs: float, n_layers: int, dim_in: int = 2, dim_out: int = 1) -> int:
    """The widest SIREN (``n_layers`` linear layers) whose MAC/pt does not exceed ``target_macs``."""
    w = 1
    while mlp_macs_per_point(dim_in, w + 1, n_layers, dim_out) <= target_macs:
        w += 1
    return w


def equal_time_steps(steps: int, seconds_per_step: dict[str, float], reference: str) -> dict[str, int]:
    """Steps that give every network the CPU time of ``steps`` steps of ``reference``:
    ``round(steps * t_reference / t_k)`` (at least 1)."""
    if reference not in seconds_per_step:
        raise ValueError(f"reference {reference!r} is not one of {list(seconds_per_step)}")
    if any(not (t > 0 and math.isfinite(t)) for t in seconds_per_step.values()):
        raise ValueError(f"seconds per step must be positive and finite, got {seconds_per_step}")
    t_ref = seconds_per_step[reference]
    return {k: max(1, round(steps * t_ref / t)) for k, t in seconds_per_step.items()}


# ---------------------------------------------------------------------------------------------------------------
@dataclass
class _Task:
    """One image and the networks compared on it, each with its own fixed step count."""

    label: str
    img: np.ndarray  # (H, W) grey or (H, W, 3)
    makers: dict  # name -> () -> model
    lrs: dict  # name -> learning rate
    steps: dict  # name -> steps (from the config)
    batch_size: int | None = None
    lr_min_ratio: float = 0.1


PART_KINDS = ("grey", "rgb", "megapixel")  # the three budgets of a config (cameraman, RGB images, megapixel)


def _makers(cfg: ImageConfig, kind: str) -> tuple[dict, dict, dict, dict]:
    """The networks of one kind of image (see :data:`PART_KINDS`): ASMR, [the MAC-matched SIREN (grey)],
    SIREN L x siren_hidden; their makers, learning rates, MAC/px and step counts (from the config), by name."""
    size = cfg.megapixel_size if kind == "megapixel" else cfg.size
    dim_out = 1 if kind == "grey" else 3
    n_levels = len(cfg.bases[0])
    shape = (size, size)
    bases = _bases_for_size(size, cfg)
    asmr_mac = asmr_macs_per_point(bases, cfg.hidden, dim_out, cfg.modulator)
    budget = {
        "grey": (cfg.steps, cfg.siren_steps),
        "rgb": (cfg.rgb_steps, cfg.rgb_siren_steps),
        "megapixel": (cfg.megapixel_steps, cfg.megapixel_siren_steps),
    }[kind]
    makers = {"ASMR": lambda: ASMR(2, dim_out, shape, bases, cfg.hidden, cfg.omega0, cfg.modulator)}
    lrs = {"ASMR": cfg.lr}
    macs = {"ASMR": asmr_mac}
    steps = {"ASMR": budget[0]}
    if kind == "grey":
        w = matched_siren_hidden(asmr_mac, n_levels, 2, dim_out)
        name = f"SIREN {n_levels}x{w} (MAC-matched)"
        makers[name] = lambda: SIREN(2, dim_out, shape, w, n_levels, cfg.omega0)
        lrs[name] = cfg.matched_lr
        macs[name] = mlp_macs_per_point(2, w, n_levels, dim_out)
        steps[name] = cfg.matched_steps
    name = f"SIREN {n_levels}x{cfg.siren_hidden}"
    makers[name] = lambda: SIREN(2, dim_out, shape, cfg.siren_hidden, n_levels, cfg.omega0)
    lrs[name] = cfg.siren_lr
    macs[name] = mlp_macs_per_point(2, cfg.siren_hidden, n_levels, dim_out)
    steps[name] = budget[1]
    return makers, lrs, macs, steps


def _step_seconds(task: _Task, device: str, repeats: int) -> dict[str, float]:
    """Median CPU seconds of one training step per network (interleaved round-robin, throwaway models)."""
    target = torch.as_tensor(task.img, dtype=torch.float32).reshape(-1, 1 if task.img.ndim == 2 else 3)
    target = target.to(device)
    n = target.shape[0]
    gen = torch.Generator().manual_seed(0)
    cases = {}
    for k, make in task.makers.items():
        torch.manual_seed(10_000)  # timing models only: never trained on, never evaluated
        model = make().to(device)
        opt = torch.optim.Adam(model.parameters(), lr=task.lrs[k])
        coords = grid_coords(model.data_shape, device=device) if task.batch_size else None

        def step(model=model, opt=opt, coords=coords) -> None:
            if coords is None:
                pred, y = model.render(), target
            else:
                idx = torch.randint(0, n, (task.batch_size,), generator=gen).to(device)
                pred, y = model(coords[idx]), target[idx]
            loss = torch.mean((pred - y) ** 2)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        cases[k] = step
    sync = torch.cuda.synchronize if str(device).startswith("cuda") else None
    clock = "wall" if sync else "cpu"
    res = benchmark_many(cases, baseline="ASMR", repeats=repeats, warmup=2, clock=clock, sync=sync)
    return {r.name: r.median_s for r in res}


def calibrate(
    config: ImageConfig = FULL,
    kinds: tuple[str, ...] = PART_KINDS,
    repeats: int = 21,
    device: str = "cpu",
) -> dict[str, dict]:
    """Measure how many steps give every network the CPU time of ASMR's steps: how the CPU configs' step counts
    were set (once, on one machine; the claims never call this).

    For each kind of image (:data:`PART_KINDS`), the median CPU seconds of one training step of each network
    (one torch thread, process CPU time, ``repeats`` steps of each network interleaved round-robin, throwaway
    models on a random image of the right size: a step's cost does not depend on the pixels), and the step
    counts :func:`equal_time_steps` gives for the config's ASMR steps. Returns ``{kind: {"seconds_per_step":
    {name: s}, "steps": {name: n}, "config_steps": {name: n}}}``."""
    unknown = [k for k in kinds if k not in PART_KINDS]
    if unknown:
        raise ValueError(f"unknown kinds {unknown}; choose from {PART_KINDS}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive int, got {repeats!r}")
    rng = np.random.default_rng(CALIBRATION_SEED)
    out = {}
    with torch_threads(1):
        for kind in kinds:
            makers, lrs, _, steps = _makers(config, kind)
            size = config.megapixel_size if kind == "megapixel" else config.size
            img = rng.random((size, size) if kind == "grey" else (size, size, 3), dtype=np.float32)
            batch = config.megapixel_batch if kind == "megapixel" else None
            task = _Task(kind, img, makers, lrs, steps, batch, config.lr_min_ratio)
            sps = _step_seconds(task, device, repeats)
            out[kind] = {
                "seconds_per_step": sps,
                "steps": equal_time_steps(steps["ASMR"], sps, "ASMR"),
                "config_steps": steps,
            }
    return out


def _run_task(task: _Task, seeds: list[int], config: RunConfig) -> dict:
    """Fits of every network of ``task`` for its configured steps on every seed: per-seed records (CPU seconds
    of each fit under ``timings``), curves, predictions."""
    out = {"steps": dict(task.steps), "records": {k: [] for k in task.makers}, "preds": {}, "curves": {}}
    out["cpu_seconds"] = {k: [] for k in task.makers}
    jobs = [(s, k) for s in seeds for k in task.makers]
    for seed, k in progress(jobs, desc=f"asmr fits ({task.label})", disable=not config.progress):
        seed_everything(seed)
        model = task.makers[k]().to(config.device)
        lr = task.lrs[k]
        lr_min = lr * task.lr_min_ratio
        r = fit(model, task.img, task.steps[k], lr=lr, lr_min=lr_min, batch_size=task.batch_size, seed=seed)
        d = r.to_dict()
        timings = {t: d.pop(t) for t in ("seconds", "seconds_per_step", "cpu_seconds")}
        out["records"][k].append({"seed": seed, "lr": lr, **d, "timings": timings})
        out["cpu_seconds"][k].append(r.cpu_seconds)
        if seed == seeds[0]:
            out["preds"][k] = r.prediction.numpy()
            if task.batch_size is None:  # full-batch training loss = PSNR of the whole image before each step
                out["curves"][k] = [10 * math.log10(1 / max(v, 1e-30)) for v in r.losses]
    # CPU seconds per step of each network in this run (means over seeds): a fact about this machine
    out["seconds_per_step"] = {k: statistics.fmean(v) / task.steps[k] for k, v in out["cpu_seconds"].items()}
    return out


def _mean_std(xs: list[float]) -> tuple[float, float]:
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def _curves_figure(results: dict[str, dict]):
    """PSNR vs steps and vs CPU seconds, one column per image."""
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    labels = [k for k in results if results[k]["curves"]]
    fig, axes = plt.subplots(2, len(labels), figsize=(4.2 * len(labels), 6.5), squeeze=False)
    for j, label in enumerate(labels):
        res = results[label]
        for k, curve in res["curves"].items():
            x = np.arange(1, len(curve) + 1)
            axes[0, j].plot(x, curve, label=k, lw=1)
            axes[1, j].plot(x * res["seconds_per_step"][k], curve, label=k, lw=1)
        axes[0, j].set_title(f"{label}: PSNR vs steps", fontsize=9)
        axes[1, j].set_title(f"{label}: PSNR vs CPU seconds (1 thread)", fontsize=9)
        axes[0, j].set_xlabel("step")
        axes[1, j].set_xlabel("CPU seconds (from the measured step times)")
        for ax in axes[:, j]:
            ax.set_ylabel("training PSNR (dB)")
            ax.grid(alpha=0.3)
        axes[0, j].legend(fontsize=7)
    fig.tight_layout()
    return fig


def _reconstruction_figure(images: dict[str, np.ndarray], results: dict[str, dict]):
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    rows = [lbl for lbl in results if results[lbl]["preds"]]
    ncol = 1 + max(len(results[r]["preds"]) for r in rows)
    fig, axes = plt.subplots(len(rows), ncol, figsize=(2.8 * ncol, 3.0 * len(rows)), squeeze=False)
    for i, lbl in enumerate(rows):
        panels = [("target", images[lbl], None)] + [
            (k, p, results[lbl]["records"][k][0]["psnr"]) for k, p in results[lbl]["preds"].items()
        ]
        for ax in axes[i]:
            ax.axis("off")
        for ax, (name, img, p) in zip(axes[i], panels):
            img = np.clip(np.asarray(img), 0, 1)
            img = img[..., 0] if img.ndim == 3 and img.shape[-1] == 1 else img
            ax.imshow(img, cmap="gray" if img.ndim == 2 else None, vmin=0, vmax=1, interpolation="nearest")
            ax.set_title(f"{lbl}: {name}" if p is None else f"{name}\n{p:.2f} dB", fontsize=8)
    fig.tight_layout()
    return fig


def _summary(res: dict, k: str) -> dict:
    ps = [r["psnr"] for r in res["records"][k]]
    m, s = _mean_std(ps)
    return {
        "psnr_mean": m,
        "psnr_std": s,
        "ssim": [r["ssim"] for r in res["records"][k]],
        "steps": res["steps"][k],
        "lr": res["records"][k][0]["lr"],
        "timings": {"cpu_s_per_step": res["seconds_per_step"][k], "cpu_seconds": res["cpu_seconds"][k]},
    }


def _common(cfg: ImageConfig, config: RunConfig) -> dict:
    return {
        "mode": config.mode,
        "budget": "step counts fixed in the config, calibrated once for equal CPU time (one thread): "
        + CALIBRATION_NOTE,
        "bases": [list(b) for b in cfg.bases],
        "hidden": cfg.hidden,
        "lr_min_ratio": cfg.lr_min_ratio,
        "calibration": f"learning rates from lr_sweep() on {CALIBRATION_IMAGE} (seed {CALIBRATION_SEED})",
    }


PARTS = ("cameraman", "render", "rgb", "megapixel")


def run(config: RunConfig, parts: tuple[str, ...] | None = None) -> ClaimSet:
    """Cameraman (two PSNR claims), the render speed-up, unseen RGB images, [a megapixel image]; MAC facts and
    the CPU-time ratios of the fits (a timing fact: were the configured budgets equal on this machine?).

    ``parts`` runs a subset of :data:`PARTS` (default: all that the mode's config enables)."""
    cfg: ImageConfig = config.pick(smoke=SMOKE, quick=QUICK, full=FULL)
    parts = PARTS if parts is None else tuple(parts)
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise ValueError(f"unknown parts {unknown}; choose from {PARTS}")
    claims = ClaimSet(NAME, config)
    seeds = [config.seed + i for i in range(cfg.seeds)]
    common = _common(cfg, config)
    results: dict[str, dict] = {}
    images: dict[str, np.ndarray] = {}
    makers, lrs, macs, steps = _makers(cfg, "grey")
    with torch_threads(1):  # every fit and timing on one torch thread: "CPU seconds" mean one core
        if "cameraman" in parts:
            with claims.timed(f"cameraman fits, {len(seeds)} seed(s)"):
                images["cameraman"] = camera_image(cfg.size)
                task = _Task("cameraman", images["cameraman"], makers, lrs, steps, None, cfg.lr_min_ratio)
                results["cameraman"] = _run_task(task, seeds, config)
                _claims_cameraman(claims, cfg, common, results["cameraman"], macs, seeds)
        if "render" in parts:
            with claims.timed("full-grid render time"):
                seed_everything(config.seed)
                names = list(makers)
                models = {k: makers[k]().to(config.device).eval() for k in (names[0], names[-1])}
                _claim_render(claims, cfg, common, models, names[-1], config.device)
        if "rgb" in parts and cfg.rgb_images:
            with claims.timed(f"unseen RGB images ({', '.join(cfg.rgb_images)})"):
                _claims_rgb(claims, cfg, common, config, results, images)
        elif "rgb" in parts:
            _skip_rgb(claims, cfg)
        if "megapixel" in parts and cfg.megapixel:
            with claims.timed(f"megapixel image ({cfg.megapixel_size}^2 RGB)"):
                results["retina"] = _claim_megapixel(claims, cfg, common, config)
    if results:
        curves = {k: v for k, v in results.items() if v["curves"]}
        arts = []
        if curves:
            arts = [
                claims.figure(_curves_figure(curves), "psnr_curves.png"),
                claims.figure(_reconstruction_figure(images, curves), "reconstructions.png"),
            ]
        for i, c in enumerate(claims.claims):
            if c.details.get("image") in curves and c.status not in ("skipped", "error"):
                claims.claims[i] = replace(c, artifacts=[*c.artifacts, *arts])
        _budget_fact(claims, results)
    _mac_facts(claims, cfg, makers)
    return claims


def _budget_fact(claims: ClaimSet, results: dict[str, dict]) -> None:
    """Each network's training CPU time over ASMR's on the same image (means over seeds): 1 everywhere means the
    configured step counts gave equal CPU time on this machine, as they did on the calibration machine."""
    ratios = {}
    for label, res in results.items():
        cpu = {k: statistics.fmean(v) for k, v in res["cpu_seconds"].items()}
        ratios[label] = {k: cpu[k] / cpu["ASMR"] for k in cpu if k != "ASMR"}
    worst_label, worst_net = max(
        ((lbl, k) for lbl, r in ratios.items() for k in r), key=lambda t: abs(math.log(ratios[t[0]][t[1]]))
    )
    text = "; ".join(
        f"{lbl}: " + ", ".join(f"{k} {v:.2f}" for k, v in r.items()) for lbl, r in ratios.items()
    )
    claims.fact(
        "training CPU time of each baseline / ASMR's, same image (the ratio farthest from 1)",
        value=ratios[worst_label][worst_net],
        description=f"1 = the equal budgets the step counts were calibrated for ({CALIBRATION_NOTE}); "
        f"measured in this run, one torch thread, process CPU time: {text}",
        details={"ratios": ratios, "farthest": [worst_label, worst_net]},
        timing=True,
    )


def _claims_cameraman(
    claims: ClaimSet, cfg: ImageConfig, common: dict, res: dict, macs: dict, seeds: list[int]
) -> None:
    names = list(res["records"])
    summ = {k: _summary(res, k) for k in names}
    details = {
        **common,
        "image": "cameraman",
        "image_desc": f"skimage camera resized to {cfg.size}x{cfg.size}",
        "seeds": seeds,
        "macs_per_px": macs,
        "networks": summ,
        "per_seed": res["records"],
    }
    claims.add(
        claim="ASMR beats a MAC-matched SIREN by >= 3 dB PSNR (cameraman, equal CPU time)",
        metric="PSNR (dB), mean over seeds",
        ours=summ[names[0]]["psnr_mean"],
        baseline_name=f"{names[1]} at lr {cfg.matched_lr:g}, {summ[names[1]]['steps']} steps",
        baseline=summ[names[1]]["psnr_mean"],
        rule="ours >= baseline + 3",
        details=details,
    )
    claims.add(
        claim=f"ASMR is within 1 dB of (or above) {names[2]} (cameraman, equal CPU time)",
        metric="PSNR (dB), mean over seeds",
        ours=summ[names[0]]["psnr_mean"],
        baseline_name=f"{names[2]}, {summ[names[2]]['steps']} steps",
        baseline=summ[names[2]]["psnr_mean"],
        rule="ours >= baseline - 1",
        details=details,
    )


def _claim_render(
    claims: ClaimSet, cfg: ImageConfig, common: dict, models: dict, siren_name: str, device: str
) -> None:
    """Full-grid render (no grad): ASMR's shared render vs the same-size SIREN, one torch thread, process CPU
    time. ``render_rounds`` interleaved rounds (the order alternates within each), each giving a pair of medians
    over ``render_repeats`` renders; the claim is decided over the rounds by the paired rule in ratio form
    (ASMR's time <= SIREN's / 5 at the 95 % interval's conservative end). Weights do not change the cost: fresh
    models."""
    asmr_model, siren_model = models["ASMR"], models[siren_name]
    cuda = str(device).startswith("cuda")
    ours_ms, base_ms = [], []
    with torch.no_grad():
        for _ in range(cfg.render_rounds):
            b = benchmark(
                asmr_model.render,
                baseline=siren_model.render,
                repeats=cfg.render_repeats,
                warmup=1,
                name="ASMR render",
                baseline_name=siren_name,
                clock="wall" if cuda else "cpu",
                sync=torch.cuda.synchronize if cuda else None,
                threads=1,
            )
            ours_ms.append(b.median_s * 1e3)
            base_ms.append(b.baseline_median_s * 1e3)
        w = benchmark(asmr_model.render, baseline=siren_model.render, repeats=3, warmup=0, threads=1)
        wall = {"asmr": w.median_s * 1e3, "siren": w.baseline_median_s * 1e3, "speedup": w.speedup}
    speedups = [bm / om for om, bm in zip(ours_ms, base_ms)]
    claims.paired(
        claim=f"ASMR's full-grid render is >= 5x faster than {siren_name}",
        metric=(
            "ms per full-grid render, median process CPU time per round (torch pinned to 1 thread)"
            if not cuda
            else "ms per full-grid render, median wall time per round (CUDA)"
        ),
        ours=ours_ms,
        baseline=base_ms,
        seeds=list(range(cfg.render_rounds)),
        baseline_name=siren_name,
        better="lower",
        factor=0.2,  # ASMR's time <= SIREN's / 5
        timing=True,
        details={
            **common,
            "image_size": cfg.size,
            "rounds": cfg.render_rounds,
            "repeats_per_round": cfg.render_repeats,
            "speedup_per_round": speedups,
            "speedup_median": statistics.median(speedups),
            "speedup_geomean": math.exp(statistics.fmean(math.log(x) for x in speedups)),
            "clock": "wall (CUDA)" if cuda else "process CPU time",
            "threads": 1,
            "wall_clock_ms": wall,
            "device": device,
        },
    )


def _claims_rgb(
    claims: ClaimSet, cfg: ImageConfig, common: dict, config: RunConfig, results: dict, images: dict
) -> None:
    """ASMR vs SIREN 4 x siren_hidden on colour images never used for tuning, seed ``config.seed``."""
    makers, lrs, macs, steps = _makers(cfg, "rgb")
    names = list(makers)
    per_image = {}
    for name in cfg.rgb_images:
        images[name] = sample_image(name, cfg.size)
        task = _Task(name, images[name], makers, lrs, steps, None, cfg.lr_min_ratio)
        results[name] = _run_task(task, [config.seed], config)
        per_image[name] = {k: _summary(results[name], k) for k in names}
    gaps = {n: per_image[n][names[0]]["psnr_mean"] - per_image[n][names[1]]["psnr_mean"] for n in per_image}
    worst = min(gaps, key=gaps.get)
    claims.add(
        claim=_rgb_claim_name(cfg, cfg.rgb_images),
        metric="PSNR (dB) on the image where ASMR's margin is smallest",
        ours=per_image[worst][names[0]]["psnr_mean"],
        baseline_name=f"{names[1]} ({worst}), {steps[names[1]]} steps",
        baseline=per_image[worst][names[1]]["psnr_mean"],
        rule="ours >= baseline - 1",
        details={
            **common,
            "image": worst,
            "images": {
                n: f"skimage {n}, centre square crop resized to {cfg.size}x{cfg.size} RGB" for n in per_image
            },
            "steps": steps,
            "seed": config.seed,
            "macs_per_px": macs,
            "per_image": per_image,
            "margins_db": gaps,
        },
    )


def _rgb_claim_name(cfg: ImageConfig, images: tuple[str, ...]) -> str:
    return (
        f"ASMR is within 1 dB of (or above) SIREN {len(cfg.bases[0])}x{cfg.siren_hidden} on every unseen RGB image "
        f"({', '.join(images)}; equal CPU time)"
    )


def _skip_rgb(claims: ClaimSet, cfg: ImageConfig) -> None:
    """A config without RGB images (quick): the RGB claim recorded as gated in ``--full`` only, with the reason."""
    cal = QUICK_LENGTH_CALIBRATION["rgb"][100]["seed 100"]
    claims.skip(
        _rgb_claim_name(cfg, FULL.rgb_images),
        "gated in --full only (QUICK_LENGTH_CALIBRATION in reproduce.py, decided on the calibration image rocket "
        f"before the evaluated run): quick's budget goes to the cameraman fits at {cfg.steps} ASMR steps (at 100 the "
        "3 dB claim failed on rocket); the RGB pair would add about 17 CPU s even at 100 ASMR steps (rocket RGB "
        f"there: ASMR {cal['ASMR']:.2f} dB, SIREN 4x128 {cal['SIREN 4x128']:.2f} dB); no RGB fit in quick",
    )


def _claim_megapixel(claims: ClaimSet, cfg: ImageConfig, common: dict, config: RunConfig) -> dict:
    """A megapixel RGB image (retina, centre square resized to megapixel_size^2) trained on uniformly sampled
    coordinate batches (per-coordinate forward), rendered once at the end with activation sharing."""
    size = cfg.megapixel_size
    makers, lrs, macs, steps = _makers(cfg, "megapixel")
    names = list(makers)
    img = sample_image("retina", size)
    task = _Task("retina", img, makers, lrs, steps, cfg.megapixel_batch, cfg.lr_min_ratio)
    res = _run_task(task, [config.seed], config)
    summ = {k: _summary(res, k) for k in names}
    claims.add(
        claim=f"ASMR is within 1 dB of (or above) {names[1]} on a {size}x{size} RGB image "
        f"(sampled batches of {cfg.megapixel_batch}, equal CPU time)",
        metric="PSNR (dB) of the full render",
        ours=summ[names[0]]["psnr_mean"],
        baseline_name=f"{names[1]}, {steps[names[1]]} steps",
        baseline=summ[names[1]]["psnr_mean"],
        rule="ours >= baseline - 1",
        details={
            **common,
            "image": f"skimage retina, centre square resized to {size}x{size} RGB",
            "steps": steps,
            "batch_size": cfg.megapixel_batch,
            "bases": _bases_for_size(size, cfg),
            "seed": config.seed,
            "macs_per_px": macs,
            "networks": summ,
        },
    )
    return res


def _bases_for_size(size: int, cfg: ImageConfig) -> list[list[int]]:
    """The config's bases at its own size, else ``suggest_bases`` for the same number of levels."""
    n_levels = len(cfg.bases[0])
    return [list(b) for b in cfg.bases] if size == cfg.size else [suggest_bases(size, n_levels)] * 2


def _mac_facts(claims: ClaimSet, cfg: ImageConfig, makers: dict) -> None:
    """The MAC counts: tabulated from the architecture (closed forms, checked by forward hooks), so facts."""
    _mac_reduction_fact(claims, cfg, makers)
    _rgb_mac_fact(claims, cfg)
    _depth_growth_fact(claims)
    _pluto_fact(claims)


def _mac_reduction_fact(claims: ClaimSet, cfg: ImageConfig, makers: dict) -> None:
    """The grey networks' MAC/px, ASMR against the last network of ``makers``: the closed form (the official
    convention), with the forward-hook count and the exact convention in details."""
    names = list(makers)
    model = makers["ASMR"]()  # MACs depend on the architecture only, not on the trained weights
    p = math.prod(model.data_shape)
    hook_macs = count_linear_macs(model, model.render) / p
    bases = [list(b) for b in cfg.bases]
    asmr_mac = asmr_macs_per_point(bases, cfg.hidden, 1, cfg.modulator)
    siren_mac = mlp_macs_per_point(2, cfg.siren_hidden, len(bases[0]), 1)
    claims.fact(
        f"MAC/px reduction of ASMR against {names[-1]}",
        value=siren_mac / asmr_mac,
        description=f"closed form (official convention): {asmr_mac:,.3f} vs {siren_mac:,} MAC/px",
        details={
            "bases": bases,
            "hidden": cfg.hidden,
            "asmr_macs": asmr_mac,
            "siren_macs": siren_mac,
            "hook_count_linear_macs": hook_macs,
            "hook_plus_modulation_adds": hook_macs + _official_add_term(model),
            "exact_convention": macs_per_point(model, "exact"),
        },
    )


def _rgb_mac_fact(claims: ClaimSet, cfg: ImageConfig) -> None:
    """The RGB networks' MAC/px at the config's size, and ASMR's at the megapixel size (its own bases)."""
    bases = [list(b) for b in cfg.bases]
    rgb_asmr = asmr_macs_per_point(bases, cfg.hidden, 3, cfg.modulator)
    rgb_siren = mlp_macs_per_point(2, cfg.siren_hidden, len(bases[0]), 3)
    mp_bases = _bases_for_size(cfg.megapixel_size, cfg)
    mp_asmr = asmr_macs_per_point(mp_bases, cfg.hidden, 3, cfg.modulator)
    claims.fact(
        "MAC/px of the RGB networks (ASMR vs SIREN)",
        value=rgb_siren / rgb_asmr,
        description=f"{cfg.size}^2 RGB: {rgb_asmr:,.3f} vs {rgb_siren:,} MAC/px; "
        f"{cfg.megapixel_size}^2 RGB (bases {mp_bases}): {mp_asmr:,.3f} vs {rgb_siren:,}",
        details={
            "rgb_asmr": rgb_asmr,
            "rgb_siren": rgb_siren,
            "megapixel_asmr": mp_asmr,
            "mp_bases": mp_bases,
        },
    )


def _depth_growth_fact(claims: ClaimSet) -> None:
    """ASMR's MAC/px against an L x 256 MLP's as the depth L grows (``depth_table``, written to depth_table.md)."""
    depth = depth_table()
    lines = ["| L | bases per axis | ASMR MAC/px | MLP Lx256 MAC/px | ratio |", "|---|---|---|---|---|"]
    for r in depth:
        lines.append(
            f"| {r['L']} | {r['bases']} | {r['asmr_macs']:.2f} | {r['mlp_macs']:,} | {r['ratio']:.0f}x |"
        )
    art = claims.artifact(atomic_write_text(claims.config.out / "depth_table.md", "\n".join(lines) + "\n"))
    mlp_growth = depth[-1]["mlp_macs"] / depth[0]["mlp_macs"]
    claims.fact(
        "ASMR MAC/px growth from L=3 to L=7 (512^2, h=256)",
        value=depth[-1]["asmr_macs"] / depth[0]["asmr_macs"],
        description=f"tabulated formula; the L x 256 MLP grows {mlp_growth:.2f}x (table in {art})",
        details={"table": depth, "mlp_growth": mlp_growth},
    )


def _pluto_fact(claims: ClaimSet) -> None:
    """The abstract's "up to 500x": the MAC reduction of the paper's Pluto 8192^2 network against a 6 x 1024 MLP."""
    pluto_asmr = asmr_macs_per_point([[4, 4, 4, 4, 2, 16]] * 2, 1024, 3, "nonlinear")
    pluto_mlp = mlp_macs_per_point(2, 1024, 6, 3)
    claims.fact(
        "MAC reduction, Pluto 8192^2 (h=1024, nonlinear modulator, bases [[4,4,4,4,2,16]]^2) vs MLP 6x1024",
        value=pluto_mlp / pluto_asmr,
        paper_value=500.0,
        description="closed form; the abstract's 'up to 500x'",
        details={"asmr_macs": pluto_asmr, "mlp_macs": pluto_mlp},
    )


def _official_add_term(model: ASMR) -> float:
    """``sum_i h * N_i / P``: the modulation additions as the official profiler counts them."""
    p = math.prod(model.data_shape)
    cells = [math.prod(math.prod(row[: i + 1]) for row in model.bases) for i in range(model.n_levels - 1)]
    return model.hidden * sum(cells) / p


def lr_sweep(
    lrs: tuple[float, ...] = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2),
    steps: int = 600,
    config: ImageConfig = FULL,
    network: str = "matched",
    seed: int = CALIBRATION_SEED,
    image: str = CALIBRATION_IMAGE,
) -> dict[float, float]:
    """PSNR after ``steps`` full-batch steps for each learning rate, on the calibration image (grey, centre
    square resized to ``config.size``), one seed from ``CALIBRATION_SEED``: how ``matched_lr`` was chosen.
    ``network``: ``"matched"`` (the MAC-matched SIREN), ``"siren"`` or ``"asmr"``. The config's rates came from
    ``lr_sweep(network="asmr")``, ``lr_sweep(network="siren", steps=200)`` (its equal-time share of 600 ASMR
    steps) and ``lr_sweep(network="matched")``."""
    if image in ("camera", *config.rgb_images, "retina"):
        raise ValueError(f"{image!r} is an evaluation image; sweep on an image that is never evaluated")
    makers, _, _, _ = _makers(config, "grey")
    names = list(makers)
    key = {"asmr": names[0], "matched": names[1], "siren": names[2]}.get(network)
    if key is None:
        raise ValueError(f"network must be 'matched', 'siren' or 'asmr', got {network!r}")
    img = sample_image(image, config.size, gray=True)
    out = {}
    with torch_threads(1):
        for lr in lrs:
            seed_everything(seed)
            try:
                out[lr] = fit(makers[key](), img, steps, lr=lr, lr_min=lr * config.lr_min_ratio).psnr
            except FloatingPointError:
                out[lr] = float("nan")
    return out


PAPER = Paper(
    name=NAME,
    title="ASMR: Activation-Sharing Multi-Resolution Coordinate Networks for Efficient Inference",
    summary="ASMR reaches SIREN-level fidelity at a near-constant, far smaller MAC count per point.",
    run=run,
    paper_scale=paper_scale,
)
