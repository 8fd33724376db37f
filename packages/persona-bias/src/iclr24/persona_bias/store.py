"""The resumable run store: every response appended to JSONL as it arrives, keyed by
``(model, persona, template, dataset, id)``.

Appends take an exclusive ``flock`` and write each record as one complete line with ``O_APPEND``, so two runs
sharing a store never interleave bytes; a line torn by a killed process is isolated (the next append starts on a
fresh line) and skipped when reading. A killed run resumes by skipping every key already present.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from iclr24.paperkit.errors import InputError

try:  # POSIX advisory locks; on other systems the in-process lock still serialises threads
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["RunStore", "record_key", "KEY_FIELDS"]

KEY_FIELDS = ("model", "persona", "template", "dataset", "id")


def record_key(rec: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """The store key of a record; ids are compared by their JSON text (so 3 and "3" stay distinct)."""
    missing = [k for k in KEY_FIELDS if k not in rec]
    if missing:
        raise InputError(f"record is missing key fields {missing}; a record needs {', '.join(KEY_FIELDS)}")
    return (
        str(rec["model"]),
        str(rec["persona"]),
        str(rec["template"]),
        str(rec["dataset"]),
        json.dumps(rec["id"]),
    )


class RunStore:
    """A folder holding ``responses.jsonl``. ``RunStore(path)`` creates the folder when needed. Records are written
    straight to the OS (a killed process loses nothing written); ``durable=True`` also fsyncs each one."""

    FILENAME = "responses.jsonl"

    def __init__(self, path: str | os.PathLike, durable: bool = False) -> None:
        self.durable = durable  # fsync after every record (survives power loss, not only a killed process)
        self.root = Path(path)
        if self.root.exists() and not self.root.is_dir():
            raise NotADirectoryError(f"run store {self.root} exists and is a file; expected a folder")
        self.root.mkdir(parents=True, exist_ok=True)
        self.path = self.root / self.FILENAME
        self._lock = threading.Lock()
        self._index: dict[tuple, dict] = {}
        self._offset = 0
        self.skipped_lines = 0
        self.refresh()

    def refresh(self) -> None:
        """Read records appended since the last read (also by other processes)."""
        if not self.path.exists():
            return
        with self.path.open("rb") as f:
            f.seek(self._offset)
            data = f.read()
        end = data.rfind(b"\n")
        if end < 0:
            return  # only a partial line so far
        for line in data[: end + 1].splitlines():
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                self._index[record_key(rec)] = rec
            except (json.JSONDecodeError, ValueError, UnicodeDecodeError):
                self.skipped_lines += 1  # a torn line from a killed writer
        self._offset += end + 1

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def get(self, key: tuple) -> dict | None:
        return self._index.get(key)

    def keys(self) -> set[tuple]:
        return set(self._index)

    def records(self) -> Iterator[dict]:
        """All records, the latest per key."""
        return iter(list(self._index.values()))

    def append(self, rec: dict[str, Any]) -> None:
        """Append one record atomically (one complete line, under an exclusive file lock)."""
        key = record_key(rec)
        line = (json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    size = os.fstat(fd).st_size
                    if size:
                        with open(self.path, "rb") as r:
                            r.seek(size - 1)
                            if r.read(1) != b"\n":  # a torn line from a killed writer: start a fresh line
                                line = b"\n" + line
                    os.write(fd, line)
                    if self.durable:
                        os.fsync(fd)
                finally:
                    if fcntl is not None:
                        fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
            self._index[key] = rec
