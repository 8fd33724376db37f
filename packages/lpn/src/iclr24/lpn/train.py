"""Training an LPN on denoising (Sec. 3.2): y = x + sigma * eps, f_theta(y) ~ x, the official loss schedule, W-layers
clamped after every step, resumable checkpoints, and data-parallel training under ``torchrun``.

Data parallel: under ``torchrun --nproc_per_node N`` (after :func:`iclr24.paperkit.distributed.init_distributed`),
each rank draws ``batch_size // N`` samples from its own seeded stream, gradients are averaged over ranks before
every step (an all-reduce, the same maths as DDP), and rank 0 writes the checkpoints.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from iclr24.paperkit import atomic_torch_save
from iclr24.paperkit import atomic_write_json
from iclr24.paperkit import progress
from iclr24.paperkit.distributed import all_reduce_mean
from iclr24.paperkit.distributed import broadcast_
from iclr24.paperkit.distributed import is_distributed
from iclr24.paperkit.distributed import is_main_process
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputFolderError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe

from .icnn import ICNN
from .icnn import build_model
from .loss import ScheduleStep
from .loss import Segment
from .loss import gamma_min_for
from .loss import loss_value
from .loss import official_schedule
from .loss import piecewise_schedule

__all__ = [
    "TrainConfig",
    "TrainResult",
    "NonFiniteLossError",
    "train",
    "schedule_for",
    "load_checkpoint",
    "load_model",
    "save_checkpoint",
    "CHECKPOINT_NAME",
]

CHECKPOINT_NAME = "checkpoint.pt"
MODEL_CONFIG_NAME = "model_config.json"

Sampler = Callable[[int, torch.Generator], torch.Tensor]


class NonFiniteLossError(RuntimeError, InputError):
    """Training met a NaN/inf loss; the message names the step and the last good checkpoint. A RuntimeError, and an
    InputError (the cause is the data or the hyper-parameters: a one-line user error in the CLI)."""


@dataclass(frozen=True)
class TrainConfig:
    """Denoising training of an LPN. Defaults are the official MNIST run (``lpn/train.py``): 40k steps, l1 for 20k
    at 1e-3, then 4 proximal-matching stages at 1e-4 with gamma_min = 0.08 sqrt(pixels), batch 200, sigma 0.1.

    ``loss``: "pm" (the official schedule above), or "l1"/"l2" at ``lr`` for every step (baselines).
    ``segments``: a custom piecewise schedule (overrides the above; e.g. the 1-D Laplacian notebook's).
    ``noise_range``: draw sigma uniformly in [lo, hi] instead of a fixed ``sigma_noise``: one sigma per batch, as the
    official ``train_step`` does (``noise_per_batch=True``), or one per sample (``noise_per_batch=False``).
    """

    num_steps: int = 40000
    num_steps_pretrain: int = 20000
    num_stages: int = 4
    gamma_min: float | None = None  # None: 0.08 * sqrt(pixels per sample)
    pretrain_lr: float = 1e-3
    lr: float = 1e-4
    batch_size: int = 200
    sigma_noise: float = 0.1
    noise_range: tuple[float, float] | None = None
    noise_per_batch: bool = True
    loss: str = "pm"
    segments: tuple[Segment, ...] | None = None
    checkpoint_dir: str | None = None
    checkpoint_every: int = 1000
    resume: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("num_steps", "batch_size", "checkpoint_every", "num_stages"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= 10**9:
                raise InputError(f"TrainConfig.{name} must be an int in [1, 10**9], got {v!r}")
        check_int(self.num_steps_pretrain, "TrainConfig.num_steps_pretrain", minimum=0, maximum=10**9)
        check_int(self.seed, "TrainConfig.seed", minimum=0, maximum=2**63 - 1)
        check_float(self.pretrain_lr, "TrainConfig.pretrain_lr", minimum=0, maximum=100, open_min=True)
        check_float(self.lr, "TrainConfig.lr", minimum=0, maximum=100, open_min=True)
        check_float(self.sigma_noise, "TrainConfig.sigma_noise", minimum=0)
        if self.gamma_min is not None:
            check_float(self.gamma_min, "TrainConfig.gamma_min", minimum=0, open_min=True)
        if self.loss not in ("pm", "l1", "l2"):
            raise InputError(f"TrainConfig.loss must be 'pm', 'l1' or 'l2', got {self.loss!r}")
        if self.loss == "pm" and self.segments is None and not 0 <= self.num_steps_pretrain < self.num_steps:
            raise InputError(
                f"num_steps_pretrain must be in [0, num_steps), got {self.num_steps_pretrain} with "
                f"num_steps={self.num_steps}"
            )
        for name in ("pretrain_lr", "lr"):
            if not getattr(self, name) > 0:
                raise InputError(f"TrainConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if not (self.sigma_noise >= 0 and math.isfinite(self.sigma_noise)):
            raise InputError(f"sigma_noise must be a finite number >= 0, got {self.sigma_noise!r}")
        if self.noise_range is not None and not (0 <= self.noise_range[0] <= self.noise_range[1]):
            raise InputError(f"noise_range must be (lo, hi) with 0 <= lo <= hi, got {self.noise_range!r}")
        if not isinstance(self.noise_per_batch, bool):
            raise InputError(f"noise_per_batch must be True or False, got {self.noise_per_batch!r}")
        if self.gamma_min is not None and not self.gamma_min > 0:
            raise InputError(f"gamma_min must be > 0, got {self.gamma_min!r}")
        if self.segments is not None:
            segs = tuple(Segment(**s) if isinstance(s, dict) else s for s in self.segments)
            if not segs:
                raise InputError("segments must not be empty")
            object.__setattr__(self, "segments", segs)
        if self.noise_range is not None:
            object.__setattr__(self, "noise_range", tuple(self.noise_range))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def schedule_for(config: TrainConfig, num_pixels: int) -> Callable[[int], ScheduleStep]:
    """The step -> (loss, gamma, lr) function that :func:`train` follows for ``config``."""
    if config.segments is not None:
        segs = config.segments
        return lambda step: piecewise_schedule(step, segs)
    if config.loss in ("l1", "l2"):
        return lambda step: ScheduleStep(config.loss, None, config.lr)
    gmin = config.gamma_min if config.gamma_min is not None else gamma_min_for(num_pixels)
    return lambda step: official_schedule(
        step,
        num_steps=config.num_steps,
        num_steps_pretrain=config.num_steps_pretrain,
        num_stages=config.num_stages,
        gamma_min=gmin,
        pretrain_lr=config.pretrain_lr,
        lr=config.lr,
    )


@dataclass
class TrainResult:
    """Per-step losses (this rank), the schedule actually used, and where the checkpoint is."""

    losses: list[float] = field(default_factory=list)
    gammas: list[float | None] = field(default_factory=list)
    start_step: int = 0
    end_step: int = 0
    checkpoint: Path | None = None


def _model_config(model: nn.Module) -> dict[str, Any] | None:
    return model.config() if isinstance(model, ICNN) else None


def save_checkpoint(
    path: str | Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    step: int,
    config: TrainConfig | None = None,
) -> Path:
    """Atomically write ``{step, model_state, optimizer_state, train_config, model_config}`` and, beside it,
    ``model_config.json`` (the architecture needed to rebuild the model)."""
    path = Path(path)
    if path.is_dir():
        raise InputFolderError(f"checkpoint path {path} is a folder; expected a file path", path)
    check_int(step, "step", minimum=0)
    mc = _model_config(model)
    state = {
        "step": int(step),
        "model_state": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "optimizer_state": optimizer.state_dict() if optimizer is not None else None,
        "train_config": config.to_dict() if config is not None else None,
        "model_config": mc,
    }
    atomic_torch_save(state, path)
    if mc is not None:
        atomic_write_json(path.parent / MODEL_CONFIG_NAME, mc)
    return path


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (``torch.load(weights_only=True)``)."""
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_NAME
    if not path.is_file():
        raise InputFileError(
            f"no checkpoint at {path}; train one with `lpn train --out DIR` (it writes DIR/{CHECKPOINT_NAME})"
        )
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unpickling failure is a bad file for the user
        raise InputError(f"{path} is not a readable LPN checkpoint ({type(e).__name__}: {e})") from None
    if not isinstance(ck, dict) or "model_state" not in ck:
        raise InputError(f"{path} is not an LPN checkpoint (expected a dict with 'model_state')")
    return ck


def _read_model_config(side: Path) -> dict[str, Any]:
    try:
        mc = json.loads(side.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{side} is not valid JSON ({e}); restore it or delete it") from None
    if not isinstance(mc, dict) or not isinstance(mc.get("arch"), str):
        raise InputError(f"{side} is not a model config (expected a JSON object with an 'arch' string)")
    return mc


def load_model(path: str | Path, arch: str | None = None, **expected: Any) -> ICNN:
    """Rebuild an LPN from a model folder (``save_pretrained``, ``lpn train``'s ``OUT/model``) or a training
    checkpoint (a ``checkpoint.pt`` or the folder holding it; its architecture from the checkpoint or the
    ``model_config.json`` beside it). ``arch`` / ``expected`` kwargs, when given, must match it (else ValueError)."""
    path = Path(path)
    if path.is_dir() and (path / "config.json").is_file() and not (path / CHECKPOINT_NAME).is_file():
        from iclr24.paperkit.pretrained import load_pretrained

        model = load_pretrained(path)
        if not isinstance(model, ICNN):
            raise InputError(f"{path} holds a {type(model).__name__}, not an LPN")
        found = model.config()
        if arch is not None and arch != found["arch"]:
            raise InputError(
                f"model folder {path} holds architecture {found['arch']!r}, but {arch!r} was asked for"
            )
        for k, v in expected.items():
            if k in found and found[k] != v:
                raise InputError(f"model folder {path} has {k}={found[k]!r}, but {k}={v!r} was asked for")
        return model.eval()
    ck = load_checkpoint(path)
    mc = ck.get("model_config")
    side = (path if path.is_dir() else path.parent) / MODEL_CONFIG_NAME
    side_mc = _read_model_config(side) if side.is_file() else None
    if mc is None:
        if side_mc is None:
            raise InputFileError(f"{path} carries no model config and {side} is missing")
        mc = side_mc
    elif side_mc is not None and side_mc != json.loads(json.dumps(mc)):  # compare as JSON (tuples -> lists)
        ref = json.loads(json.dumps(mc))
        diff = sorted(k for k in set(ref) | set(side_mc) if ref.get(k) != side_mc.get(k))
        raise InputError(
            f"{side} disagrees with the model config stored in the checkpoint (keys {', '.join(diff)}); "
            "the checkpoint's weights need its own config: restore or delete the JSON file"
        )
    mc = dict(mc)
    found_arch = mc.pop("arch", None)
    if arch is not None and arch != found_arch:
        raise InputError(f"checkpoint {path} holds architecture {found_arch!r}, but {arch!r} was asked for")
    for k, v in expected.items():
        if k in mc and mc[k] != v:
            raise InputError(f"checkpoint {path} has {k}={mc[k]!r}, but {k}={v!r} was asked for")
    model = build_model(found_arch, **mc)
    try:
        model.load_state_dict(ck["model_state"])
    except RuntimeError as e:
        raise InputError(f"checkpoint {path} does not match its architecture {found_arch!r}: {e}") from None
    return model.eval()


def _batch(data: torch.Tensor | Sampler, n: int, g: torch.Generator) -> torch.Tensor:
    if isinstance(data, torch.Tensor):
        idx = torch.randint(0, len(data), (n,), generator=g)
        return data[idx]
    return data(n, g)


def _check_data(data: Any, model: nn.Module) -> None:
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be an LPN (an nn.Module), got {describe(model)}")
    if isinstance(data, torch.Tensor):
        check_tensor(data, "training data", kind="float", allow_empty=True)
        w = next(iter(model.parameters()), None)
        if w is not None and w.dtype != data.dtype:
            raise InputError(
                f"training data is {data.dtype} but the model's weights are {w.dtype}: convert one"
            )
        if data.dim() == 0 or len(data) == 0:
            raise InputError("training data is empty")
        if not torch.isfinite(data).all():
            raise InputError("training data contains NaN or inf")
        if isinstance(model, ICNN) and tuple(data.shape[1:]) != tuple(model.input_shape):
            raise InputError(
                f"training data has sample shape {tuple(data.shape[1:])}, the model expects "
                f"{tuple(model.input_shape)}"
            )
    elif not callable(data):
        raise InputError(
            f"data must be a tensor (N, ...) of clean samples or a sampler (n, generator) -> "
            f"tensor, got {type(data).__name__}"
        )


def draw_sigma(config: TrainConfig, x: torch.Tensor, g: torch.Generator) -> float | torch.Tensor:
    """The noise level of one training batch ``x``: ``sigma_noise``, or uniform in ``noise_range`` (one value for the
    batch, as the official code draws it, or one per sample with ``noise_per_batch=False``)."""
    if config.noise_range is None:
        return config.sigma_noise
    lo, hi = config.noise_range
    n = 1 if config.noise_per_batch else len(x)
    return lo + (hi - lo) * torch.rand((n,) + (1,) * (x.dim() - 1), generator=g).to(x.device)


def train(
    model: nn.Module,
    data: torch.Tensor | Sampler,
    config: TrainConfig,
    *,
    show_progress: bool = True,
    device: str | torch.device = "cpu",
    on_step: Callable[[int, nn.Module, float], None] | None = None,
    callbacks: Any = None,
    log_dir: str | Path | None = None,
) -> TrainResult:
    """Train ``model`` to denoise ``data`` following ``config`` (see :class:`TrainConfig`).

    ``data``: clean samples ``(N, ...)``, a ``Dataset`` or ``DataLoader`` of them (items ``x`` or ``(x, label)``,
    labels ignored; read once into the same tensor, so the same run), or a sampler ``(n, generator) -> (n, ...)``.
    After every optimiser step the W-layers are clamped to >= 0. With ``config.checkpoint_dir`` a checkpoint is
    written every ``checkpoint_every`` steps and at the end; with ``config.resume`` training continues from it,
    exactly: every batch and its noise come from a generator seeded by (seed, step, rank), so an interrupted and
    resumed run equals the uninterrupted one bit for bit. A NaN/inf loss stops training with
    :class:`NonFiniteLossError` naming the step (the checkpoint left is the last good state).
    ``on_step(step, model, loss)`` is called after every optimiser step (and weight clamp); ``callbacks``
    (``f(step, metrics)`` or objects with ``on_step``/``on_end``) and ``log_dir`` (``metrics.jsonl``, TensorBoard
    when installed) get ``{loss, lr, gamma}`` at every step (rank 0 under torchrun).
    """
    from iclr24.paperkit.data.user import as_tensors
    from iclr24.paperkit.data.user import is_user_data
    from iclr24.paperkit.tracking import StepLog

    if is_user_data(data):
        parts = as_tensors(data, what="training data")
        if len(parts) > 2:
            raise InputError(f"training data: items must be x or (x, label), got {len(parts)} fields")
        data = parts[0]
    _check_data(data, model)
    world = torch.distributed.get_world_size() if is_distributed() else 1
    rank = torch.distributed.get_rank() if is_distributed() else 0
    if config.batch_size % world:
        raise InputError(
            f"batch_size {config.batch_size} must be divisible by the number of processes {world}"
        )
    per_rank = config.batch_size // world
    device = torch.device(device)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    ck_path = Path(config.checkpoint_dir) / CHECKPOINT_NAME if config.checkpoint_dir else None
    start = 0
    if ck_path is not None and config.resume and ck_path.is_file():
        ck = load_checkpoint(ck_path)
        saved_mc, mc = ck.get("model_config"), _model_config(model)
        if saved_mc is not None and mc is not None and saved_mc != mc:
            raise InputError(
                f"checkpoint {ck_path} was trained with model {saved_mc}, not {mc}; use another "
                "checkpoint_dir or resume=False"
            )
        model.load_state_dict(ck["model_state"])
        if ck.get("optimizer_state") is not None:
            opt.load_state_dict(ck["optimizer_state"])
        start = int(ck["step"])
    for p in model.parameters():  # all ranks start from rank 0's weights
        broadcast_(p.data)
    sample_shape = tuple(data.shape[1:]) if isinstance(data, torch.Tensor) else None
    num_pixels = math.prod(sample_shape) if sample_shape else math.prod(getattr(model, "input_shape", (1,)))
    sched = schedule_for(config, num_pixels)
    result = TrainResult(start_step=start, end_step=start, checkpoint=ck_path)
    main = is_main_process()
    log = StepLog(log_dir if main else None, callbacks if main else None, name="lpn")
    try:
        _loop(model, data, config, opt, sched, result, log, ck_path, start, per_rank, rank, world, device,
              show_progress, on_step)  # fmt: skip
        log.close({"loss": result.losses[-1]} if result.losses else None)
    finally:
        log.close()
    if world > 1:  # every rank must end with the same weights (gradients were averaged)
        flat = torch.cat([p.detach().flatten() for p in model.parameters()])
        ref = broadcast_(flat.clone())
        if not torch.equal(flat, ref):
            raise RuntimeError(f"rank {rank}: parameters diverged from rank 0 during data-parallel training")
    model.eval()
    return result


def _loop(model, data, config, opt, sched, result, log, ck_path, start, per_rank, rank, world, device,
          show_progress, on_step) -> None:  # fmt: skip
    """The training steps of :func:`train`."""
    model.train()
    bar = progress(
        range(start, config.num_steps),
        desc=f"train {config.loss}",
        disable=not show_progress or not is_main_process() or None,
    )
    for step in bar:
        s = sched(step)
        for group in opt.param_groups:
            group["lr"] = s.lr
        g = torch.Generator().manual_seed((config.seed * 1_000_003 + step) * 257 + rank)
        x = _batch(data, per_rank, g).to(device)
        sig = draw_sigma(config, x, g)
        y = x + sig * torch.randn(x.shape, generator=g).to(device)
        pred = model(y)
        loss = loss_value(s.loss, pred, x, s.gamma)
        loss_all = all_reduce_mean(loss.detach().clone())
        if not torch.isfinite(loss_all):
            if ck_path is not None and is_main_process():
                save_checkpoint(ck_path, model, opt, step, config)
            where = f"; the last good state (before step {step}) is in {ck_path}" if ck_path else ""
            raise NonFiniteLossError(f"non-finite loss ({float(loss_all)}) at step {step}{where}")
        opt.zero_grad(set_to_none=False)
        loss.backward()
        if world > 1:
            for p in model.parameters():
                if p.grad is not None:
                    all_reduce_mean(p.grad)
        opt.step()
        if isinstance(model, ICNN):
            model.clamp_weights()  # keep W_k >= 0 after every step (convexity of psi)
        result.losses.append(float(loss_all))
        result.gammas.append(s.gamma)
        result.end_step = step + 1
        if on_step is not None:
            on_step(step, model, float(loss_all))
        row = {"loss": result.losses[-1], "lr": s.lr}
        if s.gamma is not None:
            row["gamma"] = s.gamma
        log(step + 1, row)
        if (
            ck_path is not None
            and is_main_process()
            and ((step + 1) % config.checkpoint_every == 0 or step + 1 == config.num_steps)
        ):
            save_checkpoint(ck_path, model, opt, step + 1, config)
