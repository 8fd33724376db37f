"""The experiments behind the claims (``reproduce.py`` holds the claims table, the quick and smoke configs and ``run``; ``FULL``, the CPU config they
derive from, is here beside the paper's).

Every network trains on one image with Adam and a cosine schedule to ``lr / 10``, for a step count fixed in the
config (equal CPU time on the calibration machine: :func:`calibrate`, :func:`equal_time_steps`). Learning rates
come from sweeps on images that are never evaluated (:func:`lr_sweep` on ``rocket`` for the 128^2 fits,
:func:`megapixel_lr_sweep` on ``hubble_deep_field`` for the megapixel fits). Render times are interleaved medians
of process CPU time on one pinned thread (:func:`render_rounds`). How each number was chosen:
``docs/calibration.md``.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import ClaimSet
from iclr24.paperkit import RunConfig
from iclr24.paperkit import benchmark
from iclr24.paperkit import benchmark_many
from iclr24.paperkit import pinned_threads
from iclr24.paperkit import progress
from iclr24.paperkit import seed_everything
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.io import atomic_write_text

from .data import sample_image
from .decomposition import grid_coords
from .decomposition import suggest_bases
from .macs import asmr_macs_per_point
from .macs import count_linear_macs
from .macs import macs_per_point
from .macs import mlp_macs_per_point
from .model import ASMR
from .model import SIREN
from .train import fit

__all__ = [
    "FULL",
    "ImageConfig",
    "FitTask",
    "PAPER_CONFIG",
    "CALIBRATION_IMAGE",
    "CALIBRATION_SEED",
    "MEGAPIXEL_CALIBRATION_IMAGE",
    "PART_KINDS",
    "DEPTH_BASES",
    "depth_table",
    "matched_siren_hidden",
    "equal_time_steps",
    "whole_epochs",
    "calibrate",
    "lr_sweep",
    "megapixel_lr_sweep",
    "calibration_megapixel_image",
    "render_rounds",
]

CALIBRATION_IMAGE = "rocket"  # 128^2 learning rates are chosen on this image only; it is never evaluated
MEGAPIXEL_CALIBRATION_IMAGE = "hubble_deep_field"  # the megapixel learning rates (never evaluated)
CALIBRATION_SEED = 100  # seeds of the sweeps: 100, 101, ... (evaluation seeds are --seed, --seed + 1, ...)
EVALUATION_IMAGES = ("camera", "astronaut", "coffee", "chelsea", "retina")


@dataclass(frozen=True)
class ImageConfig:
    """The image experiments. Defaults are the paper's (512^2, L = 4, h = 256, 10k steps for every network,
    lr 1e-4; the megapixel run's 16x16-cell uniform grid sampler). The CPU configs (``FULL`` here; ``QUICK``, ``SMOKE``) fix every
    network's steps from an equal-CPU-time calibration and the learning rates from sweeps on calibration images."""

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
    siren_lr: float = 1e-4  # SIREN L x siren_hidden (official; idem)
    matched_lr: float = 1e-4  # the MAC-matched SIREN (idem)
    lr_min_ratio: float = 0.1  # cosine annealing to lr * lr_min_ratio (paper: 1e-4 -> 1e-5)
    rgb_images: tuple[str, ...] = ("astronaut", "coffee", "chelsea")  # never used for tuning
    rgb_steps: int = 10_000  # ASMR on each RGB image
    rgb_siren_steps: int = 10_000  # SIREN L x siren_hidden on each RGB image
    megapixel_size: int = 1024
    megapixel_image: str = "retina"
    megapixel_steps: int = 512  # ASMR on the megapixel image (a whole number of epochs of the grid sampler)
    megapixel_siren_steps: int = 512  # SIREN L x siren_hidden on the megapixel image (idem)
    megapixel_batch: int = 1 << 14
    megapixel_cells: int = 16  # cells per axis of the uniform grid sampler (official grid_dims: [16, 16])
    megapixel_lr: float = 1e-4  # ASMR (official; the CPU config uses the best of megapixel_lr_sweep())
    megapixel_siren_lr: float = 1e-4  # SIREN (idem)
    # the render-speed claim: the paper's cameraman network (scripts/mac_experiment.sh, L = 4: 512^2 grey,
    # h = 256, bases [[4,4,4,8]]^2) against SIREN 4 x render_hidden and the MAC-matched SIREN
    render_size: int = 512
    render_bases: tuple[tuple[int, ...], ...] = ((4, 4, 4, 8), (4, 4, 4, 8))
    render_hidden: int = 256
    render_repeats: int = 3  # interleaved renders of each network per round (its median is the round's time)
    cpu_scale_render_repeats: int = 7  # the CPU-scale networks' render ratio, reported beside the claim
    kodak_render: bool = False  # also time the official Kodak network (512x768 RGB) once, reported beside


