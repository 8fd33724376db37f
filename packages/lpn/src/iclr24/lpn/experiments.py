"""The paper's experiments at CPU scale: the 1-D Laplacian toy (Sec. 5.1), denoising / prior / PnP on sklearn
digits (the MNIST study of Sec. 5.2 at 8x8), and the same on real MNIST with the paper's ConvLPN28 (``run_mnist``). Each returns plain measurements; ``reproduce.py`` turns them into
claims."""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.pretrained import PretrainedMixin

from .data import digits_split
from .data import laplace_posterior_median
from .data import laplace_posterior_mmse
from .data import laplace_sampler
from .data import psnr
from .data import soft_threshold
from .data import ssim
from .icnn import MLPLPN
from .icnn import ConvLPN28
from .loss import LAPLACIAN_SEGMENTS
from .loss import Segment
from .loss import scale_segments
from .pnp import gaussian_blur_operator
from .pnp import inpainting_operator
from .pnp import pnp_pgd
from .prior import evaluate_prior
from .train import TrainConfig
from .train import train

__all__ = [
    "LaplacianConfig",
    "DigitsConfig",
    "run_laplacian",
    "run_digits",
    "UnconstrainedDenoiser",
    "haar_soft_threshold",
    "MnistConfig",
    "run_mnist",
    "ConvDenoiser",
    "blur_images",
    "train_mnist",
    "evaluate_mnist",
    "pnp_convergence_iteration",
]


@dataclass(frozen=True)
class LaplacianConfig:
    """1-D Laplacian toy (official ``exps/laplacian``): x ~ Laplace(0, 1), y = x + N(0, 1), batch 2000, MLP LPN
    hidden 50, 4 layers, beta 10. The PM model follows ``LAPLACIAN_SEGMENTS`` (46k steps); the l1 and l2 models
    train for the l1 pre-training part (10k @ 1e-3 + 10k @ 1e-4). ``pretrain_scale`` / ``pm_scale`` shorten the
    l1/l2 and the proximal-matching segments (CPU scale)."""

    scale_b: float = 1.0
    sigma: float = 1.0
    batch_size: int = 2000
    hidden: int = 50
    layers: int = 4
    beta: float = 10.0
    pretrain_scale: float = 1.0
    pm_scale: float = 1.0
    segments: tuple[Segment, ...] = LAPLACIAN_SEGMENTS
    prior_max_iter: int = 2000
    seed: int = 0


