"""A plain FIF training loop: Adam + one-cycle LR (official ``configs/fif``), optional NLL warm-up, non-finite
guard, checkpoints that resume exactly, and data-parallel training under ``torchrun`` (gradients all-reduced).

One ``torch.Generator`` drives batch indices, SoftFlow noise and the Hutchinson probes; its state is in the
checkpoint, so ``fit(steps=N)`` equals ``fit(steps=k)`` + resume to ``N`` bit for bit on the same device.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import fields
from pathlib import Path
from typing import Any

import torch

from iclr24.paperkit import atomic_torch_save
from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputFolderError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

from .data import check_data
from .model import FreeFormInjectiveFlow

__all__ = [
    "TrainConfig",
    "NonFiniteLossError",
    "fit",
    "save_checkpoint",
    "load_checkpoint",
    "nll_warmup_weight",
]

CHECKPOINT_FORMAT = "iclr24-fif/1"


class NonFiniteLossError(InputError):
    """Training hit a NaN/inf loss or gradient (``on_nonfinite="stop"``); ``step`` names the step."""

    def __init__(self, step: int, checkpoint: str | None):
        self.step = step
        self.checkpoint = checkpoint
        kept = f"; the last good checkpoint is {checkpoint}" if checkpoint else "; no checkpoint was written"
        super().__init__(
            f"non-finite loss or gradient at step {step}{kept} (try a smaller lr or a larger beta)"
        )


@dataclass(frozen=True)
class TrainConfig:
    """Training options; defaults are the official toy config (``configs/fif/toy.yaml``) except ``steps``."""

    steps: int = 3000
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.0
    one_cycle: bool = True
    warm_up_steps: tuple[int, int] = (
        0,
        0,
    )  # NLL weight ramps 0 -> 1 over [start, end) (official warm_up_epochs)
    grad_clip: float | None = None
    on_nonfinite: str = "stop"  # "stop" (raise, keep last checkpoint) or "skip" (official SkipBatch)
    max_skips: int = 10
    seed: int = 0
    checkpoint_every: int = 0  # 0: only at the end (when a checkpoint path is given)

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10**9:
                raise InputError(f"{name} must be an int >= 1 (at most 10**9), got {v!r}")
        check_int(self.max_skips, "max_skips", minimum=0, maximum=10**9)
        check_int(self.seed, "seed", minimum=0, maximum=2**63 - 1)
        check_float(self.weight_decay, "weight_decay", minimum=0)
        if self.grad_clip is not None:
            check_float(self.grad_clip, "grad_clip", minimum=0, open_min=True)
        if not (isinstance(self.lr, int | float) and math.isfinite(self.lr) and self.lr > 0):
            raise InputError(f"lr must be a positive finite number, got {self.lr!r}")
        if not (isinstance(self.weight_decay, int | float) and self.weight_decay >= 0):
            raise InputError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        if self.on_nonfinite not in ("stop", "skip"):
            raise InputError(f"on_nonfinite must be 'stop' or 'skip', got {self.on_nonfinite!r}")
        if not isinstance(self.warm_up_steps, tuple | list) or len(self.warm_up_steps) != 2:
            raise InputError(f"warm_up_steps must be (start, end), got {self.warm_up_steps!r}")
        s, e = self.warm_up_steps
        for v in (s, e):
            check_int(v, "warm_up_steps", minimum=0, maximum=10**9)
        if s < 0 or (s > 0 and e <= s):
            raise InputError(
                f"warm_up_steps must be (start, end) with 0 <= start < end, got {self.warm_up_steps}"
            )
        if self.checkpoint_every < 0:
            raise InputError(f"checkpoint_every must be >= 0, got {self.checkpoint_every}")


def nll_warmup_weight(step: int, start: int, end: int) -> float:
    """Soft Heaviside of the official ``soft_heaviside``: 1 when ``start == 0``, else clip((step-start)/(end-start))."""
    if start == 0:
        return 1.0
    return max(0.0, min(1.0, (step - start) / (end - start)))


def _make_optim(model: torch.nn.Module, cfg: TrainConfig):
    # foreach: one fused update over all parameters (the per-tensor loop dominates a small model's step on CPU)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, foreach=True)
    sched = (
        torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=cfg.steps)
        if cfg.one_cycle
        else None
    )
    return opt, sched


def save_checkpoint(path: str | Path, model: FreeFormInjectiveFlow, **state) -> Path:
    """Atomically save the model (with its architecture signature) and any training state."""
    if not isinstance(model, FreeFormInjectiveFlow):
        raise InputError(f"model must be a FreeFormInjectiveFlow, got {describe(model)}")
    if Path(path).is_dir():
        raise InputFolderError(f"checkpoint path {path} is a folder; expected a file path", path)
    return atomic_torch_save(
        {
            "format": CHECKPOINT_FORMAT,
            "architecture": model.architecture(),
            "model": model.state_dict(),
            **state,
        },
        path,
    )


def load_checkpoint(path: str | Path, model: FreeFormInjectiveFlow) -> dict:
    """Load a checkpoint into ``model`` (``weights_only=True``); a checkpoint of another architecture is refused
    with the first mismatching parameter named. Returns the whole checkpoint dict."""
    from iclr24.paperkit.checkpoint import load_checkpoint as _load_safely

    p = Path(path)
    if not p.exists():
        raise InputFileError(f"checkpoint not found: {p} (written by `fif train --out DIR` as DIR/model.pt)")
    # weights_only=True, the format tag and the keys checked; a foreign or crafted file is one line that says it
    # is not a fif checkpoint (never torch's advice to load it unsafely)
    ckpt = _load_safely(
        p,
        format=CHECKPOINT_FORMAT,
        required={"architecture": dict, "architecture.params": dict, "model": dict},
        what="fif checkpoint",
    )
    want, got = model.architecture(), ckpt["architecture"]
    if want != got:
        for key in ("encoder", "decoder", "data_dim", "latent_dim"):
            if want[key] != got.get(key):
                raise InputError(
                    f"{p} is from another architecture: {key} is {got.get(key)!r}, model has {want[key]!r}"
                )
        for name, shape in want["params"].items():
            if got["params"].get(name) != shape:
                raise InputError(
                    f"{p} is from another architecture: parameter {name} has shape {got['params'].get(name)} "
                    f"in the checkpoint, {shape} in the model"
                )
        extra = sorted(set(got["params"]) - set(want["params"]))
        raise InputError(f"{p} is from another architecture: extra parameters {extra[:3]}")
    model.load_state_dict(ckpt["model"])
    return ckpt


def fit(
    model: FreeFormInjectiveFlow,
    data: torch.Tensor,
    cfg: TrainConfig = TrainConfig(),
    *,
    checkpoint: str | Path | None = None,
    resume: bool = False,
    device: str | torch.device = "cpu",
    show_progress: bool = True,
    log_every: int = 0,
    until: int | None = None,
    monitor: Callable[[FreeFormInjectiveFlow], Mapping[str, float]] | None = None,
    checkpoint_extra: Mapping | None = None,
    callbacks: Any = None,
    log_dir: str | Path | None = None,
) -> dict:
    """Train ``model`` on ``data`` (n, D) for ``cfg.steps`` steps; returns a history dict.

    ``checkpoint``: a path written every ``cfg.checkpoint_every`` steps and at the end; with ``resume=True`` and
    an existing file, training continues from it exactly. Under ``torchrun`` every rank draws its own batches
    (its generator is seeded ``cfg.seed + 1000 * rank``) and gradients are averaged over ranks; rank 0 writes the
    checkpoint. ``until``: stop (and checkpoint) after that many of the ``cfg.steps`` steps; a later
    ``resume=True`` call finishes the schedule.
    ``monitor(model) -> {name: float}``: called at every logged step (``log_every``) after the update; its values
    go to ``history["monitor"]`` (it must not draw from the training generator; the ablation tracks the decoder's
    geometry with it). ``checkpoint_extra``: more entries stored in every checkpoint (the CLI stores its meta there,
    so a checkpoint always carries what rebuilds its model).
    ``data`` may also be your own ``Dataset`` / ``DataLoader`` of rows (items ``x`` or ``(x, label)``, labels
    ignored): read once into the same (n, D) tensor, so the same run. ``callbacks`` (``f(step, metrics)`` or
    objects with ``on_step``/``on_end``) and ``log_dir`` (``metrics.jsonl``, TensorBoard when installed) get the
    loss and lr of every step (rank 0 under torchrun). The checkpoint holds every rank's generator state, so a
    resumed torchrun run continues each rank's batches exactly.
    """
    import torch.distributed as dist

    from iclr24.paperkit.distributed import broadcast_
    from iclr24.paperkit.distributed import is_distributed

    if not isinstance(model, FreeFormInjectiveFlow):
        raise InputError(f"model must be a FreeFormInjectiveFlow, got {type(model).__name__}")
    if not isinstance(cfg, TrainConfig):
        raise InputError(f"cfg must be a TrainConfig, got {type(cfg).__name__}")
    from iclr24.paperkit.data.user import as_tensors
    from iclr24.paperkit.data.user import is_user_data

    if is_user_data(data):
        parts = as_tensors(data, what="training data")
        if len(parts) > 2:
            raise InputError(f"training data: items must be x or (x, label), got {len(parts)} fields")
        data = parts[0]
    data = check_data(data, "training data")
    if data.shape[1] != model.data_dim:
        raise InputError(
            f"training data has D={data.shape[1]} columns, the model expects data_dim={model.data_dim}"
        )
    reserved = {"format", "architecture", "model", "optimizer", "scheduler", "generator", "generators", "step",
                "history", "rank_histories"}  # fmt: skip
    clash = sorted(set(checkpoint_extra or {}) & (reserved | {"config", "hparams"}))
    if clash:
        raise InputError(f"checkpoint_extra may not override the checkpoint's own entries {clash}")
    rank = dist.get_rank() if is_distributed() else 0
    world = dist.get_world_size() if is_distributed() else 1
    device = torch.device(device)
    model.to(device)
    data = data.to(device=device, dtype=next(model.parameters()).dtype)
    opt, sched = _make_optim(model, cfg)
    gen = torch.Generator().manual_seed(cfg.seed + 1000 * rank)
    step = 0
    history: dict[str, list] = {"step": [], "loss": [], "nll": [], "noisy_reconstruction": [], "skipped": []}
    ckpt_path = Path(checkpoint) if checkpoint is not None else None
    if world > 1:  # a checkpoint gathers every rank's generator state: all ranks must write one, or none
        flags = torch.tensor([float(ckpt_path is not None), -float(ckpt_path is not None)])
        dist.all_reduce(flags, op=dist.ReduceOp.MIN)
        if flags[0] != -flags[1]:
            raise InputError("under torchrun pass the same checkpoint= on every rank (rank 0 writes it)")
    if resume and ckpt_path is not None and ckpt_path.exists():
        ck = load_checkpoint(ckpt_path, model)
        opt.load_state_dict(ck["optimizer"])
        if sched is not None and ck.get("scheduler") is not None:
            sched.load_state_dict(ck["scheduler"])
        gens = ck.get("generators")
        if world > 1 and gens is not None and len(gens) != world:
            raise InputError(
                f"{ckpt_path} was written by {len(gens)} processes; resume it with as many, not {world}"
            )
        gen.set_state(gens[rank] if gens is not None and rank < len(gens) else ck["generator"])
        step = int(ck["step"])
        history = ck.get("history", history)
        if world > 1 and ck.get("rank_histories") is not None:
            history = ck["rank_histories"][rank]  # each rank logged its own batches' losses
        if ck.get("config") and ck["config"].get("steps") != cfg.steps:
            raise InputError(
                f"{ckpt_path} was trained with steps={ck['config']['steps']}; resume with the same steps "
                f"(the one-cycle schedule depends on it), got {cfg.steps}"
            )
    elif is_distributed():
        for p in model.parameters():
            broadcast_(p.data)
    last_good: str | None = str(ckpt_path) if ckpt_path is not None and ckpt_path.exists() else None

    def _save(at: int) -> None:
        nonlocal last_good
        if ckpt_path is None:
            return
        ranks = [(gen.get_state(), history)]
        if (
            world > 1
        ):  # every rank's batches (and its logged losses) come from its own generator: keep them all
            ranks = [None] * world
            dist.all_gather_object(ranks, (gen.get_state(), history))
        if rank != 0:
            return
        states = [r[0] for r in ranks]
        save_checkpoint(
            ckpt_path,
            model,
            optimizer=opt.state_dict(),
            scheduler=sched.state_dict() if sched is not None else None,
            generator=gen.get_state(),
            generators=states,
            rank_histories=[r[1] for r in ranks] if world > 1 else None,
            step=at,
            history=history,
            config={f.name: getattr(cfg, f.name) for f in fields(cfg)}
            | {"warm_up_steps": list(cfg.warm_up_steps)},
            **dict(checkpoint_extra or {}),
            hparams={
                "beta": model.beta,
                "noise": model.noise,
                "hutchinson_samples": model.hutchinson_samples,
                "gradient_side": model.gradient_side,
                "log_det": model.log_det,
                "jacobian_at": model.jacobian_at,
            },
        )
        last_good = str(ckpt_path)

    stop = cfg.steps if until is None else int(until)
    if not 0 < stop <= cfg.steps:
        raise InputError(f"until must be in [1, steps={cfg.steps}], got {until!r}")
    from iclr24.paperkit.tracking import StepLog

    log = StepLog(log_dir if rank == 0 else None, callbacks if rank == 0 else None, name="fif")
    try:
        _loop(model, data, cfg, opt, sched, gen, history, step, stop, world, device, show_progress, log_every,
              monitor, log, _save, lambda: last_good)  # fmt: skip
        log.close({"loss": history["loss"][-1]} if history["loss"] else None)
    finally:
        log.close()
    model.eval()
    history["config"] = asdict(cfg)
    return history


def _loop(model, data, cfg, opt, sched, gen, history, step, stop, world, device, show_progress, log_every,
          monitor, log, _save, last_good) -> None:  # fmt: skip
    """The steps of :func:`fit` (``last_good()``: the checkpoint a non-finite stop names)."""
    import torch.distributed as dist

    from iclr24.paperkit.distributed import all_reduce_mean

    n_skipped = 0
    model.train()
    bar = progress(range(step, stop), desc="fif train", disable=None if show_progress else True)
    for step in bar:
        idx = torch.randint(0, data.shape[0], (cfg.batch_size,), generator=gen).to(device)
        terms = model.loss_terms(data[idx], generator=gen)
        w = nll_warmup_weight(step, *cfg.warm_up_steps)
        loss = (model.beta * terms["noisy_reconstruction"] + w * terms["nll"]).mean()
        opt.zero_grad(set_to_none=True)
        ok = bool(torch.isfinite(loss))
        if ok:
            loss.backward()
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            if world > 1:
                for g in grads:
                    all_reduce_mean(g)
            # one check over all gradients (a per-tensor check costs a sync per parameter)
            ok = bool(torch.isfinite(torch.cat([g.reshape(-1) for g in grads])).all()) if grads else True
        if world > 1:
            flag = torch.tensor([1.0 if ok else 0.0])
            dist.all_reduce(flag, op=dist.ReduceOp.MIN)
            ok = bool(flag.item() > 0)
        if not ok:
            if cfg.on_nonfinite == "stop":
                raise NonFiniteLossError(step, last_good())
            n_skipped += 1
            history["skipped"].append(step)
            if n_skipped > cfg.max_skips:
                raise NonFiniteLossError(step, last_good())
            opt.zero_grad(set_to_none=True)
            if sched is not None:
                sched.step()
            log(step + 1, {"skipped": 1})
            continue
        if cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        lr = opt.param_groups[0]["lr"]
        opt.step()
        if sched is not None:
            sched.step()
        log(step + 1, {"loss": float(loss.detach()), "lr": lr})
        if log_every and (step % log_every == 0 or step == cfg.steps - 1):
            history["step"].append(step)
            history["loss"].append(float(loss.detach()))
            history["nll"].append(float(terms["nll"].detach().mean()))
            history["noisy_reconstruction"].append(float(terms["noisy_reconstruction"].detach().mean()))
            if monitor is not None:
                history.setdefault("monitor", []).append(
                    {"step": step + 1, **{k: float(v) for k, v in dict(monitor(model)).items()}}
                )
        if cfg.checkpoint_every and (step + 1) % cfg.checkpoint_every == 0 and step + 1 < stop:
            _save(step + 1)
    _save(max(stop, step))