PAPER_CONFIG = ImageConfig()

# CPU scale: 128^2, L = 4, h = 128, bases [[2,4,4,4]]^2 (1,234.875 MAC/px vs 33,537 for SIREN 4x128); rates from
# lr_sweep() on rocket; the megapixel rates from megapixel_lr_sweep() on hubble_deep_field.
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
    rgb_steps=600,
    rgb_siren_steps=299,
    megapixel_steps=512,  # 8 epochs of 64 batches of 2^14
    megapixel_siren_steps=832,  # 13 epochs: equal CPU time (849 steps) in whole epochs
    megapixel_lr=1e-3,  # megapixel_lr_sweep() on hubble_deep_field: 25.19 dB (1e-4: 20.89)
    megapixel_siren_lr=3e-3,  # idem: 27.00 dB (1e-4: 24.55)
    kodak_render=True,
)
PART_KINDS = ("grey", "rgb", "megapixel")  # the three budgets of a config (cameraman, RGB images, megapixel)
# the official Kodak image network (config/model_config/asmr.yaml NET_IMG), timed beside the render claim
KODAK = {"shape": (512, 768), "bases": ((4, 4, 4, 8), (4, 4, 6, 8)), "hidden": 256, "dim_out": 3}

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
        raise InputError(f"reference {reference!r} is not one of {list(seconds_per_step)}")
    if any(not (t > 0 and math.isfinite(t)) for t in seconds_per_step.values()):
        raise InputError(f"seconds per step must be positive and finite, got {seconds_per_step}")
    t_ref = seconds_per_step[reference]
    return {k: max(1, round(steps * t_ref / t)) for k, t in seconds_per_step.items()}


def whole_epochs(steps: int, per_epoch: int) -> int:
    """``steps`` rounded to the nearest whole number of epochs of ``per_epoch`` batches (at least one epoch)."""
    if per_epoch < 1 or steps < 1:
        raise InputError(f"steps and per_epoch must be positive, got {steps}, {per_epoch}")
    return max(1, round(steps / per_epoch)) * per_epoch


def _default(config: ImageConfig | None) -> ImageConfig:
    return FULL if config is None else config


# ---------------------------------------------------------------------------------------------------------------
@dataclass
class FitTask:
    """One image and the networks compared on it, each with its own fixed step count."""

    label: str
    img: np.ndarray  # (H, W) grey or (H, W, 3)
    makers: dict  # name -> () -> model
    lrs: dict  # name -> learning rate
    steps: dict  # name -> steps (from the config)
    batch_size: int | None = None
    lr_min_ratio: float = 0.1
    cells: int | None = None  # uniform-grid sampler cells per axis (None: full batch)


def bases_for_size(size: int, cfg: ImageConfig) -> list[list[int]]:
    """The config's bases at its own size, else ``suggest_bases`` for the same number of levels."""
    n_levels = len(cfg.bases[0])
    return [list(b) for b in cfg.bases] if size == cfg.size else [suggest_bases(size, n_levels)] * 2


