"""Loading a package's own checkpoint safely, with one clear error for anything else.

    from iclr24.paperkit import load_checkpoint
    ck = load_checkpoint(path, format="iclr24.sfda2/1", required={"state_dict": dict, "meta.arch": str},
                         what="sfda2 source checkpoint")

The file is read with ``torch.load(..., weights_only=True, map_location="cpu")`` (tensors and plain containers only:
no pickled object is ever run). A missing file is a ``FileNotFoundError``; an empty, truncated or foreign file, one
holding Python objects, one without the package's format tag or without a required key is one ``ValueError`` line
naming the file (:class:`~iclr24.paperkit.errors.InputFileError`, which is both). Torch's own message (which
suggests ``weights_only=False``, the unsafe way out) is never shown: the error says the file is not one this package
wrote.

:func:`safe_torch_load` is the reading step alone, for a package's loader of foreign checkpoints (official weights):
``torch.load(weights_only=True)`` with the same one-line errors and no unsafe advice.
"""

from __future__ import annotations

import os
import pickle
import warnings
from collections.abc import Iterable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import InputFileError
from .errors import InputFolderError
from .errors import strip_unsafe_advice

__all__ = ["load_checkpoint", "safe_torch_load"]

_FORMAT_KEY = "format"
"""The key under which a package stores its checkpoint format tag (e.g. ``"iclr24.cmvae/1"``)."""

_MISSING = object()


def _lookup(obj: Any, dotted: str) -> Any:
    cur = obj
    for part in dotted.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def _type_names(t: type | tuple[type, ...]) -> str:
    ts = t if isinstance(t, tuple) else (t,)
    return " or ".join(x.__name__ for x in ts)


def _checked_file(path: str | os.PathLike, what: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"{what} {p} does not exist", p)
    if p.is_dir():
        raise InputFolderError(f"{what} {p} is a folder; expected a checkpoint file", p)
    if p.stat().st_size == 0:
        raise InputFileError(f"{what} {p} is empty (0 bytes)", p)
    return p


def safe_torch_load(
    path: str | os.PathLike,
    *,
    what: str = "checkpoint",
    safe_globals: Iterable[Any] = (),
    map_location: Any = "cpu",
) -> Any:
    """``torch.load(path, weights_only=True)`` (tensors and plain containers, plus the classes in ``safe_globals``),
    with one :class:`InputFileError` line naming the file for a missing, empty, folder, damaged or foreign file or
    one holding other Python objects. Torch's advice to load with ``weights_only=False`` is never repeated."""
    p = _checked_file(path, what)
    import torch

    allowed = list(safe_globals)
    try:
        with warnings.catch_warnings(), torch.serialization.safe_globals(allowed):
            warnings.simplefilter("ignore")  # e.g. torch's note on the pickle protocol of a foreign file
            return torch.load(p, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        detail = strip_unsafe_advice(e)
        if "GLOBAL" in detail:
            raise InputFileError(
                f"{what} {p} holds Python objects that a safe load (tensors and plain containers only) refuses "
                f"({detail.rstrip('.')}); re-save it as a plain state dict",
                p,
            ) from None
        why = f" (a safe load refused it: {detail.rstrip('.')})" if detail else ""
        raise InputFileError(
            f"{what} {p} cannot be read as a torch checkpoint: damaged, truncated or another format{why}", p
        ) from None
    except Exception as e:  # noqa: BLE001 - torch raises RuntimeError/EOFError/KeyError/... on damaged files
        raise InputFileError(
            f"{what} {p} cannot be read as a torch checkpoint: damaged, truncated or another format "
            f"({type(e).__name__})",
            p,
        ) from None


def load_checkpoint(
    path: str | os.PathLike,
    *,
    format: str,
    required: Iterable[str] | Mapping[str, type | tuple[type, ...]] = (),
    what: str = "checkpoint",
    legacy: bool = False,
) -> dict:
    """Load a checkpoint this package wrote and check it before anything is built from it.

    ``format``: the tag the package stores under ``"format"``. ``required``: the keys every such checkpoint has, a
    nested key written ``"meta.arch"``; a mapping ``{key: type}`` also checks each value's type. ``what`` names the
    file in errors (``"sfda2 source checkpoint"``). ``legacy=True`` also accepts a file without any format tag when
    it has every required key (checkpoints the package wrote before it tagged them); a different tag is always
    refused. Returns the checkpoint dict (tensors on the CPU)."""
    if not isinstance(format, str) or not format:
        raise TypeError(f"format must be a non-empty string, got {format!r}")
    p = _checked_file(path, what)
    foreign = f"{p} is not a file this package wrote ({what} expected)"

    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. torch's note on the pickle protocol of a foreign file
            obj = torch.load(p, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise InputFileError(
            f"{foreign}: it holds Python objects that a safe load (tensors and plain containers only) refuses",
            p,
        ) from None
    except Exception as e:  # noqa: BLE001 - torch raises RuntimeError/EOFError/KeyError/... on damaged files
        raise InputFileError(
            f"{foreign}: it cannot be read as a torch checkpoint (damaged, truncated or another format; "
            f"{type(e).__name__})",
            p,
        ) from None
    if not isinstance(obj, Mapping):
        raise InputFileError(f"{foreign}: it holds a {type(obj).__name__}, not a dict", p)
    obj = dict(obj)
    tag = obj.get(_FORMAT_KEY, _MISSING)
    if tag is _MISSING and not legacy:
        raise InputFileError(f"{foreign}: it has no format tag (expected {format!r})", p)
    if tag is not _MISSING and tag != format:
        raise InputFileError(f"{foreign}: its format tag is {tag!r}, expected {format!r}", p)
    req = dict(required) if isinstance(required, Mapping) else {k: None for k in required}
    missing = [k for k in req if _lookup(obj, k) is _MISSING]
    if missing:
        if tag is _MISSING:
            raise InputFileError(f"{foreign}: it has no format tag (expected {format!r})", p)
        raise InputFileError(
            f"{what} {p} lacks {', '.join(missing)}: damaged, or not a file this package wrote", p
        )
    for key, typ in req.items():
        if typ is not None and not isinstance(_lookup(obj, key), typ):
            got = type(_lookup(obj, key)).__name__
            raise InputFileError(
                f"{what} {p} has {key} of type {got}, expected {_type_names(typ)}: damaged, or not a file "
                "this package wrote"
            )
    return obj
