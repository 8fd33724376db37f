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
    """Silence (or re-enable) every progress bar made by :func:`progress`, and the third-party bars a run may show:
    Hugging Face's (``huggingface_hub``, and ``transformers``' "Loading checkpoint shards"), now if those libraries
    are loaded and through ``HF_HUB_DISABLE_PROGRESS_BARS`` for a later import."""
    global _QUIET
    _QUIET = bool(quiet)
    import os
    import sys

    if "huggingface_hub" not in sys.modules:  # read once, when the hub is first imported
        if quiet:
            os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
        else:
            os.environ.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    hub = sys.modules.get("huggingface_hub.utils")
    if hub is not None:
        (hub.disable_progress_bars if quiet else hub.enable_progress_bars)()
    tf = sys.modules.get("transformers.utils.logging")
    if tf is not None:
        (tf.disable_progress_bar if quiet else tf.enable_progress_bar)()


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