def makers(cfg: ImageConfig, kind: str) -> tuple[dict, dict, dict, dict]:
    """The networks of one kind of image (see :data:`PART_KINDS`): ASMR, [the MAC-matched SIREN (grey)],
    SIREN L x siren_hidden; their makers, learning rates, MAC/px and step counts (from the config), by name."""
    size = cfg.megapixel_size if kind == "megapixel" else cfg.size
    dim_out = 1 if kind == "grey" else 3
    n_levels = len(cfg.bases[0])
    shape = (size, size)
    bases = bases_for_size(size, cfg)
    asmr_mac = asmr_macs_per_point(bases, cfg.hidden, dim_out, cfg.modulator)
    budget = {
        "grey": (cfg.steps, cfg.siren_steps),
        "rgb": (cfg.rgb_steps, cfg.rgb_siren_steps),
        "megapixel": (cfg.megapixel_steps, cfg.megapixel_siren_steps),
    }[kind]
    rates = (cfg.megapixel_lr, cfg.megapixel_siren_lr) if kind == "megapixel" else (cfg.lr, cfg.siren_lr)
    out_makers = {"ASMR": lambda: ASMR(2, dim_out, shape, bases, cfg.hidden, cfg.omega0, cfg.modulator)}
    lrs = {"ASMR": rates[0]}
    macs = {"ASMR": asmr_mac}
    steps = {"ASMR": budget[0]}
    if kind == "grey":
        w = matched_siren_hidden(asmr_mac, n_levels, 2, dim_out)
        name = f"SIREN {n_levels}x{w} (MAC-matched)"
        out_makers[name] = lambda: SIREN(2, dim_out, shape, w, n_levels, cfg.omega0)
        lrs[name] = cfg.matched_lr
        macs[name] = mlp_macs_per_point(2, w, n_levels, dim_out)
        steps[name] = cfg.matched_steps
    name = f"SIREN {n_levels}x{cfg.siren_hidden}"
    out_makers[name] = lambda: SIREN(2, dim_out, shape, cfg.siren_hidden, n_levels, cfg.omega0)
    lrs[name] = rates[1]
    macs[name] = mlp_macs_per_point(2, cfg.siren_hidden, n_levels, dim_out)
    steps[name] = budget[1]
    return out_makers, lrs, macs, steps


def megapixel_task(cfg: ImageConfig, img: np.ndarray, label: str) -> FitTask:
    """The megapixel networks on ``img`` with the uniform grid sampler (``megapixel_cells`` per axis)."""
    mk, lrs, _, steps = makers(cfg, "megapixel")
    return FitTask(label, img, mk, lrs, steps, cfg.megapixel_batch, cfg.lr_min_ratio, cfg.megapixel_cells)