def run_laplacian(cfg: LaplacianConfig, show_progress: bool = False) -> dict[str, Any]:
    """Train l2, l1 and proximal-matching LPNs on the 1-D Laplacian denoising problem and measure them against the
    closed forms (soft-threshold MAP, MMSE / median by quadrature, prior |x|).

    As in the notebook, the PM model continues from the l1 model: the l1 model *is* the PM model's l1
    pre-training (a snapshot), and the l2 model trains for the same number of steps with the same learning rates.
    """
    sampler = laplace_sampler(cfg.scale_b)
    pre = tuple(s for s in cfg.segments if s.loss != "pm")
    pm_segs = tuple(s for s in cfg.segments if s.loss == "pm")
    pre = scale_segments(pre, cfg.pretrain_scale)
    pm_segs = scale_segments(pm_segs, cfg.pm_scale)
    l2_segs = tuple(Segment(s.steps, "l2", s.lr) for s in pre)

    def fit(model: MLPLPN, segs: tuple[Segment, ...], seed: int) -> float:
        tc = TrainConfig(
            num_steps=sum(s.steps for s in segs),
            segments=segs,
            batch_size=cfg.batch_size,
            sigma_noise=cfg.sigma,
            seed=seed,
        )
        t0 = time.perf_counter()
        train(model, sampler, tc, show_progress=show_progress)
        return time.perf_counter() - t0

    def new_model(seed: int) -> MLPLPN:
        torch.manual_seed(seed)
        return MLPLPN(in_dim=1, hidden=cfg.hidden, layers=cfg.layers, beta=cfg.beta, alpha=0.0)

    seconds = {}
    l2 = new_model(cfg.seed * 100)
    seconds["l2"] = fit(l2, l2_segs, cfg.seed * 100)
    l1 = new_model(cfg.seed * 100 + 1)
    seconds["l1"] = fit(l1, pre, cfg.seed * 100 + 1)
    pm = copy.deepcopy(l1)
    seconds["pm"] = seconds["l1"] + fit(pm, pm_segs, cfg.seed * 100 + 2)
    models = {"l2": l2.eval(), "l1": l1.eval(), "pm": pm.eval()}
    t0 = time.perf_counter()
    steps = {"l2": sum(s.steps for s in l2_segs), "l1": sum(s.steps for s in pre)}
    steps["pm"] = steps["l1"] + sum(s.steps for s in pm_segs)
    lam = cfg.sigma**2 / cfg.scale_b
    grid = torch.linspace(-3, 3, 601, dtype=torch.float32).unsqueeze(1)
    outs = {k: m(grid).squeeze(1).double() for k, m in models.items()}
    soft = soft_threshold(grid.squeeze(1).double(), lam)
    away = (grid.squeeze(1).abs() - lam).abs() > 0.2 * lam  # outside the kink region 0.8 <= |x| <= 1.2
    pm_err = float((outs["pm"] - soft).abs()[away].max())
    probe = torch.tensor([[0.5], [1.0], [2.0], [3.0]])
    at = {k: m(probe).squeeze(1).tolist() for k, m in models.items()}
    eval_seconds = {"denoisers": time.perf_counter() - t0}
    t0 = time.perf_counter()
    # recovered prior of the PM model on [-2, 2]
    xs = torch.linspace(-2, 2, 81, dtype=torch.float64).unsqueeze(1)
    xs0 = torch.cat([torch.zeros(1, 1, dtype=torch.float64), xs])
    r_pm = evaluate_prior(models["pm"], xs0, max_iter=cfg.prior_max_iter, show_progress=show_progress)
    r_pm = (r_pm[1:] - r_pm[0]).numpy()
    prior_err = float(np.abs(r_pm - np.abs(xs.squeeze(1).numpy())).max())
    r_l2 = evaluate_prior(models["l2"], xs0, max_iter=cfg.prior_max_iter, show_progress=show_progress)
    r_l2 = (r_l2[1:] - r_l2[0]).numpy()
    eval_seconds["priors"] = time.perf_counter() - t0
    return {
        "models": models,
        "grid": grid.squeeze(1).numpy(),
        "outputs": {k: v.numpy() for k, v in outs.items()},
        "soft": soft.numpy(),
        "pm_soft_max_err": pm_err,
        "f_at_probe": at,
        "probe": [0.5, 1.0, 2.0, 3.0],
        "mmse_at_probe": laplace_posterior_mmse([0.5, 1.0, 2.0, 3.0], cfg.scale_b, cfg.sigma).tolist(),
        "median_at_probe": laplace_posterior_median([0.5, 1.0, 2.0, 3.0], cfg.scale_b, cfg.sigma).tolist(),
        "prior_x": xs.squeeze(1).numpy(),
        "prior_pm": r_pm,
        "prior_l2": r_l2,
        "prior_max_err": prior_err,
        "train_seconds": seconds,
        "eval_seconds": eval_seconds,
        "steps": steps,
    }


def _haar(x: torch.Tensor) -> torch.Tensor:
    """Orthonormal 2-D Haar transform of ``(B, n, n)`` (n a power of 2), all levels, in place of the LL block."""
    c = x.clone()
    n = c.shape[-1]
    while n > 1:
        q = c[:, :n, :n]
        a, b, d, e = q[:, 0::2, 0::2], q[:, 0::2, 1::2], q[:, 1::2, 0::2], q[:, 1::2, 1::2]
        h = n // 2
        out = torch.empty_like(q)
        out[:, :h, :h], out[:, :h, h:] = (a + b + d + e) / 2, (a - b + d - e) / 2
        out[:, h:, :h], out[:, h:, h:] = (a + b - d - e) / 2, (a - b - d + e) / 2
        c[:, :n, :n] = out
        n = h
    return c


def _ihaar(c: torch.Tensor) -> torch.Tensor:
    x = c.clone()
    n, full = 2, c.shape[-1]
    while n <= full:
        h = n // 2
        q = x[:, :n, :n]
        s, u, v, w = q[:, :h, :h], q[:, :h, h:], q[:, h:, :h], q[:, h:, h:]
        out = torch.empty_like(q)
        out[:, 0::2, 0::2], out[:, 0::2, 1::2] = (s + u + v + w) / 2, (s - u + v - w) / 2
        out[:, 1::2, 0::2], out[:, 1::2, 1::2] = (s + u - v - w) / 2, (s - u - v + w) / 2
        x[:, :n, :n] = out
        n *= 2
    return x


