"""Fitting a coordinate network to one signal (the paper's training loop) and the fidelity metrics.

Training (Sec. 4 and the official ``train_image``): MSE on the signal, Adam at ``lr = 1e-4`` with cosine
annealing to ``1e-5`` over the run; full batch (every point each step), batches of points drawn at random, or the
official uniform-grid batches (:mod:`.sampling`, the megapixel runs' ``train_megapixel``: epochs over a fixed
partition of the grid, the cosine stepped once per epoch). In full-batch mode ASMR trains through its
activation-sharing :meth:`~iclr24.asmr.ASMR.render`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe
from iclr24.paperkit.io import fields_dict
from iclr24.paperkit.resume import check_checkpoint_arg
from iclr24.paperkit.tracking import StepLog

from .decomposition import grid_coords
from .sampling import uniform_grid_batches

__all__ = ["FitResult", "NonFiniteLossError", "fit", "psnr", "ssim", "signal_from_points", "signal_tensor"]


class NonFiniteLossError(FloatingPointError, InputError):
    """The fit's loss became NaN/inf (a too-large learning rate): an InputError, still a FloatingPointError."""


def _signal_values(x: object, name: str) -> torch.Tensor:
    """A metric's input as a finite, non-empty float64 CPU tensor (from a tensor or an array)."""
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            raise InputError(f"{name} must be real, got {describe(x)}")
        t = x.detach().cpu().double()
    else:
        t = torch.from_numpy(check_array(x, name, allow_empty=True, finite=False))
    check_tensor(t, name, finite=True)
    return t


def psnr(
    pred: torch.Tensor | np.ndarray, target: torch.Tensor | np.ndarray, data_range: float = 1.0
) -> float:
    """Peak signal-to-noise ratio ``10 log10(data_range^2 / MSE)`` in dB (``inf`` for a perfect match). Empty or
    non-finite input is an InputError, not a NaN."""
    p = _signal_values(pred, "pred")
    t = _signal_values(target, "target")
    check_float(data_range, "data_range", minimum=0, maximum=1e100, open_min=True)
    if p.shape != t.shape:
        raise InputError(
            f"pred and target must have the same shape, got {tuple(p.shape)} and {tuple(t.shape)}"
        )
    if not data_range > 0:
        raise InputError(f"data_range must be > 0, got {data_range}")
    mse = float(((p - t) ** 2).mean())
    return math.inf if mse == 0 else 10.0 * math.log10(data_range**2 / mse)


def ssim(
    pred: torch.Tensor | np.ndarray,
    target: torch.Tensor | np.ndarray,
    data_range: float = 1.0,
    n_spatial: int = 2,
) -> float | None:
    """Structural similarity (scikit-image, Gaussian-free 7x7 windows) of images ``(H, W)`` / ``(H, W, C)``; for
    video ``(T, H, W[, C])`` (``n_spatial=3``) the mean over frames. ``None`` for 1-D signals or images smaller
    than 7x7."""
    from skimage.metrics import structural_similarity

    p = _signal_values(pred, "pred").numpy()
    t = _signal_values(target, "target").numpy()
    check_float(data_range, "data_range", minimum=0, maximum=1e100, open_min=True)
    check_int(n_spatial, "n_spatial", minimum=0, maximum=3)  # 2: images, 3: video; others have no SSIM
    if p.shape != t.shape:
        raise InputError(f"pred and target must have the same shape, got {p.shape} and {t.shape}")
    if n_spatial == 3:
        vals = [ssim(p[k], t[k], data_range, 2) for k in range(p.shape[0])]
        return None if any(v is None for v in vals) else float(np.mean(vals))
    if n_spatial != 2 or p.ndim < 2 or min(p.shape[:2]) < 7:
        return None
    if p.ndim == 3 and p.shape[-1] == 1:
        p, t = p[..., 0], t[..., 0]
    channel_axis = -1 if p.ndim == 3 else None
    return float(structural_similarity(t, p, data_range=data_range, channel_axis=channel_axis))


