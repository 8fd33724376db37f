"""Edge-of-stability report: sharpness against ``2 / eta`` and the loss spikes of a run (the paper's account of
the edge of stability).

threshold  = (2 + 2 beta) / eta                   (beta = 0 for plain GD)
increase_t = [L(theta_{t+1}) > (1 + tol) L(theta_t)]      a loss-increase step (tol = 1 %)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass

import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import describe

from .hessian import stability_threshold

__all__ = ["EoSReport", "loss_increase_steps", "edge_of_stability_report"]


def loss_increase_steps(loss: Sequence[float], tol: float = 0.01) -> list[int]:
    """Steps ``t`` with ``L(theta_{t+1}) > (1 + tol) L(theta_t)``."""
    check_float(tol, "tol", minimum=0)
    ls = torch.from_numpy(check_array(loss, "loss", ndim=1))
    if ls.numel() < 2:
        raise InputError(f"need a loss history of length >= 2, got {ls.numel()}")
    # increase_t = [L_{t+1} > (1 + tol) L_t]
    up = ls[1:] > (1.0 + tol) * ls[:-1]
    return torch.nonzero(up).reshape(-1).tolist()


@dataclass
class EoSReport:
    """Sharpness against the stability threshold, and the loss spikes."""

    lr: float
    momentum: float
    threshold: float
    max_sharpness: float
    late_median_sharpness: float
    late_ratio: float
    first_crossing_step: int | None
    loss_increase_steps: int
    largest_spike: float

    def to_dict(self) -> dict:
        return asdict(self)


def edge_of_stability_report(
    history,
    lr: float | None = None,
    momentum: float = 0.0,
    late_from: int | None = None,
    tol: float = 0.01,
    crossing: float = 0.9,
) -> EoSReport:
    """Report on a :class:`~.train.History` (or any object with ``loss``, ``sharpness``, ``sharpness_steps``).

    ``late_from``: the step from which the "late" sharpness median is taken (default: the last two thirds of the
    run). ``first_crossing_step``: the first measured step with sharpness >= ``crossing x threshold``.
    """
    if lr is None:
        lr = history.config.lr
        momentum = history.config.momentum
    thr = stability_threshold(lr, momentum)
    from .train import History

    if not isinstance(history, History):
        raise InputError(f"history must be the History that train() returns, got {describe(history)}")
    sh = torch.as_tensor(history.sharpness, dtype=torch.float64)
    st = torch.as_tensor(history.sharpness_steps, dtype=torch.long)
    if sh.numel() == 0:
        raise InputError("the history has no sharpness measurements; train with sharpness_every > 0")
    last = int(st.max())
    start = last // 3 if late_from is None else late_from
    late = sh[st >= start]
    if late.numel() == 0:
        raise InputError(f"no sharpness measurement at or after step {start} (last is {last})")
    med = float(late.median())
    cross = torch.nonzero(sh >= crossing * thr).reshape(-1)
    inc = loss_increase_steps(history.loss, tol)
    ls = torch.as_tensor(history.loss, dtype=torch.float64)
    spikes = ls[1:] / ls[:-1].clamp_min(1e-30)
    return EoSReport(
        lr=float(lr),
        momentum=float(momentum),
        threshold=thr,
        max_sharpness=float(sh.max()),
        late_median_sharpness=med,
        late_ratio=med / thr,
        first_crossing_step=int(st[cross[0]]) if cross.numel() else None,
        loss_increase_steps=len(inc),
        largest_spike=float(spikes.max()),
    )
