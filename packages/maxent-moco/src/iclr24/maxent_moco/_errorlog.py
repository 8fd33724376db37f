"""One step log per run of a planner or learner: the normalised error of each iterate, as the run goes.

The error is computed only when something listens (a callback, a ``log_dir``, or DEBUG records of the logger
``iclr24.maxent_moco``), with the functions that make the run's :class:`~.algorithms.Trace`, so the logged numbers
are the trace's; nothing of the run itself changes and no random number is drawn.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import numpy as np

from iclr24.paperkit.tracking import StepLog

from .envs import TabularMDP
from .planning import normalized_error
from .planning import policy_error


class ErrorLog:
    """``log(step, V, policy)``: the error of the iterate (``V`` (S,) in "pe", the ``policy`` (S,) in "control"; a
    batch (B, S) of lock-step runs logs ``error`` as their mean and ``error/<label>`` for each)."""

    def __init__(
        self,
        callbacks: object,
        log_dir: str | os.PathLike | None,
        mdp: TabularMDP,
        mode: str,
        target: np.ndarray,
        labels: Sequence[str] | None = None,
    ) -> None:
        self.log = StepLog(log_dir, callbacks, name="maxent_moco")
        self.active = bool(
            self.log.callbacks or self.log.writers or self.log.logger.isEnabledFor(logging.DEBUG)
        )
        self.mdp, self.mode, self.target, self.labels = mdp, mode, target, labels
        self.last: float | None = None

    def __call__(self, step: int, V: np.ndarray, policy: np.ndarray | None = None) -> None:
        if not self.active:
            return
        m = self.mdp
        if self.mode == "pe":
            err = np.atleast_1d(normalized_error(V, self.target))
        else:
            err = np.atleast_1d(policy_error(m.P, m.R, m.gamma, policy, self.target))
        metrics = {"error": float(err.mean())}
        if len(err) > 1:
            labels = self.labels or [str(i) for i in range(len(err))]
            metrics.update({f"error/{lab}": float(e) for lab, e in zip(labels, err, strict=True)})
        self.last = metrics["error"]
        self.log(int(step), metrics)

    def close(self) -> None:
        self.log.close({"error": self.last} if self.last is not None else None)