def step_seconds(task: FitTask, device: str, repeats: int) -> dict[str, float]:
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
            else:  # the grid sampler's batches cost the same as random ones: an index gather
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
    config: ImageConfig | None = None,
    kinds: tuple[str, ...] = PART_KINDS,
    repeats: int = 21,
    device: str = "cpu",
) -> dict[str, dict]:
    """Measure how many steps give every network the CPU time of ASMR's steps: how the CPU configs' step counts
    were set (once, on one machine; the claims never call this). ``config``: default ``FULL``.

    For each kind of image (:data:`PART_KINDS`), the median CPU seconds of one training step of each network
    (one torch thread, process CPU time, ``repeats`` steps of each network interleaved round-robin, throwaway
    models on a random image of the right size: a step's cost does not depend on the pixels), and the step
    counts :func:`equal_time_steps` gives for the config's ASMR steps. Returns ``{kind: {"seconds_per_step":
    {name: s}, "steps": {name: n}, "config_steps": {name: n}}}``."""
    config = _default(config)
    unknown = [k for k in kinds if k not in PART_KINDS]
    if unknown:
        raise InputError(f"unknown kinds {unknown}; choose from {PART_KINDS}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise InputError(f"repeats must be a positive int, got {repeats!r}")
    rng = np.random.default_rng(CALIBRATION_SEED)
    out = {}
    with pinned_threads(1):
        for kind in kinds:
            mk, lrs, _, steps = makers(config, kind)
            size = config.megapixel_size if kind == "megapixel" else config.size
            img = rng.random((size, size) if kind == "grey" else (size, size, 3), dtype=np.float32)
            batch = config.megapixel_batch if kind == "megapixel" else None
            task = FitTask(kind, img, mk, lrs, steps, batch, config.lr_min_ratio)
            sps = step_seconds(task, device, repeats)
            out[kind] = {
                "seconds_per_step": sps,
                "steps": equal_time_steps(steps["ASMR"], sps, "ASMR"),
                "config_steps": steps,
            }
    return out


def run_task(task: FitTask, seeds: list[int], config: RunConfig) -> dict:
    """Fits of every network of ``task`` for its configured steps on every seed: per-seed records (CPU seconds
    of each fit under ``timings``), curves, predictions."""
    out = {"steps": dict(task.steps), "records": {k: [] for k in task.makers}, "preds": {}, "curves": {}}
    out["cpu_seconds"] = {k: [] for k in task.makers}
    sampler = {"sampler": "grid", "grid_cells": (task.cells, task.cells)} if task.cells else {}
    jobs = [(s, k) for s in seeds for k in task.makers]
    for seed, k in progress(jobs, desc=f"asmr fits ({task.label})", disable=not config.progress):
        seed_everything(seed)
        model = task.makers[k]().to(config.device)
        lr = task.lrs[k]
        lr_min = lr * task.lr_min_ratio
        r = fit(
            model,
            task.img,
            task.steps[k],
            lr=lr,
            lr_min=lr_min,
            batch_size=task.batch_size,
            seed=seed,
            **sampler,
        )
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


def summary(res: dict, k: str) -> dict:
    ps = [r["psnr"] for r in res["records"][k]]
    return {
        "psnr_mean": statistics.fmean(ps),
        "psnr_std": statistics.stdev(ps) if len(ps) > 1 else 0.0,
        "ssim": [r["ssim"] for r in res["records"][k]],
        "steps": res["steps"][k],
        "lr": res["records"][k][0]["lr"],
        "timings": {"cpu_s_per_step": res["seconds_per_step"][k], "cpu_seconds": res["cpu_seconds"][k]},
    }


# -- render times --------------------------------------------------------------------------------------------------
def render_networks(cfg: ImageConfig, seed: int = 0) -> dict:
    """The render claim's networks (untrained: a render's cost does not depend on the weights): ASMR at
    ``render_size``^2 grey with ``render_bases`` and ``render_hidden``, SIREN L x render_hidden, and the widest
    MAC-matched SIREN, by name."""
    shape = (cfg.render_size, cfg.render_size)
    bases = [list(b) for b in cfg.render_bases]
    n_levels, h = len(bases[0]), cfg.render_hidden
    w = matched_siren_hidden(asmr_macs_per_point(bases, h, 1, cfg.modulator), n_levels)
    seed_everything(seed)
    return {
        "ASMR": ASMR(2, 1, shape, bases, h, cfg.omega0, cfg.modulator).eval(),
        f"SIREN {n_levels}x{h}": SIREN(2, 1, shape, h, n_levels, cfg.omega0).eval(),
        f"SIREN {n_levels}x{w} (MAC-matched)": SIREN(2, 1, shape, w, n_levels, cfg.omega0).eval(),
    }


def render_rounds(cfg: ImageConfig, rounds: int, device: str = "cpu", seed: int = 0) -> dict:
    """Time the full-grid render of :func:`render_networks`: one warm-up render of each, then ``rounds`` rounds
    of ``render_repeats`` renders of each network interleaved round-robin (the order rotates), torch pinned to
    one thread, process CPU time (CUDA: wall time with synchronisation). Returns per-round medians in ms by
    network (``"ms"``), the CPU seconds of each round (all networks) and of the warm-up."""
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InputError(f"rounds must be a positive int, got {rounds!r}")
    nets = {k: m.to(device) for k, m in render_networks(cfg, seed).items()}
    names = list(nets)
    cuda = str(device).startswith("cuda")
    sync = torch.cuda.synchronize if cuda else None
    ms: dict[str, list[float]] = {k: [] for k in names}
    round_cpu = []
    with torch.no_grad(), pinned_threads(1):
        c0 = time.process_time()
        for m in nets.values():
            m.render()
        warmup_cpu = time.process_time() - c0
        for _ in range(rounds):
            c0 = time.process_time()
            res = benchmark_many(
                {k: m.render for k, m in nets.items()},
                baseline=names[0],
                repeats=cfg.render_repeats,  # renders of each network in this round
                warmup=0,
                clock="wall" if cuda else "cpu",
                sync=sync,
                threads=1,
            )
            round_cpu.append(time.process_time() - c0)
            for r in res:
                ms[r.name].append(r.median_s * 1e3)
    return {
        "names": names,
        "ms": ms,
        "round_cpu_seconds": round_cpu,
        "warmup_cpu_seconds": warmup_cpu,
        "clock": "wall (CUDA)" if cuda else "process CPU time",
    }


def _pair_ratio(ours: torch.nn.Module, base: torch.nn.Module, repeats: int) -> dict:
    with torch.no_grad():
        b = benchmark(ours.render, baseline=base.render, repeats=repeats, warmup=1, clock="cpu", threads=1)
    return {"asmr_ms": b.median_s * 1e3, "siren_ms": b.baseline_median_s * 1e3, "speedup": b.speedup}


def cpu_scale_render(cfg: ImageConfig, seed: int = 0) -> dict:
    """The CPU-scale networks' render ratio (the fits' ASMR at ``size``^2 against SIREN L x siren_hidden): one
    interleaved benchmark, reported beside the claim."""
    mk, _, _, _ = makers(cfg, "grey")
    names = list(mk)
    seed_everything(seed)
    out = _pair_ratio(mk["ASMR"]().eval(), mk[names[-1]]().eval(), cfg.cpu_scale_render_repeats)
    return {**out, "network": f"ASMR {cfg.size}^2 h={cfg.hidden} vs {names[-1]}"}


def kodak_render(seed: int = 0, repeats: int = 3) -> dict:
    """The official Kodak image network (512x768 RGB, h = 256, bases [[4,4,4,8],[4,4,6,8]]) against SIREN 4x256:
    one interleaved benchmark, reported beside the claim."""
    seed_everything(seed)
    shape, bases, h, d = KODAK["shape"], [list(b) for b in KODAK["bases"]], KODAK["hidden"], KODAK["dim_out"]
    out = _pair_ratio(
        ASMR(2, d, shape, bases, h).eval(), SIREN(2, d, shape, h, len(bases[0])).eval(), repeats
    )
    return {**out, "network": "Kodak NET_IMG: 512x768 RGB, h=256, bases [[4,4,4,8],[4,4,6,8]] vs SIREN 4x256"}


# -- learning-rate sweeps (how the configs' rates were chosen; the claims never call these) -------------------------
def lr_sweep(
    lrs: tuple[float, ...] = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2),
    steps: int = 600,
    config: ImageConfig | None = None,
    network: str = "matched",
    seed: int = CALIBRATION_SEED,
    image: str = CALIBRATION_IMAGE,
) -> dict[float, float]:
    """PSNR after ``steps`` full-batch steps for each learning rate, on the calibration image (grey, centre
    square resized to ``config.size``; default config ``FULL``), one seed from ``CALIBRATION_SEED``.
    ``network``: ``"matched"`` (the MAC-matched SIREN), ``"siren"`` or ``"asmr"``. The config's rates came from
    ``lr_sweep(network="asmr")``, ``lr_sweep(network="siren", steps=200)`` (its equal-time share of 600 ASMR
    steps) and ``lr_sweep(network="matched")``."""
    config = _default(config)
    if image in EVALUATION_IMAGES + config.rgb_images + (config.megapixel_image,):
        raise InputError(f"{image!r} is an evaluation image; sweep on an image that is never evaluated")
    mk, _, _, _ = makers(config, "grey")
    names = list(mk)
    key = {"asmr": names[0], "matched": names[1], "siren": names[2]}.get(network)
    if key is None:
        raise InputError(f"network must be 'matched', 'siren' or 'asmr', got {network!r}")
    img = sample_image(image, config.size, gray=True)
    out = {}
    with pinned_threads(1):
        for lr in lrs:
            seed_everything(seed)
            try:
                out[lr] = fit(mk[key](), img, steps, lr=lr, lr_min=lr * config.lr_min_ratio).psnr
            except FloatingPointError:
                out[lr] = float("nan")
    return out


