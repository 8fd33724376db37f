"""The error policy of every iclr24 package's Python API.

A public function or loader validates its input at its boundary and raises one of these, naming the argument or
file, what was expected and what came. Third-party exceptions (torch, numpy, PIL, json, zip) never reach a user raw:
they are caught where the package calls the library and re-raised as one of these ``from`` the original. Messages
never repeat torch's ``weights_only=False`` advice (that is the unsafe fix).

- :class:`InputError` (a ``ValueError``): a wrong shape, dtype, range, NaN/inf, an empty input, a bad option.
- :class:`InputFileError` (an ``InputError`` and a ``FileNotFoundError``): a file or folder that is missing, of the
  wrong kind (a folder where a file was expected), unreadable, corrupt or in another format. It is a
  ``FileNotFoundError`` so that ``except FileNotFoundError`` and ``except ValueError`` both catch it.

``except ValueError`` catches both, so code written against the earlier ``ValueError``/``FileNotFoundError`` raises
keeps working.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

__all__ = [
    "DataMissing",
    "InputError",
    "InputFileError",
    "InputFolderError",
    "InputNotAFolderError",
    "describe",
    "strip_unsafe_advice",
    "check_choice",
    "check_int",
    "check_layer_widths",
    "check_float",
    "check_finite",
    "check_array",
    "check_tensor",
]


class InputError(ValueError):
    """A bad argument to a public function: what was expected and what came."""


class InputFileError(InputError, FileNotFoundError):
    """A missing, wrong-kind, unreadable or corrupt input file. ``str()`` is the message alone (not the
    ``OSError`` tuple form)."""

    def __init__(self, message: str, path: str | os.PathLike | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.filename = None if path is None else os.fspath(path)

    def __str__(self) -> str:
        return self.message


class InputFolderError(InputFileError, IsADirectoryError):
    """A folder where a file was expected. Also an ``IsADirectoryError``, for code written against that."""


class InputNotAFolderError(InputFileError, NotADirectoryError):
    """A file where a folder was expected. Also a ``NotADirectoryError``, for code written against that."""


class DataMissing(InputFileError):
    """A registered data file is not in the data folder (:mod:`iclr24.paperkit.data.folder`); the message names
    the ``iclr24 data get`` command. An :class:`InputFileError`, so still a ``FileNotFoundError`` (and a
    ``ValueError``). Defined in the core so that :meth:`ClaimSet.timed` records it as ``skipped``."""


_UNSAFE_WORDS = (
    "weights_only",
    "safe_globals",
    "allowlist",
    "trusted source",
    "trust the source",
    "trust this",
    "arbitrary code",
    "file an issue",
    "documentation of torch.load",
    "two options",
)


def strip_unsafe_advice(message: object) -> str:
    """``message`` (an exception or its text) without torch's advice to re-run ``torch.load`` with
    ``weights_only=False`` (the unsafe fix) or to allow-list globals, without terminal colour codes, on one line:
    what is left says what was refused (``Unsupported global: GLOBAL argparse.Namespace ...``)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(message))
    if "WeightsUnpickler error:" in text:
        text = text.split("WeightsUnpickler error:", 1)[1]
    kept = [
        part.strip()
        for part in re.split(r"(?<=[.!?])\s+|\n+", text)
        if part.strip() and not any(w in part.lower() for w in _UNSAFE_WORDS)
    ]
    return " ".join(kept).strip()


