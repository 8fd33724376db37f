"""Atomic file writing: a result file is either the old one or the complete new one, never half written."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_write_json",
    "atomic_torch_save",
    "ensure_out_dir",
]


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    path = Path(path)
    if path.exists() and path.is_dir():
        raise IsADirectoryError(f"cannot write a file at {path}: it is an existing folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Atomically write ``text`` to ``path``."""
    return atomic_write_bytes(path, text.encode(encoding))


def atomic_write_json(path: str | os.PathLike, obj: Any, indent: int = 2) -> Path:
    """Atomically write ``obj`` as JSON (``allow_nan=False``: NaN/inf are an error, not a silent invalid file)."""
    text = json.dumps(obj, indent=indent, allow_nan=False, sort_keys=False) + "\n"
    return atomic_write_text(path, text)


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> Path:
    """``torch.save`` through a temporary file, so an interrupted save never leaves a corrupt checkpoint."""
    import io as _io

    import torch

    buf = _io.BytesIO()
    torch.save(obj, buf)
    return atomic_write_bytes(path, buf.getvalue())


def ensure_out_dir(out: str | os.PathLike) -> Path:
    """Create the output folder ``out`` (and parents); a clear error when it exists as a file."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} exists and is a file; expected a folder (existing or new)")
    out.mkdir(parents=True, exist_ok=True)
    return out
