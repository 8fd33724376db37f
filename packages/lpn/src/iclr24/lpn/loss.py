"""The proximal matching loss (Sec. 3.2) and the official training schedule (l1 pre-training, then gamma stages)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe

__all__ = [
    "proximal_matching_loss",
    "l1_loss",
    "l2_loss",
    "loss_value",
    "gamma_min_for",
    "ScheduleStep",
    "Segment",
    "official_schedule",
    "piecewise_schedule",
    "LAPLACIAN_SEGMENTS",
]


def _check_pair(pred: torch.Tensor, target: torch.Tensor, finite: bool = False) -> None:
    """Two floating tensors of one shape; ``finite`` (the public losses) also refuses NaN/inf, which the training
    loop (``loss_value``) detects on the loss itself instead."""
    check_tensor(pred, "pred", kind="float", allow_empty=True, finite=finite)
    check_tensor(target, "target", kind="float", allow_empty=True, finite=finite)
    if pred.shape != target.shape:
        raise InputError(
            f"pred and target must have the same shape, got {tuple(pred.shape)} and {tuple(target.shape)}"
        )
    if pred.dim() < 1:
        raise InputError("pred and target must have a batch dimension (B, ...)")


def proximal_matching_loss(pred: torch.Tensor, target: torch.Tensor, gamma: float) -> torch.Tensor:
    """Proximal matching loss (Sec. 3.2): L_PM = mean_i [1 - exp(-||pred_i - target_i||_2^2 / gamma^2)].

    ``pred``, ``target``: ``(B, ...)``; the distance is taken over the whole sample. Returns a scalar. As gamma -> 0
    its minimiser tends to the MAP denoiser prox_{-sigma^2 log p}.
    """
    _check_pair(pred, target, finite=True)
    return _pm(pred, target, gamma)


def _pm(pred: torch.Tensor, target: torch.Tensor, gamma: float) -> torch.Tensor:
    _check_pair(pred, target)
    if isinstance(gamma, bool) or not (isinstance(gamma, int | float) and 0 < gamma <= 1e100):
        raise InputError(f"gamma must be a positive finite number (at most 1e100), got {gamma!r}")
    d2 = (pred - target).pow(2).flatten(1).sum(1)  # ||f(y) - x||_2^2 per sample
    # Sec. 3 (proximal matching): L_PM(theta; gamma) = E[1 - exp(-||f_theta(y) - x||_2^2 / gamma^2)]
    return (1.0 - torch.exp(-d2 / gamma**2)).mean()


def l1_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean absolute error over all entries (``nn.L1Loss``): its minimiser is the posterior median."""
    _check_pair(pred, target, finite=True)
    return (pred - target).abs().mean()


