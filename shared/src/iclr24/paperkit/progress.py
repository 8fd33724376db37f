"""tqdm progress bars that one switch silences (``--quiet``), and that stay out of CI logs."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

from tqdm.auto import tqdm

__all__ = ["progress", "set_quiet", "is_quiet"]

_QUIET = False


def set_quiet(quiet: bool = True) -> None:
    """Silence (or re-enable) every progress bar made by :func:`progress`."""
    global _QUIET
    _QUIET = bool(quiet)


def is_quiet() -> bool:
    return _QUIET


def _auto_disabled() -> bool:
    if _QUIET:
        return True
    if os.environ.get("CI"):
        return True
    stream = sys.stderr
    return not (hasattr(stream, "isatty") and stream.isatty())


def progress(
    iterable: Iterable | None = None,
    *,
    total: int | None = None,
    desc: str | None = None,
    disable: bool | None = None,
    **kwargs: Any,
) -> tqdm:
    """A tqdm bar; disabled when quiet, under CI, or when stderr is not a terminal (unless ``disable=False``)."""
    if disable is None:
        disable = _auto_disabled()
    return tqdm(iterable, total=total, desc=desc, disable=disable, leave=False, dynamic_ncols=True, **kwargs)
