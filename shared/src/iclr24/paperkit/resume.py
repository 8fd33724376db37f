"""Resume a training run exactly: model, optimiser, scheduler, step, RNG states, in one safe file.

    from iclr24.paperkit.resume import save_train_state, load_train_state

    start = 0
    if resume and path.exists():
        start = load_train_state(path, model=model, optimizer=opt, generators={"data": g}, expect={"steps": steps})
    for step in range(start, steps):
        ...
        if (step + 1) % every == 0:
            save_train_state(path, step=step + 1, model=model, optimizer=opt, generators={"data": g},
                             meta={"steps": steps})

The file is written atomically (a crash never leaves half a file) and read back with ``weights_only=True``
(:func:`~.checkpoint.load_checkpoint`: nothing is unpickled). The global torch, numpy and ``random`` RNG states
are saved and restored, and the states of any ``torch.Generator`` the loop draws from, so a run interrupted at a
saved step and resumed equals the uninterrupted run bit for bit on the same machine. ``meta`` holds the settings
that must match for a resume to make sense (steps of a schedule, data size); ``expect`` refuses a mismatch with one
clear :class:`~.errors.InputError` before anything is loaded into the model.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import InputError
from .errors import InputFileError
from .errors import InputFolderError

__all__ = [
    "check_checkpoint_arg",
    "global_rng_state",
    "load_train_state",
    "save_train_state",
    "set_global_rng_state",
]

_TRAIN_STATE_FORMAT = "iclr24.train-state/1"


def global_rng_state() -> dict:
    """The global torch, numpy and ``random`` RNG states, as tensors and plain values that
    :func:`save_train_state` stores (``weights_only`` loads them back). A trainer that keeps one state per rank,
    or saves on its own schedule, takes it here and gives it back with :func:`set_global_rng_state`."""
    import numpy as np
    import torch

    kind, keys, pos, has_gauss, cached = np.random.get_state()
    version, internal, gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached": float(cached),
        },
        "python": {"version": version, "internal": list(internal), "gauss": gauss},
    }


def set_global_rng_state(state: Mapping) -> None:
    """Restore the global torch, numpy and ``random`` RNG states that :func:`global_rng_state` returned."""
    import numpy as np
    import torch

    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state(
        (n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached"])
    )
    p = state["python"]
    random.setstate((p["version"], tuple(p["internal"]), p["gauss"]))


def save_train_state(
    path: str | os.PathLike,
    *,
    step: int,
    model: Any,
    optimizer: Any = None,
    scheduler: Any = None,
    generators: Mapping[str, Any] | None = None,
    meta: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write everything a loop needs to continue at ``step``. ``extra``: tensors/plain values the loop keeps
    besides the model (an EMA, a sparsity mask, running sums); returned by :func:`load_train_state` via ``into``."""
    from .io import atomic_torch_save

    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise InputError(f"step must be a non-negative int, got {step!r}")
    state = {
        "format": _TRAIN_STATE_FORMAT,
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "generators": {k: g.get_state() for k, g in (generators or {}).items()},
        "rng": global_rng_state(),
        "meta": dict(meta or {}),
        "extra": dict(extra or {}),
    }
    return atomic_torch_save(state, path)


def load_train_state(
    path: str | os.PathLike,
    *,
    model: Any,
    optimizer: Any = None,
    scheduler: Any = None,
    generators: Mapping[str, Any] | None = None,
    expect: Mapping[str, Any] | None = None,
    into: dict | None = None,
    what: str = "training state",
) -> int:
    """Restore a state written by :func:`save_train_state` into the given objects; return the step to continue
    from. ``expect``: settings that must equal the saved ``meta`` (else one InputError naming the key, before any
    object is touched). ``into``: a dict that receives the saved ``extra``."""
    from .checkpoint import load_checkpoint

    ck = load_checkpoint(
        path, format=_TRAIN_STATE_FORMAT, required={"step": int, "model": Mapping, "rng": Mapping}, what=what
    )
    meta = ck.get("meta") or {}
    for key, want in (expect or {}).items():
        if key in meta and meta[key] != want:
            raise InputError(
                f"{path}: the saved run has {key}={meta[key]!r}, this run asks for {key}={want!r}; resume with the "
                "run's own settings or start a fresh one"
            )
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler)):
        if obj is not None and ck.get(name) is None:
            raise InputFileError(f"{path}: holds no {name} state, but this run has a {name}", path)
    saved_gens = ck.get("generators") or {}
    missing = [k for k in (generators or {}) if k not in saved_gens]
    if missing:
        raise InputFileError(f"{path}: holds no state for generator(s) {missing}", path)
    try:
        model.load_state_dict(ck["model"])
    except RuntimeError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputFileError(f"{path}: its weights do not fit this model ({first})", path) from None
    if optimizer is not None:
        optimizer.load_state_dict(ck["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(ck["scheduler"])
    for k, g in (generators or {}).items():
        g.set_state(saved_gens[k])
    set_global_rng_state(ck["rng"])
    if into is not None:
        into.update(ck.get("extra") or {})
    return int(ck["step"])


def check_checkpoint_arg(
    checkpoint: str | os.PathLike | None,
    resume: bool,
    *,
    written: str = "the file written after every epoch",
    example: str = "DIR/train_state.pt",
) -> None:
    """A trainer's ``checkpoint=`` / ``resume=`` pair, before any work: ``resume=True`` needs a ``checkpoint``
    (an :class:`~.errors.InputError` that says it is ``written``), and a checkpoint must be a file path, not a
    folder (an :class:`~.errors.InputFolderError` that suggests ``example``)."""
    if resume and checkpoint is None:
        raise InputError(f"resume=True needs checkpoint= ({written})")
    if checkpoint is not None and Path(checkpoint).is_dir():
        raise InputFolderError(f"checkpoint {checkpoint} is a folder; give a file path such as {example}")