def signal_tensor(signal: torch.Tensor | np.ndarray, data_shape: Sequence[int], dim_out: int) -> torch.Tensor:
    """Check a signal against a model's grid and return it as float ``(prod S_a, dim_out)`` (row-major).

    Accepts ``(*data_shape)`` when ``dim_out == 1`` or ``(*data_shape, dim_out)``."""
    if not isinstance(signal, torch.Tensor | np.ndarray):
        raise InputError(f"signal must be a numpy array or torch tensor, got {type(signal).__name__}")
    t = torch.as_tensor(np.asarray(signal) if isinstance(signal, np.ndarray) else signal)
    if t.dtype == torch.bool or t.is_complex():
        raise InputError(f"signal must hold real numbers, got dtype {t.dtype}")
    t = t.to(torch.float32) if not t.dtype.is_floating_point else t
    shape = tuple(data_shape)
    if tuple(t.shape) == shape and dim_out == 1:
        t = t.unsqueeze(-1)
    if tuple(t.shape) != shape + (dim_out,):
        raise InputError(
            f"signal has shape {tuple(t.shape)} but the model expects {shape + (dim_out,)}"
            + (f" or {shape}" if dim_out == 1 else "")
            + "; build the model with this signal's "
            "shape and channels (data_shape, dim_out)"
        )
    if not bool(torch.isfinite(t).all()):
        raise InputError("signal contains NaN or infinite values; clean or clip it first")
    return t.reshape(-1, dim_out)


@dataclass
class FitResult:
    """What :func:`fit` returns. ``psnr``/``ssim`` are of the final model's prediction clipped to
    ``value_range``; ``best_psnr`` is the best full-batch training PSNR seen (the official report). ``seconds``
    is the wall time of the training loop, ``cpu_seconds`` its process CPU time (all threads)."""

    psnr: float
    ssim: float | None
    best_psnr: float
    final_loss: float
    steps: int
    seconds: float
    seconds_per_step: float
    cpu_seconds: float
    losses: list[float] = field(default_factory=list)
    prediction: torch.Tensor | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        """The numbers, without the loss curve and the prediction."""
        return fields_dict(self, leave_out=("losses", "prediction"))


def signal_from_points(points: object, data_shape: Sequence[int], dim_out: int) -> torch.Tensor:
    """The signal ``(*data_shape, dim_out)`` from a torch ``Dataset`` of ``(coord, value)`` items or a
    ``DataLoader`` of such batches: integer coordinates ``(D,)`` in ``0 <= p_a < S_a`` and values ``(dim_out,)``
    (or scalars when ``dim_out == 1``); every grid point exactly once, in any order (read once)."""
    from iclr24.paperkit.data.user import as_tensors

    coords, values = as_tensors(points, fields=2, what="signal points (coord, value)")
    shape = tuple(int(s) for s in data_shape)
    if coords.ndim == 1 and len(shape) == 1:
        coords = coords[:, None]
    if values.ndim == 1 and dim_out == 1:
        values = values[:, None]
    if coords.ndim != 2 or coords.shape[1] != len(shape) or values.shape != (coords.shape[0], dim_out):
        raise InputError(
            f"signal points must be (coord ({len(shape)},), value ({dim_out},)) pairs, got coords "
            f"{tuple(coords.shape)} and values {tuple(values.shape)} in all"
        )
    if coords.dtype.is_floating_point or coords.dtype == torch.bool or coords.is_complex():
        raise InputError(f"signal point coordinates must be integer indices, got dtype {coords.dtype}")
    size = torch.tensor(shape)
    if bool((coords < 0).any()) or bool((coords >= size).any()):
        raise InputError(
            f"signal point coordinates out of range: each axis a needs 0 <= p < S_a, S = {shape}"
        )
    n = math.prod(shape)
    strides = torch.tensor([math.prod(shape[a + 1 :]) for a in range(len(shape))])
    flat = (coords.long() * strides).sum(1)
    if coords.shape[0] != n or torch.unique(flat).numel() != n:
        raise InputError(
            f"signal points must cover the {'x'.join(map(str, shape))} grid once each ({n} points), got "
            f"{coords.shape[0]} points at {torch.unique(flat).numel()} distinct coordinates"
        )
    out = torch.empty(n, dim_out, dtype=values.dtype if values.dtype.is_floating_point else torch.float32)
    out[flat] = values.to(out.dtype)
    return out.reshape(*shape, dim_out)