@functools.lru_cache(maxsize=8)
def _haar_matrices(side: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """``_haar`` and ``_ihaar`` on flattened ``side`` x ``side`` images as ``(side^2, side^2)`` matrices (row i: the
    transform of the i-th unit image), so a batch is transformed by one matmul: ``x @ fwd``, ``c @ inv``."""
    basis = torch.eye(side * side, dtype=dtype).reshape(-1, side, side)
    return _haar(basis).reshape(side * side, -1), _ihaar(basis).reshape(side * side, -1)


def haar_soft_threshold(tau: float, side: int = 8):
    """The classical prior tau * ||W x||_1 (W: orthonormal Haar wavelets, detail coefficients only) as a denoiser
    on flattened ``side`` x ``side`` images: its exact prox, soft-thresholding in the wavelet domain (the
    transforms of ``_haar`` / ``_ihaar`` applied as matrices, one matmul per batch)."""

    def den(x: torch.Tensor) -> torch.Tensor:
        fwd, inv = _haar_matrices(side, x.dtype)
        c = x.reshape(-1, side * side) @ fwd
        dc = soft_threshold(c, tau)
        dc[:, 0] = c[:, 0]  # the coarsest average is not penalised
        return (dc @ inv).reshape(x.shape)

    return den


@dataclass
class _Res:
    x: torch.Tensor


class UnconstrainedDenoiser(nn.Module):
    """The baseline: an unconstrained MLP of similar size (64 -> hidden x layers -> 64, Softplus), trained with l2."""

    def __init__(self, dim: int = 64, hidden: int = 256, layers: int = 3, beta: float = 10.0) -> None:
        super().__init__()
        mods: list[nn.Module] = [nn.Linear(dim, hidden), nn.Softplus(beta=beta)]
        for _ in range(layers - 1):
            mods += [nn.Linear(hidden, hidden), nn.Softplus(beta=beta)]
        mods.append(nn.Linear(hidden, dim))
        self.net = nn.Sequential(*mods)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y + self.net(y)  # residual, as denoisers usually are


@dataclass(frozen=True)
class DigitsConfig:
    """sklearn digits (8x8, train 1500 / test 297), sigma 0.1. MLP LPN input 64, hidden 256, 3 layers, beta 10,
    alpha 0.01; l1 for ``pretrain_steps`` at 1e-3, then 4 proximal-matching stages x ``stage_steps`` at 1e-4 with
    gamma_min = 0.08 * 8 = 0.64; batch 200. PnP-PGD: 40% of pixels missing, ``pnp_iters`` = 100 iterations in
    the setting the convergence theory covers (no clipping, so each iteration is an exact proximal-gradient step,
    and step 0.5 < 1/L with L = ||A^T A|| = 1); the same run gives the PSNR and the convergence curve, and goes on
    to ``converge_iters_long`` iterations for the curve's tail. The baseline PnP uses the unconstrained l2 MLP in
    the same run settings, and so does the classical baseline (Haar soft-threshold, its threshold picked from
    ``wavelet_taus`` on training images with another mask). The official setting (step ``official_step`` = 2, a
    clip to [0, 1], ``official_iters`` = 20) runs beside it on the same measurements. The PSNR is recorded along the
    iterations of both LPN runs."""

    sigma: float = 0.1
    hidden: int = 256
    layers: int = 3
    beta: float = 10.0
    alpha: float = 0.01
    pretrain_steps: int = 3000
    stage_steps: int = 1000
    num_stages: int = 4
    batch_size: int = 200
    n_test: int = 297
    prior_images: int = 100
    prior_sigmas: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.3)
    mix_lambdas: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    inpaint_missing: float = 0.4
    pnp_iters: int = 100
    pnp_step: float = 0.5
    pnp_clip: bool = False
    wavelet_taus: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2)  # chosen on training images, not test ones
    converge_iters_long: int = 500
    official_step: float = 2.0
    official_iters: int = 20
    pnp_images: int = 50
    seed: int = 0
    extra: dict = field(default_factory=dict)


def _train_lpn_and_l2(
    cfg: DigitsConfig | MnistConfig,
    train_x: torch.Tensor,
    make_lpn: Callable[[], nn.Module],
    make_baseline: Callable[[], nn.Module],
    show_progress: bool,
) -> tuple[nn.Module, nn.Module, int, float, float]:
    """Train the LPN on the official schedule (``pretrain_steps`` of l1, then ``num_stages`` proximal-matching
    stages of ``stage_steps``) and the unconstrained baseline on the same steps with l2 at lr 1e-3. Each model is
    built right after seeding torch (``seed``, then ``seed + 1``). Returns ``(lpn, baseline, steps, lpn seconds,
    baseline seconds)``."""
    total = cfg.pretrain_steps + cfg.num_stages * cfg.stage_steps
    tc = TrainConfig(
        num_steps=total,
        num_steps_pretrain=cfg.pretrain_steps,
        num_stages=cfg.num_stages,
        batch_size=cfg.batch_size,
        sigma_noise=cfg.sigma,
        seed=cfg.seed,
    )
    torch.manual_seed(cfg.seed)
    lpn = make_lpn()
    t0 = time.perf_counter()
    train(lpn, train_x, tc, show_progress=show_progress)
    t_lpn = time.perf_counter() - t0
    torch.manual_seed(cfg.seed + 1)
    base = make_baseline()
    t0 = time.perf_counter()
    train(base, train_x, replace(tc, loss="l2", lr=1e-3, seed=cfg.seed + 1), show_progress=show_progress)
    t_base = time.perf_counter() - t0
    return lpn, base, total, t_lpn, t_base


