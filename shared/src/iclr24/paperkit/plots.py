"""Saving figures: non-interactive (Agg), atomic, and closed afterwards so long runs do not pile up figures."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from .io import atomic_write_bytes

__all__ = ["save_figure", "pyplot"]


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed). Needs ``iclr24-paperkit[plots]``."""
    try:
        import matplotlib
    except ImportError:  # pragma: no cover
        raise ImportError("plots need matplotlib: pip install 'iclr24-paperkit[plots]'") from None
    if matplotlib.get_backend().lower() != "agg":
        matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | os.PathLike, dpi: int = 120) -> Path:
    """Write ``fig`` to ``path`` (format from the suffix: .png, .pdf, .svg) through a temporary file, then close it."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in ("png", "pdf", "svg", "jpg", "jpeg"):
        raise ValueError(f"figure path must end in .png, .pdf, .svg or .jpg, got {path.name!r}")
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format=fmt, dpi=dpi, bbox_inches="tight")
    finally:
        from matplotlib.figure import Figure

        if isinstance(fig, Figure):
            pyplot().close(fig)
    return atomic_write_bytes(path, buf.getvalue())