def calibration_megapixel_image(size: int, image: str = MEGAPIXEL_CALIBRATION_IMAGE) -> np.ndarray:
    """The megapixel calibration image: its centre square (hubble_deep_field: 872^2), resized to ``size``^2 RGB
    (an upsampling for 1024^2: no bundled image but the evaluated retina is that large)."""
    from skimage.transform import resize

    if image in EVALUATION_IMAGES:
        raise InputError(f"{image!r} is an evaluation image; calibrate on an image that is never evaluated")
    sq = sample_image(image, None)
    img = resize(sq, (size, size) + sq.shape[2:], anti_aliasing=sq.shape[0] > size, preserve_range=True)
    return np.clip(img.astype(np.float32), 0.0, 1.0)


def megapixel_lr_sweep(
    lrs: tuple[float, ...] = (1e-4, 3e-4, 1e-3, 3e-3),
    network: str = "asmr",
    config: ImageConfig | None = None,
    seed: int = CALIBRATION_SEED,
    image: str = MEGAPIXEL_CALIBRATION_IMAGE,
) -> dict[float, dict]:
    """The megapixel fit of one network (``"asmr"`` or ``"siren"``) on the calibration megapixel image, with the
    config's sampler, batch and step count, for each learning rate: ``{lr: {"psnr", "cpu_seconds"}}``. How the
    config's ``megapixel_lr`` and ``megapixel_siren_lr`` were chosen (default config ``FULL``)."""
    config = _default(config)
    task = megapixel_task(config, calibration_megapixel_image(config.megapixel_size, image), image)
    names = list(task.makers)
    key = {"asmr": names[0], "siren": names[-1]}.get(network)
    if key is None:
        raise InputError(f"network must be 'asmr' or 'siren', got {network!r}")
    cells = (config.megapixel_cells, config.megapixel_cells)
    out = {}
    with pinned_threads(1):
        for lr in lrs:
            seed_everything(seed)
            try:
                r = fit(
                    task.makers[key](), task.img, task.steps[key], lr=lr, lr_min=lr * config.lr_min_ratio,
                    batch_size=task.batch_size, sampler="grid", grid_cells=cells, seed=seed,
                )  # fmt: skip
                out[lr] = {"psnr": r.psnr, "ssim": r.ssim, "cpu_seconds": r.cpu_seconds}
            except FloatingPointError:
                out[lr] = {"psnr": float("nan"), "ssim": None, "cpu_seconds": None}
    return out