def l2_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error over all entries: its minimiser is the MMSE denoiser E[x | y]."""
    _check_pair(pred, target, finite=True)
    out = (pred - target).pow(2).mean()
    if not bool(torch.isfinite(out)):
        raise InputError("l2_loss overflows: pred and target differ by more than float range allows")
    return out


def loss_value(
    kind: str, pred: torch.Tensor, target: torch.Tensor, gamma: float | None = None
) -> torch.Tensor:
    """Dispatch on ``kind`` in {"l1", "l2", "pm"}."""
    if kind == "l1":
        _check_pair(pred, target)
        return (pred - target).abs().mean()
    if kind == "l2":
        _check_pair(pred, target)
        return (pred - target).pow(2).mean()
    if kind == "pm":
        if gamma is None:
            raise InputError("the proximal matching loss needs gamma")
        return _pm(pred, target, gamma)
    raise InputError(f"loss must be one of l1, l2, pm, got {kind!r}")


def gamma_min_for(num_pixels: int) -> float:
    """The official final gamma: gamma_min = 0.08 * sqrt(H * W * C) (2.24 for MNIST, 0.64 for 8x8 digits)."""
    check_int(num_pixels, "num_pixels", minimum=1)
    return 0.08 * math.sqrt(num_pixels)


@dataclass(frozen=True)
class ScheduleStep:
    """What one training step uses: the loss kind ("l1", "l2" or "pm"), gamma (pm only) and the learning rate."""

    loss: str
    gamma: float | None
    lr: float


def official_schedule(
    step: int,
    *,
    num_steps: int = 40000,
    num_steps_pretrain: int = 20000,
    num_stages: int = 4,
    gamma_min: float = 2.24,
    pretrain_lr: float = 1e-3,
    lr: float = 1e-4,
) -> ScheduleStep:
    """The official schedule (``get_loss_hparams_and_lr``): l1 at ``pretrain_lr`` for steps < ``num_steps_pretrain``,
    then ``num_stages`` equal stages of proximal matching at ``lr`` with gamma_s = gamma_min * 2^(S-1-s)
    (the last stage also covers any remainder steps)."""
    check_int(step, "step", minimum=0)
    for name, v in (
        ("num_steps", num_steps),
        ("num_steps_pretrain", num_steps_pretrain),
        ("num_stages", num_stages),
    ):
        check_int(v, name, minimum=0, maximum=10**9)
    for name, v in (("gamma_min", gamma_min), ("pretrain_lr", pretrain_lr), ("lr", lr)):
        check_float(v, name, minimum=0, open_min=True)
    if num_steps <= num_steps_pretrain or num_stages < 1:
        raise InputError(
            f"need num_steps > num_steps_pretrain and num_stages >= 1, got num_steps={num_steps}, "
            f"num_steps_pretrain={num_steps_pretrain}, num_stages={num_stages}"
        )
    if step < num_steps_pretrain:
        return ScheduleStep("l1", None, pretrain_lr)
    per_stage = max((num_steps - num_steps_pretrain) // num_stages, 1)
    stage = min((step - num_steps_pretrain) // per_stage, num_stages - 1)
    return ScheduleStep("pm", gamma_min * 2 ** (num_stages - 1 - stage), lr)


@dataclass(frozen=True)
class Segment:
    """``steps`` consecutive steps of one loss at one learning rate (a piece of a piecewise schedule)."""

    steps: int
    loss: str
    lr: float
    gamma: float | None = None

    def __post_init__(self) -> None:
        check_int(self.steps, "steps", minimum=1, maximum=10**9)
        if self.loss not in ("l1", "l2", "pm"):
            raise InputError(f"loss must be one of l1, l2, pm, got {self.loss!r}")
        check_float(self.lr, "lr", minimum=0, open_min=True)
        if self.gamma is not None:
            check_float(self.gamma, "gamma", minimum=0, open_min=True)
        elif self.loss == "pm":
            raise InputError("a proximal-matching segment needs gamma")


# The 1-D Laplacian notebook's schedule for the proximal-matching model: l1 pre-training (10k @ 1e-3, 10k @ 1e-4),
# then PM with gamma .5 (2k @ 1e-3 + 2k @ 1e-4), .4 (4k @ 1e-4), .3 (4k @ 1e-4), .2 (4k @ 1e-5), .1 (4k @ 1e-5 +
# 4k @ 1e-6).
LAPLACIAN_SEGMENTS: tuple[Segment, ...] = (
    Segment(10000, "l1", 1e-3),
    Segment(10000, "l1", 1e-4),
    Segment(2000, "pm", 1e-3, 0.5),
    Segment(2000, "pm", 1e-4, 0.5),
    Segment(4000, "pm", 1e-4, 0.4),
    Segment(4000, "pm", 1e-4, 0.3),
    Segment(4000, "pm", 1e-5, 0.2),
    Segment(4000, "pm", 1e-5, 0.1),
    Segment(4000, "pm", 1e-6, 0.1),
)


def piecewise_schedule(step: int, segments: Sequence[Segment]) -> ScheduleStep:
    """The schedule step of a list of segments; steps past the end keep the last segment."""
    check_int(step, "step", minimum=0)
    if isinstance(segments, str | bytes) or not segments or not all(isinstance(s, Segment) for s in segments):
        raise InputError(f"segments must be a non-empty list of Segments, got {describe(segments)}")
    start = 0
    for seg in segments:
        if step < start + seg.steps:
            return ScheduleStep(seg.loss, seg.gamma, seg.lr)
        start += seg.steps
    last = segments[-1]
    return ScheduleStep(last.loss, last.gamma, last.lr)


def scale_segments(segments: Sequence[Segment], factor: float) -> tuple[Segment, ...]:
    """The same schedule with every segment's length multiplied by ``factor`` (at least 1 step each)."""
    return tuple(Segment(max(1, round(s.steps * factor)), s.loss, s.lr, s.gamma) for s in segments)
