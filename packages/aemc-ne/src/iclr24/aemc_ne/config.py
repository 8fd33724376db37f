"""The training settings of every estimator (:class:`FitConfig`), checked when made."""

from __future__ import annotations

import math
from dataclasses import dataclass

from iclr24.paperkit.errors import InputError

__all__ = ["MAX_EPOCHS", "FitConfig"]

MAX_EPOCHS = 10**7  # a bound far past any real run, so a typo'd huge count is an error, not an overflow


@dataclass(frozen=True)
class FitConfig:
    """Training settings. Defaults: the released code's (AdamW lr 1e-3, weight decay 0, full batch, 30 epochs)
    plus a 5% validation hold-out for model selection."""

    epochs: int = 30
    lr: float = 1e-3
    weight_decay: float = 0.0  # AdamW's decoupled decay (released code)
    l2: float = 0.0  # AutoRec-style penalty: objective += (l2 / 2) * sum ||W||_F^2 / |Omega|
    l2_elem: float = 0.0  # the same penalty on g's weights (lambda_theta)
    batch_size: int | None = None  # samples (columns) per step; None = full batch
    val_fraction: float = 0.05  # of the training entries, when no explicit validation set is given
    eval_every: int = 10
    patience: int | None = None  # evaluations without improvement before stopping; None = run all epochs
    standardize: bool = False  # train on (x - mean) / std of the observed training values
    clip: tuple[float, float] | None = None  # clamp predictions, e.g. (1, 5) for ratings; off by default
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("epochs", "eval_every"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_EPOCHS:
                raise InputError(f"{name} must be an int in [1, {MAX_EPOCHS:,}], got {v!r}")
        for name in ("lr",):
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or not math.isfinite(v)
                or not 0 < v <= 1e3
            ):
                raise InputError(f"{name} must be a number in (0, 1000], got {v!r}")
        for name in ("weight_decay", "l2", "l2_elem"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
                raise InputError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.batch_size is not None and (
            isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1
        ):
            raise InputError(
                f"batch_size must be a positive int or None (full batch), got {self.batch_size!r}"
            )
        if (
            isinstance(self.val_fraction, bool)
            or not isinstance(self.val_fraction, int | float)
            or not 0.0 <= self.val_fraction < 1.0
        ):
            raise InputError(f"val_fraction must lie in [0, 1), got {self.val_fraction!r}")
        if self.patience is not None and (
            isinstance(self.patience, bool)
            or not isinstance(self.patience, int)
            or not 1 <= self.patience <= MAX_EPOCHS
        ):
            raise InputError(f"patience must be a positive int or None, got {self.patience!r}")
        if self.clip is not None and (
            not isinstance(self.clip, tuple | list)
            or len(self.clip) != 2
            or not all(isinstance(c, int | float) and math.isfinite(c) for c in self.clip)
            or not self.clip[0] < self.clip[1]
        ):
            raise InputError(f"clip must be (low, high) with low < high, got {self.clip!r}")