# -- figures and facts ---------------------------------------------------------------------------------------------
def curves_figure(results: dict[str, dict]):
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


def reconstruction_figure(images: dict[str, np.ndarray], results: dict[str, dict]):
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


def mac_facts(claims: ClaimSet, cfg: ImageConfig, nets: dict) -> None:
    """The MAC counts: tabulated from the architecture (closed forms, checked by forward hooks), so facts."""
    _mac_reduction_fact(claims, cfg, nets)
    _rgb_mac_fact(claims, cfg)
    _depth_growth_fact(claims)
    _pluto_fact(claims)


def _mac_reduction_fact(claims: ClaimSet, cfg: ImageConfig, nets: dict) -> None:
    """The grey networks' MAC/px, ASMR against the last network of ``nets``: the closed form (the official
    convention), with the forward-hook count and the exact convention in details."""
    names = list(nets)
    model = nets["ASMR"]()  # MACs depend on the architecture only, not on the trained weights
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
            "hook_plus_modulation_adds": hook_macs + official_add_term(model),
            "exact_convention": macs_per_point(model, "exact"),
        },
    )


def _rgb_mac_fact(claims: ClaimSet, cfg: ImageConfig) -> None:
    """The RGB networks' MAC/px at the config's size, and ASMR's at the megapixel size (its own bases)."""
    bases = [list(b) for b in cfg.bases]
    rgb_asmr = asmr_macs_per_point(bases, cfg.hidden, 3, cfg.modulator)
    rgb_siren = mlp_macs_per_point(2, cfg.siren_hidden, len(bases[0]), 3)
    mp_bases = bases_for_size(cfg.megapixel_size, cfg)
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
        description=f"tabulated formula; the L x 256 MLP grows {mlp_growth:.2f}x (table in {Path(art).name})",
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


def official_add_term(model: ASMR) -> float:
    """``sum_i h * N_i / P``: the modulation additions as the official profiler counts them."""
    p = math.prod(model.data_shape)
    cells = [math.prod(math.prod(row[: i + 1]) for row in model.bases) for i in range(model.n_levels - 1)]
    return model.hidden * sum(cells) / p


def budget_fact(claims: ClaimSet, results: dict[str, dict], note: str) -> None:
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
        description=f"1 = the equal budgets the step counts were calibrated for ({note}); "
        f"measured in this run, one torch thread, process CPU time: {text}",
        details={"ratios": ratios, "farthest": [worst_label, worst_net]},
        timing=True,
    )
