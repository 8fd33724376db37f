"""Atomic file writing: a result file is either the old one or the complete new one, never half written; and
:func:`fields_dict`, the plain-data form of a result dataclass that such a file holds."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import InputError
from .errors import InputFileError
from .errors import InputFolderError
from .errors import InputNotAFolderError
from .errors import strip_unsafe_advice

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_write_json",
    "atomic_torch_save",
    "ensure_out_dir",
    "refuse_file_in_path",
    "readable_file",
    "read_text",
    "input_file_errors",
    "fields_dict",
]


def _current_umask() -> int:
    """The process umask, read without changing it where the OS allows (``/proc/self/status`` on Linux); elsewhere
    set and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _file_mode(path: Path) -> int:
    """The permission bits a plain ``open(path, "w")`` would give: an existing file keeps its own, a new one gets
    ``0o666 & ~umask`` (``mkstemp`` alone would give 0600 whatever the umask)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_current_umask()


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``. A new file gets the
    mode ``0o666 & ~umask``; an existing file keeps its mode."""
    path = Path(path)
    if path.exists() and path.is_dir():
        raise InputFolderError(f"cannot write a file at {path}: it is an existing folder", path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _file_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        else:  # pragma: no cover - Windows has no fchmod
            os.chmod(tmp, mode)
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


def refuse_file_in_path(out: str | os.PathLike, flag: str = "--out") -> Path:
    """A one-line ``NotADirectoryError`` when ``out`` (or a folder above it) is a file; creates nothing."""
    out = Path(out)
    for p in (out, *out.parents):
        if p.exists() and not p.is_dir():
            what = "is a file" if p == out else f"has a file in its path ({p})"
            raise NotADirectoryError(f"{flag} {out} {what}; expected a folder (existing or new)")
        if p.exists():
            break
    return out


def ensure_out_dir(
    out: str | os.PathLike, flag: str = "--out", *, shown: str | os.PathLike | None = None
) -> Path:
    """Create the output folder ``out`` (and parents) and check it is writable: a one-line ``NotADirectoryError``
    when it (or a parent) is a file, a ``PermissionError`` naming the folder when it cannot be written. ``shown``:
    the path the messages name (default ``out``)."""
    out = Path(out)
    name = Path(shown) if shown is not None else out
    refuse_file_in_path(name, flag)
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe.", dir=out)
        os.close(fd)
        os.unlink(probe)
    except PermissionError:
        raise PermissionError(f"{flag} {name} is not writable: choose a folder you can write to") from None
    except OSError as e:
        raise PermissionError(
            f"{flag} {name} cannot be used as an output folder: {e.strerror or e}"
        ) from None
    return out


def readable_file(path: str | os.PathLike, what: str = "file", *, allow_empty: bool = False) -> Path:
    """``path`` as a ``Path`` once it is an existing, non-empty file; else one :class:`InputFileError` line naming it
    and ``what`` it should be (a folder is an :class:`InputFolderError`, also an ``IsADirectoryError``)."""
    if not isinstance(path, str | os.PathLike):
        from .errors import InputError
        from .errors import describe

        raise InputError(f"{what} must be a path (str or os.PathLike), got {describe(path)}")
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"{what} {p} does not exist", p)
    if p.is_dir():
        raise InputFolderError(f"{what} {p} is a folder; expected a file", p)
    if not allow_empty and p.stat().st_size == 0:
        raise InputFileError(f"{what} {p} is empty (0 bytes)", p)
    return p


_readable_file = readable_file


@contextlib.contextmanager
def input_file_errors(path: str | os.PathLike | None = None) -> Iterator[None]:
    """Around a call into a reader that raises plain ``FileNotFoundError``/``NotADirectoryError``/
    ``IsADirectoryError``/``OSError``/``ValueError`` about a user's file or folder (a third-party loader, or
    paperkit's own dataset readers): the same message as the matching :class:`InputFileError` (still a subclass of
    what came), torch's unsafe advice stripped. InputErrors pass through unchanged."""
    try:
        yield
    except InputError:
        raise
    except NotADirectoryError as e:
        raise InputNotAFolderError(strip_unsafe_advice(e) or str(e), path) from None
    except IsADirectoryError as e:
        raise InputFolderError(strip_unsafe_advice(e) or str(e), path) from None
    except (FileNotFoundError, PermissionError) as e:
        raise InputFileError(strip_unsafe_advice(e) or str(e), path) from None
    except (OSError, ValueError, EOFError) as e:
        text = strip_unsafe_advice(e) or type(e).__name__
        where = f"{path}: " if path is not None and str(path) not in text else ""
        raise InputFileError(f"{where}{text}", path) from None


def read_text(
    path: str | os.PathLike, what: str = "text file", *, encoding: str = "utf-8", allow_empty: bool = False
) -> str:
    """The text of ``path`` once it is an existing file (non-empty unless ``allow_empty``) in ``encoding``. A
    binary or otherwise undecodable file is one :class:`InputFileError` naming it and the line of the first bad
    byte (never a raw ``UnicodeDecodeError``, which names no file)."""
    p = readable_file(path, what, allow_empty=allow_empty)
    data = p.read_bytes()
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputFileError(
            f"{what} {p} is not {encoding} text (byte {e.start}, line {line}): a binary file, or another encoding",
            p,
        ) from None


def fields_dict(
    obj: Any, leave_out: Iterable[str] = (), rename: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The fields of the dataclass instance ``obj`` as a dict, in field order, ready for JSON: the body of a result's
    ``to_dict``. ``leave_out``: fields not written (a tensor, a model); ``rename``: field name -> key, for a key
    that differs from its field. A tuple value becomes a list; every other value is taken as it is (not copied,
    not converted: unlike :func:`dataclasses.asdict`, a nested object stays as it is)."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise TypeError(f"fields_dict needs a dataclass instance, got {type(obj).__name__}")
    fields = dataclasses.fields(obj)
    skip, keys = set(leave_out), dict(rename or {})
    unknown = sorted((skip | set(keys)) - {f.name for f in fields})
    if unknown:
        raise ValueError(f"{type(obj).__name__} has no field(s) {unknown}")
    out: dict[str, Any] = {}
    for f in fields:
        if f.name not in skip:
            v = getattr(obj, f.name)
            out[keys.get(f.name, f.name)] = list(v) if isinstance(v, tuple) else v
    return out