def fit(
    model: nn.Module,
    signal: torch.Tensor | np.ndarray,
    steps: int = 10_000,
    *,
    lr: float = 1e-4,
    lr_min: float = 1e-5,
    batch_size: int | None = None,
    sampler: str = "random",
    grid_cells: Sequence[int] | None = None,
    value_range: tuple[float, float] = (0.0, 1.0),
    seed: int | None = None,
    show_progress: bool = False,
    log_every: int = 1,
    callbacks=None,
    log_dir=None,
    checkpoint=None,
    resume: bool = False,
    checkpoint_every: int = 1000,
) -> FitResult:
    """Fit ``model`` (:class:`~iclr24.asmr.ASMR` or :class:`~iclr24.asmr.SIREN`) to ``signal``.

    Args:
        signal: ``(*model.data_shape[, dim_out])`` float values (images in [0, 1]).
        steps: optimiser steps (the paper: 10,000).
        lr, lr_min: Adam's learning rate, cosine-annealed to ``lr_min`` over ``steps`` (paper: 1e-4 -> 1e-5).
        batch_size: ``None`` = full batch (ASMR through its shared render); else batches of points evaluated with
            the per-coordinate forward, drawn as ``sampler`` says.
        sampler: ``"random"``: each step draws ``batch_size`` points uniformly at random (with replacement), the
            cosine is stepped every step. ``"grid"``: the official uniform grid sampler
            (:func:`~iclr24.asmr.sampling.uniform_grid_batches`, ``grid_cells`` cells per axis, 16 by default): a
            fixed partition of the grid into batches with equal points per cell, visited in order every epoch;
            ``steps`` must be a whole number of epochs, and the cosine runs over the epochs, stepped once per epoch
            (the official ``train_megapixel``).
        value_range: the signal's range; predictions are clipped to it for PSNR/SSIM, ``data_range = hi - lo``.
            A signal with values outside it is refused (PSNR against a clipped prediction would be meaningless):
            rescale the signal or pass its range.
        seed: seeds the batch sampler (the model's init is the caller's).
        log_every: record the loss every this many steps (also how often ``log_dir`` gets a row).
        callbacks, log_dir: paperkit's :class:`~iclr24.paperkit.tracking.StepLog`, called after every step with
            ``loss`` and ``lr`` (and the training ``psnr`` in full-batch mode); ``log_dir`` writes
            ``metrics.jsonl`` and, when ``tensorboard`` is installed, TensorBoard event files.
        checkpoint: a training-state file written every ``checkpoint_every`` steps and at the end (the model,
            Adam, the cosine schedule, the sampler's generator, the losses); with ``resume=True`` an existing one
            is continued, and the resumed fit ends bit for bit as the uninterrupted one.

    ``signal`` may also be a torch ``Dataset`` of ``(coord, value)`` points or a ``DataLoader`` of such batches
    that covers the grid once (:func:`signal_from_points`): the fit equals the fit on the assembled signal.
    """
    if not hasattr(model, "render") or not hasattr(model, "data_shape"):
        raise InputError(f"fit expects an ASMR or SIREN model, got {type(model).__name__}")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 10**8:
        raise InputError(f"steps must be an int in [1, 10**8], got {steps!r}")
    check_int(log_every, "log_every", minimum=1)
    check_float(lr, "lr", minimum=0, maximum=100, open_min=True)
    check_float(lr_min, "lr_min", minimum=0, maximum=100)
    if not (lr > 0 and lr_min >= 0 and math.isfinite(lr) and math.isfinite(lr_min)):
        raise InputError(f"lr must be > 0 and lr_min >= 0, got lr={lr}, lr_min={lr_min}")
    if not isinstance(value_range, tuple | list) or len(value_range) != 2:
        raise InputError(f"value_range must be (lo, hi), got {value_range!r}")
    lo, hi = (check_float(v, "value_range") for v in value_range)
    if not hi > lo:
        raise InputError(f"value_range must be (lo, hi) with hi > lo, got {value_range}")
    n_points = math.prod(model.data_shape)
    if batch_size is not None and (
        isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
    ):
        raise InputError(f"batch_size must be a positive int or None (full batch), got {batch_size!r}")
    if sampler not in ("random", "grid"):
        raise InputError(f"sampler must be 'random' or 'grid', got {sampler!r}")
    check_int(checkpoint_every, "checkpoint_every", minimum=1, maximum=10**9)
    check_checkpoint_arg(
        checkpoint, resume, written="the training-state file", example="model.train_state.pt"
    )
    from iclr24.paperkit.data.user import is_user_data

    if is_user_data(signal):
        signal = signal_from_points(signal, model.data_shape, model.dim_out)
    gen = torch.Generator(device="cpu").manual_seed(0 if seed is None else int(seed))
    batches = None
    if sampler == "grid":
        if batch_size is None:
            raise InputError(
                "sampler='grid' needs a batch_size (points per batch; the grid is split into epochs)"
            )
        batches = uniform_grid_batches(model.data_shape, batch_size, grid_cells, generator=gen)
        if steps % batches.shape[0]:
            raise InputError(
                f"with sampler='grid' steps must be a whole number of epochs of {batches.shape[0]} batches "
                f"(batch_size {batch_size} on {n_points} points), got steps={steps}"
            )
    elif grid_cells is not None:
        raise InputError("grid_cells applies to sampler='grid' only")
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    target = signal_tensor(signal, model.data_shape, model.dim_out).to(device=device, dtype=dtype)
    s_lo, s_hi = float(target.min()), float(target.max())
    tol = 1e-6 * (hi - lo)
    if s_lo < lo - tol or s_hi > hi + tol:
        raise InputError(
            f"signal values span [{s_lo:.4g}, {s_hi:.4g}], outside value_range ({lo:g}, {hi:g}); rescale the "
            f"signal into ({lo:g}, {hi:g}) (images: [0, 1]) or pass value_range=(lo, hi) covering it"
        )
    coords = grid_coords(model.data_shape, device=device) if sampler == "random" and batch_size else None
    if batches is not None:
        batches = batches.to(device)
        flat = torch.tensor([math.prod(model.data_shape[a + 1 :]) for a in range(len(model.data_shape))])
        flat_idx = (batches.cpu() * flat).sum(-1).to(device)  # row-major index of every batched point
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    per_epoch = batches.shape[0] if batches is not None else 1
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps // per_epoch, eta_min=lr_min)
    losses: list[float] = []
    best = -math.inf
    start, before = 0, (0.0, 0.0)
    meta = {"model": model.config() if hasattr(model, "config") else None, "steps": steps, "lr": lr,
            "lr_min": lr_min, "batch_size": batch_size, "sampler": sampler, "seed": seed, "n_points": n_points}  # fmt: skip
    if resume and Path(checkpoint).is_file():
        from iclr24.paperkit.resume import load_train_state

        saved: dict = {}
        start = load_train_state(checkpoint, model=model, optimizer=opt, scheduler=sched, generators={"batches": gen},
                                 expect=meta, into=saved, what="asmr training state")  # fmt: skip
        losses, best = list(saved["losses"]), float(saved["best"])
        before = (float(saved["seconds"]), float(saved["cpu_seconds"]))

    def save_state(done: int) -> None:
        from iclr24.paperkit.resume import save_train_state

        extra = {"losses": losses, "best": best, "seconds": before[0] + time.perf_counter() - t0,
                 "cpu_seconds": before[1] + time.process_time() - c0}  # fmt: skip
        save_train_state(checkpoint, step=done, model=model, optimizer=opt, scheduler=sched,
                         generators={"batches": gen}, meta=meta, extra=extra)  # fmt: skip

    log = StepLog(log_dir, callbacks, name="asmr", every=log_every)
    model.train()
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        for step in progress(range(start, steps), desc="fit", disable=not show_progress):
            if batches is not None:
                k = step % per_epoch
                pred, y = model(batches[k]), target[flat_idx[k]]
            elif batch_size is None or batch_size >= n_points:
                pred, y = model.render(), target
            else:
                idx = torch.randint(0, n_points, (batch_size,), generator=gen).to(device)
                pred, y = model(coords[idx]), target[idx]
            loss = torch.mean((pred - y) ** 2)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            lr_now = opt.param_groups[0]["lr"]
            opt.step()
            if (step + 1) % per_epoch == 0:
                sched.step()
            lv = float(loss.detach())
            if not math.isfinite(lv):
                raise NonFiniteLossError(f"the loss became {lv} at step {step}; lower lr (now {lr})")
            metrics = {"loss": lv, "lr": lr_now}
            if batch_size is None:
                metrics["psnr"] = 10 * math.log10((hi - lo) ** 2 / max(lv, 1e-30))
                best = max(best, metrics["psnr"])
            if step % log_every == 0 or step == steps - 1:
                losses.append(lv)
            log(step, metrics)
            if checkpoint is not None and ((step + 1) % checkpoint_every == 0 or step + 1 == steps):
                save_state(step + 1)
    except BaseException:
        log.close()
        raise
    seconds, cpu_seconds = before[0] + time.perf_counter() - t0, before[1] + time.process_time() - c0
    log.close({"final_loss": losses[-1], "steps": steps})
    model.eval()
    with torch.no_grad():
        pred = model.render(chunk_size=1 << 20).clamp(lo, hi)
    shape = tuple(model.data_shape) + (model.dim_out,)
    p_img, t_img = pred.reshape(shape).cpu(), target.reshape(shape).cpu()
    final_psnr = psnr(p_img, t_img, hi - lo)
    if batch_size is not None or best == -math.inf:
        best = final_psnr
    n_spatial = {2: 2, 3: 3}.get(len(model.data_shape), 0)
    s = ssim(p_img, t_img, hi - lo, n_spatial) if n_spatial else None
    return FitResult(
        psnr=final_psnr,
        ssim=s,
        best_psnr=max(best, final_psnr),
        final_loss=losses[-1],
        steps=steps,
        seconds=seconds,
        seconds_per_step=seconds / steps,
        cpu_seconds=cpu_seconds,
        losses=losses,
        prediction=p_img,
    )