def run_digits(cfg: DigitsConfig, show_progress: bool = False, studies: bool = True) -> dict[str, Any]:
    """Train the LPN (official schedule) and the unconstrained l2 baseline on digits; measure denoising PSNR, the
    prior under noise and convex mixes, and PnP-PGD inpainting.

    ``studies=False`` measures only what the paired comparisons read (denoising PSNR and the 100-iteration PnP
    runs with the LPN, the l2 MLP and the wavelet prior): it skips the prior under noise and mixes, the long
    convergence tail and the step-1 clipped variant, which ``reproduce`` reads on the first seed only. The models
    and every number it returns are the same as with ``studies=True``."""
    train_x, test_x = digits_split(1500, seed=cfg.seed)
    test_x = test_x[: cfg.n_test]
    lpn, base, total, t_lpn, t_base = _train_lpn_and_l2(
        cfg,
        train_x,
        lambda: MLPLPN(in_dim=64, hidden=cfg.hidden, layers=cfg.layers, beta=cfg.beta, alpha=cfg.alpha),
        lambda: UnconstrainedDenoiser(64, cfg.hidden, cfg.layers, cfg.beta),
        show_progress,
    )  # the schedule's gamma_min = 0.08*sqrt(64)

    ev: dict[str, float] = {}
    t0 = time.perf_counter()
    g = torch.Generator().manual_seed(10_000 + cfg.seed)
    noisy = test_x + cfg.sigma * torch.randn(test_x.shape, generator=g)
    with torch.no_grad():
        out_base = base(noisy)
    out_lpn = lpn(noisy)
    psnrs = {"noisy": psnr(noisy, test_x), "lpn": psnr(out_lpn, test_x), "l2_mlp": psnr(out_base, test_x)}
    psnr_mean = {k: float(v.mean()) for k, v in psnrs.items()}
    outs = {"noisy": noisy, "lpn": out_lpn, "l2_mlp": out_base}
    ssim_mean = {
        k: float(ssim(v.detach().clamp(0, 1), test_x, image_shape=(8, 8)).mean()) for k, v in outs.items()
    }
    ev["denoise"] = time.perf_counter() - t0

    out = {"psnr": psnr_mean, "psnr_std": {k: float(v.std()) for k, v in psnrs.items()}, "ssim": ssim_mean}
    if studies:
        out.update(_digits_prior_study(lpn, test_x[: cfg.prior_images], cfg, g, ev, show_progress))
    # PnP-PGD on random inpainting. One run (step, clip as configured) gives both the PSNR and the convergence
    # curve; it continues to ``converge_iters_long`` iterations for the tail of the curve.
    xs = test_x[: cfg.pnp_images]
    op = inpainting_operator((64,), missing=cfg.inpaint_missing, seed=cfg.seed)
    y = op.A(xs)
    zero_fill = float(psnr(y, xs).mean())
    clip = (0.0, 1.0) if cfg.pnp_clip else None

    def pnp(den: Any, num_iter: int, x0: torch.Tensor | None = None, curve: list | None = None, **kw: Any):
        cb = None if curve is None else (lambda k, x: curve.append(float(psnr(x, xs).mean())))
        return pnp_pgd(
            y, op.A, op.At, den, step=kw.get("step", cfg.pnp_step), num_iter=num_iter, x0=x0,
            clip=kw.get("clip", clip), show_progress=show_progress, callback=cb,
        )  # fmt: skip

    t0 = time.perf_counter()
    psnr_curve: list[float] = []
    res = pnp(lpn, cfg.pnp_iters, curve=psnr_curve)
    ev["pnp_lpn"] = time.perf_counter() - t0
    out["pnp_psnr_curve"] = psnr_curve
    if studies:
        t0 = time.perf_counter()
        tail = pnp(lpn, max(1, cfg.converge_iters_long - cfg.pnp_iters), x0=res.x, curve=psnr_curve)
        ev["pnp_lpn_tail"] = time.perf_counter() - t0
        out.update(pnp_tail_step_norms=tail.step_norms, pnp_tail_psnr=float(psnr(tail.x, xs).mean()))
    t0 = time.perf_counter()
    res_mlp = pnp(base, cfg.pnp_iters)
    ev["pnp_l2_mlp"] = time.perf_counter() - t0
    # the classical baseline: Haar soft-threshold PnP (tau picked on training images with another mask seed)
    t0 = time.perf_counter()
    xc = train_x[: cfg.pnp_images]
    op_c = inpainting_operator((64,), missing=cfg.inpaint_missing, seed=cfg.seed + 7919)
    yc = op_c.A(xc)

    def calib(tau: float) -> float:
        r = pnp_pgd(yc, op_c.A, op_c.At, haar_soft_threshold(tau), step=cfg.pnp_step, num_iter=cfg.pnp_iters,
                    clip=clip)  # fmt: skip
        return float(psnr(r.x, xc).mean())

    calib_psnr = {tau: calib(tau) for tau in cfg.wavelet_taus}
    tau = max(calib_psnr, key=calib_psnr.get)
    res_wav = pnp(haar_soft_threshold(tau), cfg.pnp_iters)
    ev["pnp_wavelet"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    official_curve: list[float] = []
    official = pnp(lpn, cfg.official_iters, step=cfg.official_step, clip=(0.0, 1.0), curve=official_curve)
    ev["pnp_lpn_official"] = time.perf_counter() - t0
    out.update(
        official_psnr=official_curve[-1],
        official_step_norms=official.step_norms,
        official_psnr_curve=official_curve,
    )
    return {
        **out,
        "lpn": lpn,
        "baseline": base,
        "pnp_ssim": {
            k: float(ssim(r.x.clamp(0, 1), xs, image_shape=(8, 8)).mean())
            for k, r in (("lpn", res), ("l2_mlp", res_mlp), ("wavelet", res_wav), ("zero_fill", _Res(y)))
        },
        "pnp_psnr": float(psnr(res.x, xs).mean()),
        "pnp_mlp_psnr": float(psnr(res_mlp.x, xs).mean()),
        "zero_fill_psnr": zero_fill,
        "pnp_step_norms": res.step_norms,
        "pnp_mlp_step_norms": res_mlp.step_norms,
        "pnp_wavelet_psnr": float(psnr(res_wav.x, xs).mean()),
        "pnp_wavelet_tau": tau,
        "pnp_wavelet_calibration": {str(k): v for k, v in calib_psnr.items()},
        "eval_seconds": ev,
        "train_seconds": {"lpn": t_lpn, "l2_mlp": t_base},
        "steps": total,
        "examples": {
            "clean": xs[:8],
            "measured": y[:8],
            "pnp": res.x[:8],
            "pnp_mlp": res_mlp.x[:8],
            "noisy": noisy[:8],
            "lpn": out_lpn[:8].detach(),
        },
    }


def _digits_prior_study(
    lpn: MLPLPN, xp: torch.Tensor, cfg: DigitsConfig, g: torch.Generator, ev: dict, show_progress: bool
) -> dict[str, Any]:
    """The learned prior on ``xp`` under Gaussian noise (clipped to [0, 1]) and along convex mixes with the
    reversed list as partners. R of the clean images (sigma 0) is computed once and reused for lambda 0: the two
    inputs are the same tensor values, and the inversion is deterministic."""
    t0 = time.perf_counter()
    prior_noise, r_clean = [], None
    for s in progress(cfg.prior_sigmas, desc="prior vs noise", disable=None if show_progress else True):
        xn = (xp + s * torch.randn(xp.shape, generator=g)).clamp(0, 1)
        r = evaluate_prior(lpn, xn)
        if s == 0:
            r_clean = r
        prior_noise.append(float(r.mean()))
    ev["prior_noise"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    partner = xp.flip(0)
    mixes = {
        lam: r_clean
        if lam == 0 and r_clean is not None
        else evaluate_prior(lpn, (1 - lam) * xp + lam * partner)
        for lam in progress(cfg.mix_lambdas, desc="prior on mixes", disable=None if show_progress else True)
    }
    mid = mixes[0.5] if 0.5 in mixes else None
    frac_nonconvex = (
        float((mid > 0.5 * (mixes[0.0] + mixes[1.0])).double().mean())
        if mid is not None and 0.0 in mixes and 1.0 in mixes
        else None
    )
    ev["prior_mix"] = time.perf_counter() - t0
    return {
        "prior_sigmas": list(cfg.prior_sigmas),
        "prior_noise": prior_noise,
        "mix_lambdas": list(cfg.mix_lambdas),
        "prior_mix": [float(mixes[k].mean()) for k in cfg.mix_lambdas],
        "frac_nonconvex": frac_nonconvex,
    }


# -- MNIST with the paper's convolutional LPN ---------------------------------------------------------------------
class ConvDenoiser(PretrainedMixin, nn.Module):
    """The unconstrained baseline for 28x28 images: ``depth`` 3x3 convs (``hidden`` channels, Softplus between, no
    constraint), residual output. Trained with the l2 loss (``lpn train --arch conv-denoiser --loss l2``); saves and
    loads as a model folder (``save_pretrained`` / ``ConvDenoiser.from_pretrained``)."""

    arch = "conv-denoiser"

    def __init__(self, in_channels: int = 1, hidden: int = 16, depth: int = 5, beta: float = 10.0) -> None:
        super().__init__()
        for name, v in (("in_channels", in_channels), ("hidden", hidden), ("depth", depth)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"ConvDenoiser {name} must be a positive int, got {v!r}")
        if depth < 2:
            raise InputError(f"ConvDenoiser depth must be >= 2 (an input and an output conv), got {depth}")
        if not (isinstance(beta, int | float) and beta > 0):
            raise InputError(f"ConvDenoiser beta must be > 0, got {beta!r}")
        mods: list[nn.Module] = [nn.Conv2d(in_channels, hidden, 3, padding=1), nn.Softplus(beta=beta)]
        for _ in range(depth - 2):
            mods += [nn.Conv2d(hidden, hidden, 3, padding=1), nn.Softplus(beta=beta)]
        mods.append(nn.Conv2d(hidden, in_channels, 3, padding=1))
        self.net = nn.Sequential(*mods)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y + self.net(y)


def blur_images(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """Gaussian blur of ``(B, C, H, W)`` images as the official ``lpn/utils/perturb.py::blur_image`` does it
    (``scipy.ndimage.gaussian_filter`` over H, W, its default reflect border); sigma 0 returns the images."""
    if sigma == 0:
        return x.clone()
    from scipy.ndimage import gaussian_filter

    return torch.from_numpy(gaussian_filter(x.numpy(), sigma=(0, 0, sigma, sigma))).to(x.dtype)


@dataclass(frozen=True)
class MnistConfig:
    """MNIST (28x28, the paper's Sec. 5 study) with the official ``ConvLPN28`` architecture (official width: hidden
    64), beta 10, alpha 0.01, sigma 0.1, l1 pre-training then 4 proximal-matching stages (gamma_min = 0.08 * 28 =
    2.24). Training (``run_mnist`` only; ``reproduce`` evaluates shipped checkpoints instead): the first ``n_train``
    of the 50k training split. The evaluated images are the first ones of the 10k validation split (the official
    "test" split is ``mnist.npy[50000:55000]``, the same images).

    Prior study (``exps/mnist/configs/mnist/prior``): Gaussian noise ``prior_sigmas`` (clipped to [0, 1]), blur
    ``blur_sigmas``, convex mixes ``mix_lambdas`` with the reversed list as partners. PnP-PGD on 40 % random
    inpainting and Gaussian deblurring (blur ``deblur_sigma``, noise ``deblur_noise``), each with the LPN and the
    unconstrained ``ConvDenoiser``, in two settings: ours (step ``pnp_step``, no clip, ``pnp_iters``: each
    iteration an exact proximal-gradient step, step < 1/L) and the official one (step ``official_step`` = 2 with a
    clip to [0, 1], ``official_iters`` = 20, as ``exps/mnist`` runs it). The convergence run continues ours to
    ``converge_iters`` (the iteration the calibration fixed), recording the PSNR along the iterations."""

    hidden: int = 16
    beta: float = 10.0
    alpha: float = 0.01
    sigma: float = 0.1
    n_train: int = 50000
    pretrain_steps: int = 600
    stage_steps: int = 150
    num_stages: int = 4
    batch_size: int = 64
    baseline_hidden: int = 32
    n_test: int = 200
    prior_images: int = 20
    prior_sigmas: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.3)
    blur_sigmas: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 4.0)
    mix_lambdas: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    prior_max_iter: int = 300
    inpaint_missing: float = 0.4
    deblur_sigma: float = 1.0
    deblur_noise: float = 0.02
    pnp_images: int = 20
    pnp_iters: int = 100
    pnp_step: float = 0.5
    official_step: float = 2.0
    official_iters: int = 20
    converge_iters: int = 100
    seed: int = 0


def train_mnist(cfg: MnistConfig, train_x: torch.Tensor, show_progress: bool = False) -> dict[str, Any]:
    """Train ConvLPN28 (official schedule) and the unconstrained conv baseline (l2, lr 1e-3, same steps) on
    ``train_x`` ``(N, 1, 28, 28)``: what ``lpn train --arch conv28`` / ``--arch conv-denoiser`` do, in-process."""
    train_x = train_x[: cfg.n_train]
    lpn, base, total, t_lpn, t_base = _train_lpn_and_l2(
        cfg,
        train_x,
        lambda: ConvLPN28(hidden=cfg.hidden, beta=cfg.beta, alpha=cfg.alpha),
        lambda: ConvDenoiser(1, cfg.baseline_hidden, 5, cfg.beta),
        show_progress,
    )
    return {
        "lpn": lpn.eval(),
        "baseline": base.eval(),
        "steps": {"lpn": total, "conv_l2": total},
        "n_train": len(train_x),
        "train_seconds": {"lpn": t_lpn, "conv_l2": t_base},
    }


def run_mnist(
    cfg: MnistConfig, train_x: torch.Tensor, test_x: torch.Tensor, show_progress: bool = False
) -> dict[str, Any]:
    """Train both models (``train_mnist``) and evaluate them (``evaluate_mnist``) with every study."""
    _check_mnist(cfg, test_x, "test_x")
    if train_x.dim() != 4 or tuple(train_x.shape[1:]) != (1, 28, 28):
        raise InputError(f"train_x must be (N, 1, 28, 28), got {tuple(train_x.shape)}")
    trained = train_mnist(cfg, train_x, show_progress)
    res = evaluate_mnist(cfg, trained["lpn"], trained["baseline"], test_x, show_progress=show_progress)
    return {**res, **{k: trained[k] for k in ("steps", "n_train", "train_seconds")}}


def _check_mnist(cfg: MnistConfig, test_x: torch.Tensor, name: str) -> None:
    if test_x.dim() != 4 or tuple(test_x.shape[1:]) != (1, 28, 28):
        raise InputError(f"{name} must be (N, 1, 28, 28), got {tuple(test_x.shape)}")
    need = max(cfg.n_test, cfg.prior_images, cfg.pnp_images)
    if len(test_x) < need:
        raise InputError(f"{name} has {len(test_x)} images, the config needs {need}")


def params_of(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def evaluate_mnist(
    cfg: MnistConfig,
    lpn: nn.Module,
    base: nn.Module,
    test_x: torch.Tensor,
    *,
    studies: bool = True,
    converge: bool | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Measure a trained ConvLPN28 ``lpn`` and conv baseline ``base`` on ``test_x`` ``(N, 1, 28, 28)``: denoising
    PSNR/SSIM, PnP-PGD inpainting and deblurring (ours and the official setting, both denoisers), and with
    ``studies`` the prior under noise, blur and convex mixes; with ``converge`` (default: ``studies``) the inpainting
    run continued to ``cfg.converge_iters``. The noise, masks and measurements are seeded by ``cfg.seed``."""
    _check_mnist(cfg, test_x, "test_x")
    converge = studies if converge is None else converge
    lpn.eval()
    base.eval()
    ev: dict[str, float] = {}
    t0 = time.perf_counter()
    xt = test_x[: cfg.n_test]
    g = torch.Generator().manual_seed(20_000 + cfg.seed)
    noisy = xt + cfg.sigma * torch.randn(xt.shape, generator=g)
    with torch.no_grad():
        out_base = base(noisy)
    out_lpn = lpn(noisy).detach()
    outs = {"noisy": noisy, "lpn": out_lpn, "conv_l2": out_base}
    den_psnr = {k: float(psnr(v, xt).mean()) for k, v in outs.items()}
    den_ssim = {k: float(ssim(v, xt).mean()) for k, v in outs.items()}
    ev["denoise"] = time.perf_counter() - t0
    out: dict[str, Any] = {"psnr": den_psnr, "ssim": den_ssim}
    if studies:
        out.update(_mnist_prior_study(cfg, lpn, test_x[: cfg.prior_images], g, ev, show_progress))
    out["pnp"] = _mnist_pnp(cfg, lpn, base, test_x[: cfg.pnp_images], ev, converge, show_progress)
    xs = test_x[: cfg.pnp_images]
    return {
        **out,
        "lpn": lpn,
        "baseline": base,
        "params": {"lpn": params_of(lpn), "conv_l2": params_of(base)},
        "examples": {"clean": xs[:6], "noisy": noisy[:6], "lpn": out_lpn[:6]},
        "eval_seconds": ev,
    }


def _mnist_prior_study(cfg, lpn, xp, g, ev, show_progress) -> dict[str, Any]:
    def prior(x: torch.Tensor) -> torch.Tensor:
        return evaluate_prior(lpn, x, max_iter=cfg.prior_max_iter)

    def bar(seq, desc):
        return progress(seq, desc=desc, disable=None if show_progress else True)

    t0 = time.perf_counter()
    r_noise = [float(prior((xp + s * torch.randn(xp.shape, generator=g)).clamp(0, 1)).mean())
               for s in bar(cfg.prior_sigmas, "MNIST prior vs noise")]  # fmt: skip
    ev["prior_noise"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    r_blur = [float(prior(blur_images(xp, s)).mean()) for s in bar(cfg.blur_sigmas, "MNIST prior vs blur")]
    ev["prior_blur"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    partner = xp.flip(0)
    mixes = {
        lam: prior((1 - lam) * xp + lam * partner) for lam in bar(cfg.mix_lambdas, "MNIST prior on mixes")
    }
    frac = None
    if {0.0, 0.5, 1.0} <= set(mixes):
        frac = float((mixes[0.5] > 0.5 * (mixes[0.0] + mixes[1.0])).double().mean())
    ev["prior_mix"] = time.perf_counter() - t0
    return {
        "prior_sigmas": list(cfg.prior_sigmas),
        "prior_noise": r_noise,
        "blur_sigmas": list(cfg.blur_sigmas),
        "prior_blur": r_blur,
        "mix_lambdas": list(cfg.mix_lambdas),
        "prior_mix": [float(mixes[k].mean()) for k in cfg.mix_lambdas],
        "frac_nonconvex": frac,
    }


def _mnist_pnp(cfg, lpn, base, xs, ev, converge, show_progress) -> dict[str, Any]:
    """PnP-PGD inpainting and deblurring: ours and the official setting, with the LPN and the conv baseline; the
    PSNR along the iterations of the LPN runs; with ``converge`` the inpainting run continued to
    ``cfg.converge_iters``."""
    results: dict[str, Any] = {}
    ops = {
        "inpaint": (inpainting_operator((1, 28, 28), missing=cfg.inpaint_missing, seed=cfg.seed), 0.0),
        "deblur": (gaussian_blur_operator(cfg.deblur_sigma), cfg.deblur_noise),
    }
    gp = torch.Generator().manual_seed(30_000 + cfg.seed)
    for task, (op, noise) in ops.items():
        y = op.A(xs)
        y = y + noise * torch.randn(y.shape, generator=gp)
        r: dict[str, Any] = {"measurement_psnr": float(psnr(op.At(y), xs).mean())}
        for name, den in (("lpn", lpn), ("conv_l2", base)):
            for setting, step, iters, clip in (
                ("", cfg.pnp_step, cfg.pnp_iters, None),
                ("official_", cfg.official_step, cfg.official_iters, (0.0, 1.0)),
            ):
                curve: list[float] = []
                t0 = time.perf_counter()
                res = pnp_pgd(y, op.A, op.At, den, step=step, num_iter=iters, clip=clip, show_progress=show_progress,
                              callback=lambda k, x, c=curve: c.append(float(psnr(x, xs).mean())))  # fmt: skip
                ev[f"pnp_{task}_{setting}{name}"] = time.perf_counter() - t0
                r[f"{setting}{name}_psnr"] = curve[-1]
                r[f"{setting}{name}_psnr_curve"] = curve
                r[f"{setting}{name}_step_norms"] = res.step_norms
                if not setting:
                    r[f"{name}_ssim"] = float(ssim(res.x.clamp(0, 1), xs).mean())
                    r.setdefault("examples", {"measured": op.At(y)[:6]})[name] = res.x[:6]
                    if name == "lpn":
                        last = res.x
            if task == "inpaint" and name == "lpn" and converge and cfg.converge_iters > cfg.pnp_iters:
                t0 = time.perf_counter()
                curve = list(r["lpn_psnr_curve"])
                tail = pnp_pgd(y, op.A, op.At, lpn, step=cfg.pnp_step, num_iter=cfg.converge_iters - cfg.pnp_iters,
                               x0=last, clip=None, show_progress=show_progress,
                               callback=lambda k, x, c=curve: c.append(float(psnr(x, xs).mean())))  # fmt: skip
                ev["pnp_inpaint_converge"] = time.perf_counter() - t0
                r["converge_step_norms"] = r["lpn_step_norms"] + tail.step_norms
                r["converge_psnr_curve"] = curve
        results[task] = r
    return results


def pnp_convergence_iteration(step_norms: list[float], tol: float = 1e-4) -> int | None:
    """The first iteration k (1-based) after which ||x_{k+1} - x_k|| stays below ``tol`` to the end of the run
    (None if the last one is not below it)."""
    k = None
    for i in range(len(step_norms) - 1, -1, -1):
        if step_norms[i] < tol:
            k = i + 1
        else:
            break
    return k
