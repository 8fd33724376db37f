"""One logging hook for every trainer: step callbacks, a JSONL file always, TensorBoard when it is installed.

A trainer takes ``callbacks=`` (objects with ``on_step(step, metrics)`` and optionally ``on_end(summary)``, or plain
functions ``f(step, metrics)``) and ``log_dir=``; it builds one :class:`StepLog` and calls it each step::

    log = StepLog(log_dir, callbacks, name="srigl")      # log_dir None: callbacks (and logging records) only
    for step in range(steps):
        ...
        log(step, {"loss": loss.item(), "lr": lr})
    log.close({"test_acc": acc})

With a ``log_dir`` it writes ``metrics.jsonl`` (one ``{"step": ..., **metrics}`` object a line, flushed every line, so
a crashed run keeps what it logged) and, when ``tensorboard`` is importable (the ``tensorboard`` extra), TensorBoard
event files beside it (``tensorboard --logdir DIR``). Every step is also a ``logging`` record of the logger
``iclr24.<name>`` at DEBUG level (and the summary at INFO), so a library user silences or redirects them with the
standard ``logging`` configuration instead of seeing prints. Every CLI ``train`` command gets ``--log-dir``.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import InputError
from .errors import InputFileError

__all__ = ["StepLog", "read_jsonl"]


def _scalars(metrics: Mapping[str, Any]) -> dict[str, float]:
    out = {}
    for k, v in metrics.items():
        if hasattr(v, "item") and getattr(v, "numel", lambda: 1)() == 1:
            v = v.item()
        if isinstance(v, bool):
            v = int(v)
        if isinstance(v, int | float):
            out[str(k)] = v
    return out


def _tensorboard_available() -> bool:
    try:
        import tensorboard  # noqa: F401
        from torch.utils.tensorboard import SummaryWriter  # noqa: F401
    except ImportError:
        return False
    return True


class _JSONLWriter:
    """``metrics.jsonl``: one JSON object a line, flushed per line (non-finite values written as null)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._f = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def on_step(self, step: int, metrics: Mapping[str, Any]) -> None:
        row = {"step": int(step)}
        for k, v in _scalars(metrics).items():
            row[k] = v if math.isfinite(v) else None
        for k, v in metrics.items():
            if isinstance(v, str):
                row[k] = v
        self._f.write(json.dumps(row) + "\n")
        self._f.flush()

    def on_end(self, summary: Mapping[str, Any]) -> None:
        self.on_step(-1, {"event": "end", **summary})

    def close(self) -> None:
        self._f.close()


class _TensorBoardWriter:
    """TensorBoard event files through ``torch.utils.tensorboard`` (needs the ``tensorboard`` package)."""

    def __init__(self, log_dir: str | os.PathLike) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self._w = SummaryWriter(log_dir=str(log_dir))

    def on_step(self, step: int, metrics: Mapping[str, Any]) -> None:
        for k, v in _scalars(metrics).items():
            if math.isfinite(v):
                self._w.add_scalar(k, v, int(step))

    def on_end(self, summary: Mapping[str, Any]) -> None:
        self._w.flush()

    def close(self) -> None:
        self._w.close()


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """The rows of a ``metrics.jsonl`` (the end record included, with step -1)."""
    p = Path(path)
    if not p.is_file():
        raise InputFileError(f"no metrics file {p}", p)
    rows = []
    for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                raise InputFileError(f"{p}, line {i}: not a JSON object", p) from None
    return rows


class StepLog:
    """Fan one step's metrics out to the callbacks, the JSONL file, TensorBoard and ``logging``.

    ``callbacks``: objects with ``on_step(step, metrics)`` (and optionally ``on_end(summary)``) or callables
    ``f(step, metrics)``. ``every``: write files and records every N steps (callbacks get every step).
    ``tensorboard``: ``None`` writes event files when TensorBoard is installed, ``True`` requires it."""

    def __init__(
        self,
        log_dir: str | os.PathLike | None = None,
        callbacks: Iterable[Any] | Callable | None = None,
        *,
        name: str = "paperkit",
        every: int = 1,
        tensorboard: bool | None = None,
    ) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise InputError(f"every must be a positive int, got {every!r}")
        if callbacks is None:
            callbacks = []
        elif callable(callbacks) or hasattr(callbacks, "on_step"):
            callbacks = [callbacks]
        elif isinstance(callbacks, str | bytes) or not hasattr(callbacks, "__iter__"):
            raise InputError(
                f"callbacks must be a callable or a list of them, got {type(callbacks).__name__}"
            )
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            if not (callable(cb) or hasattr(cb, "on_step")):
                raise InputError(f"a callback must be callable or have on_step(step, metrics), got {cb!r}")
        self.every = every
        self.logger = logging.getLogger(f"iclr24.{name}")
        self.writers: list[Any] = []
        self.log_dir = None
        if log_dir is not None:
            d = Path(log_dir)
            if d.exists() and not d.is_dir():
                raise InputFileError(f"--log-dir {d} is a file; give a folder", d)
            d.mkdir(parents=True, exist_ok=True)
            self.log_dir = d
            self.writers.append(_JSONLWriter(d / "metrics.jsonl"))
            if tensorboard is True and not _tensorboard_available():
                raise InputError("tensorboard=True needs the tensorboard package (pip install tensorboard)")
            if tensorboard is not False and _tensorboard_available():
                self.writers.append(_TensorBoardWriter(d))

    def __call__(self, step: int, metrics: Mapping[str, Any]) -> None:
        for cb in self.callbacks:
            (cb.on_step if hasattr(cb, "on_step") else cb)(step, metrics)
        if step % self.every == 0:
            for w in self.writers:
                w.on_step(step, metrics)
            if self.logger.isEnabledFor(logging.DEBUG):
                self.logger.debug("step %d: %s", step, _scalars(metrics))

    def close(self, summary: Mapping[str, Any] | None = None) -> None:
        """Finish: ``on_end(summary)`` to the callbacks, close the files (a second call does nothing)."""
        if getattr(self, "_closed", False):
            return
        self._closed = True
        summary = dict(summary or {})
        for cb in self.callbacks:
            if hasattr(cb, "on_end"):
                cb.on_end(summary)
        for w in self.writers:
            w.on_end(summary)
            w.close()
        self.writers = []
        if summary:
            self.logger.info("end: %s", _scalars(summary))

    def __enter__(self) -> StepLog:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