def describe(value: object) -> str:
    """A short description of what came: ``tensor of shape (3, 4) and dtype float32``, ``str 'abc'``, ..."""
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        kind = type(value).__name__
        kind = "tensor" if kind == "Tensor" else "array" if kind == "ndarray" else kind
        return f"{kind} of shape {tuple(shape)} and dtype {str(dtype).replace('torch.', '')}"
    text = repr(value)
    if "\n" in text:  # a module or another object with a multi-line repr: its type says enough
        return f"{type(value).__name__} object"
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def check_int(value: object, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an ``int`` when it is an integer (Python or NumPy; not a bool, not a float) within
    ``[minimum, maximum]``; else one :class:`InputError` naming ``name``."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(f"{name} must be an integer, got {describe(value)}")
    v = int(value)
    if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        lo = "" if minimum is None else f">= {minimum}"
        hi = "" if maximum is None else f"<= {maximum}"
        raise InputError(f"{name} must be {' and '.join(x for x in (lo, hi) if x)}, got {v}")
    return v


def check_choice(value: object, name: str, choices: Sequence[object]) -> object:
    """``value`` unchanged when it is one of ``choices`` (a package's tuple of option names); else the
    :class:`InputError` ``"<name> must be one of <choices>, got <value!r>"``."""
    if value not in choices:
        raise InputError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_layer_widths(widths: object, name: str = "hidden", *, maximum: int = 2**17) -> object:
    """``widths`` unchanged when it is a sequence (not a string) of layer widths, each an integer in
    ``[1, maximum]``; else one :class:`InputError` naming ``name``."""
    if isinstance(widths, str | bytes) or not isinstance(widths, Sequence):
        raise InputError(f"{name} must be a sequence of layer widths, got {describe(widths)}")
    for w in widths:
        check_int(w, f"each {name} width", minimum=1, maximum=maximum)
    return widths


def check_float(
    value: object,
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    open_min: bool = False,
    open_max: bool = False,
) -> float:
    """``value`` as a finite ``float`` (a real number, not a bool) within the bounds (``open_min``/``open_max``
    exclude them); else one :class:`InputError` naming ``name``."""
    import math
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a real number, got {describe(value)}")
    v = float(value)
    if not math.isfinite(v):
        raise InputError(f"{name} must be finite, got {v}")
    low = minimum is not None and (v <= minimum if open_min else v < minimum)
    high = maximum is not None and (v >= maximum if open_max else v > maximum)
    if low or high:
        lo = "" if minimum is None else f"{'>' if open_min else '>='} {minimum}"
        hi = "" if maximum is None else f"{'<' if open_max else '<='} {maximum}"
        raise InputError(f"{name} must be {' and '.join(x for x in (lo, hi) if x)}, got {v}")
    return v


def check_finite(x: object, name: str, *, allow_empty: bool = False) -> object:
    """``x`` (a tensor or array) unchanged when it is not empty and holds no NaN/inf; else one :class:`InputError`
    naming ``name``. The check a metric makes before it answers."""
    import numpy as np

    if hasattr(x, "detach") and hasattr(x, "isfinite"):  # torch tensor
        t = x.detach()
        empty = t.numel() == 0
        finite = bool(t.isfinite().all()) if t.is_floating_point() or t.is_complex() else True
    else:
        a = np.asarray(x)
        empty = a.size == 0
        finite = bool(np.isfinite(a).all()) if np.issubdtype(a.dtype, np.inexact) else True
    if empty and not allow_empty:
        raise InputError(f"{name} is empty ({describe(x)}); expected at least one value")
    if not finite:
        raise InputError(f"{name} holds NaN or inf ({describe(x)}); expected finite values")
    return x


def check_array(
    x: object,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    kind: str = "real",
    finite: bool = True,
    allow_empty: bool = False,
    min_rows: int = 0,
):
    """``x`` as a NumPy array once it is array-like of ``kind`` (``"real"``: int/float/bool values, returned as
    float64; ``"int"``: integers, or floats with integral values, returned as int64; ``"any"``: as is), with
    ``ndim`` dimensions, non-empty (unless ``allow_empty``), at least ``min_rows`` long and (``finite``) without
    NaN/inf. Else one :class:`InputError` naming ``name`` and saying what came."""
    import numpy as np

    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor
        x = x.detach().cpu().numpy()
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise InputError(f"{name} must be an array, got {describe(x)} ({e})") from None
    if a.dtype == object or a.dtype.kind in "USVOMm":
        raise InputError(f"{name} must be an array of numbers, got {describe(x)}")
    dims = (ndim,) if isinstance(ndim, int) else ndim
    if dims is not None and a.ndim not in dims:
        want = " or ".join(f"{d}-D" for d in dims)
        raise InputError(f"{name} must be a {want} array, got {describe(a)}")
    if not allow_empty and a.size == 0:
        raise InputError(f"{name} is empty ({describe(a)}); expected at least one value")
    if a.ndim and len(a) < min_rows:
        raise InputError(f"{name} needs at least {min_rows} rows, got {describe(a)}")
    if a.dtype.kind == "c":
        raise InputError(f"{name} must be real, got {describe(a)}")
    if finite and a.dtype.kind == "f" and not np.isfinite(a).all():
        raise InputError(f"{name} holds NaN or inf ({describe(a)}); expected finite values")
    if kind == "real":
        return a.astype(np.float64, copy=False)
    if kind == "int":
        if a.dtype.kind == "f":
            if not np.isfinite(a).all() or not np.equal(np.round(a), a).all():
                raise InputError(
                    f"{name} must hold integers (labels, indices), got {describe(a)} with fractions"
                )
        elif a.dtype.kind not in "biu":
            raise InputError(f"{name} must hold integers, got {describe(a)}")
        return a.astype(np.int64)
    return a


def check_tensor(
    x: object,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    shape: tuple[int | None, ...] | None = None,
    kind: str = "float",
    allow_empty: bool = False,
    finite: bool = False,
):
    """``x`` unchanged once it is a torch tensor of ``kind`` (``"float"``: floating point; ``"int"``: integer;
    ``"bool"``; ``"any"``) with ``ndim`` dimensions and ``shape`` (``None`` entries match any size), non-empty
    unless ``allow_empty``; with ``finite`` also free of NaN/inf (a device sync: off by default for hot paths).
    Else one :class:`InputError` naming ``name``."""
    import torch

    if not isinstance(x, torch.Tensor):
        raise InputError(f"{name} must be a tensor, got {describe(x)}")
    dims = (ndim,) if isinstance(ndim, int) else ndim
    if shape is not None:
        dims = (len(shape),)
    if dims is not None and x.dim() not in dims:
        want = " or ".join(f"{d}-D" for d in dims)
        raise InputError(f"{name} must be a {want} tensor, got {describe(x)}")
    if shape is not None and any(w is not None and w != g for w, g in zip(shape, x.shape, strict=True)):
        want = "(" + ", ".join("*" if w is None else str(w) for w in shape) + ")"
        raise InputError(f"{name} must have shape {want}, got {describe(x)}")
    ok = {
        "float": x.is_floating_point(),
        "int": not x.is_floating_point() and not x.is_complex() and x.dtype != torch.bool,
        "bool": x.dtype == torch.bool,
        "any": True,
    }[kind]
    if not ok:
        raise InputError(f"{name} must be a {kind} tensor, got {describe(x)}")
    if not allow_empty and x.numel() == 0:
        raise InputError(f"{name} is empty ({describe(x)}); expected at least one value")
    if finite and x.is_floating_point() and not bool(torch.isfinite(x).all()):
        raise InputError(f"{name} holds NaN or inf ({describe(x)}); expected finite values")
    return x
