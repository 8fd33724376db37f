"""Run folders: an ``--out`` folder holds one run, and a new run never leaves an earlier run's files beside its own.

Every ``iclr24`` command with ``--out`` goes through :class:`RunFolder` (:class:`iclr24.paperkit.cli.App` does it):

- A run writes a marker, ``.iclr24-run.json``, into its folder: the command, its arguments, when it ran and how it
  ended (``running``, ``complete``, ``exit N``, ``failed``, ``interrupted``).
- ``--out`` new or empty: the run writes there.
- ``--out`` holding an earlier run: refused (one line naming ``--overwrite``, exit 2) unless ``overwrite``; then the
  earlier folder is moved aside (to ``.<name>.iclr24-old-<pid>`` beside it), the run writes a fresh folder, and the
  earlier one is deleted once the run has returned (whatever its exit code), or put back when it raised or was
  interrupted. A process killed outright leaves the earlier folder aside: the next run into that ``--out`` puts it
  back first.
- Two kinds of command may write into a folder holding a run: one that continues its own run (``resume``: a training
  that resumes from its checkpoint) and one that adds its files to a run of another command (``adds_to``: the plots
  or scores of a run, written into the run's folder).
- ``--out`` not empty and without a marker: refused, with or without ``overwrite`` (``--overwrite`` replaces only a
  folder an iclr24 run wrote, never a folder of other files).
- A lock file beside the folder (``.<name>.iclr24-lock``, held with ``fcntl.flock``, so a killed process leaves no
  stale lock) refuses a second run into the same ``--out`` while one runs.
- ``parts``: a command whose ``--out`` is a shared folder (``iclr24 reproduce --out results``, where other commands'
  runs live too) owns only the entries it names (``REPORT.md``, ``srigl/reproduce/``; a trailing ``/`` marks a
  folder, which gets a marker of its own); the rules above apply to those entries, and to the ones the earlier run
  of that command named.

A failed run (an exception) into a new folder removes what it wrote after a user error, and keeps it after a crash or
an interrupt (an interrupted training keeps its checkpoints; the marker says ``interrupted``); a run that wrote
nothing into ``--out`` (its output went elsewhere) leaves no marker, and no folder it created.

    rf = RunFolder("results/x", command="demo go", argv=["go"], overwrite=False)
    rf.open()  # refuses with RunFolderError, or prepares the folder
    try:
        ...  # write into results/x
    except ValueError:
        rf.fail("user")
        raise
    else:
        rf.done(0)
    finally:
        rf.close()
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["MARKER", "RunFolder", "RunFolderError", "read_marker", "is_secondary_rank"]

MARKER = ".iclr24-run.json"
FORMAT = "iclr24.run/1"
_INNER_LOCK = ".iclr24-lock"  # the lock inside the folder, where the folder above cannot be written
_MANIFEST = ".iclr24-parts.json"  # in the set-aside folder of a ``parts`` run: what was moved there


class RunFolderError(Exception):
    """A user error about the ``--out`` folder: printed as one line, exit code 2."""


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_secondary_rank() -> bool:
    """True in a torchrun worker other than rank 0 (rank 0 alone manages the run folder)."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1")) > 1 and int(os.environ.get("RANK", "0")) != 0
    except ValueError:
        return False


def read_marker(folder: str | os.PathLike) -> dict | None:
    """The run marker of ``folder``, or None when it has none. A marker that cannot be read still marks a run (of an
    unknown command), so ``--overwrite`` can replace it."""
    p = Path(folder) / MARKER
    if not p.is_file():
        return None
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("command"), str):
        return {"format": FORMAT, "command": "an unknown command", "runs": []}
    return doc


def _describe(marker: dict) -> str:
    runs = [r for r in marker.get("runs") or [] if isinstance(r, dict)]
    last = runs[-1] if runs else {}
    bits = [str(last.get(k)) for k in ("status", "started") if last.get(k)]
    return f"run of `{marker['command']}`" + (f" ({', '.join(bits)})" if bits else "")


def _first_missing(p: Path) -> Path | None:
    """The outermost folder on the way to ``p`` that does not exist yet (what creating ``p`` creates), or None."""
    if p.exists() or p.is_symlink():
        return None
    top = p
    for parent in p.parents:
        if parent.exists() or parent.is_symlink():
            break
        top = parent
    return top


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    elif p.exists() or p.is_symlink():
        p.unlink(missing_ok=True)


def _write_json(path: Path, doc: dict) -> None:
    from .io import atomic_write_json

    atomic_write_json(path, doc)


class _Lock:
    """An exclusive, non-blocking lock on ``path`` (``fcntl.flock``; without fcntl a file created with
    ``O_CREAT | O_EXCL``). The lock file is removed on release."""

    def __init__(self, path: Path, info: dict) -> None:
        self.path, self.info, self.fd = path, info, None

    def acquire(self) -> dict | None:
        """Take the lock; returns None, or what the holder wrote into the lock file when another process holds it."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            fcntl = None
        while True:
            if fcntl is None:  # pragma: no cover
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    return self._holder() or {"lock": str(self.path)}
                break
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return self._holder() or {}
            try:  # the holder before us may have removed the file between our open and flock: lock the new one
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self.fd = fd
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(self.info).encode())
        return None

    def _holder(self) -> dict | None:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # while still held: a waiting process then locks a fresh file
        finally:
            os.close(self.fd)
            self.fd = None


class RunFolder:
    """The ``--out`` folder of one run (see the module docstring for the rules).

    ``command``: what the marker names (``"srigl train"``); ``argv``: the arguments, recorded in the marker.
    ``overwrite``: replace an earlier run. ``resume``: this run continues a run of the same command already there.
    ``adds_to``: commands (full names) into whose run folders this one writes its files beside theirs. ``parts``:
    the entries of a shared ``--out`` this run owns (folders end with ``/``). ``flag`` names the option in messages.
    """

    def __init__(
        self,
        out: str | os.PathLike,
        *,
        command: str,
        argv: Sequence[str] = (),
        overwrite: bool = False,
        resume: bool = False,
        adds_to: Sequence[str] = (),
        parts: Sequence[str] | None = None,
        flag: str = "--out",
    ) -> None:
        self.given = Path(out)
        self.path = Path(os.path.realpath(out))
        self.command, self.argv = command, [str(a) for a in argv]
        self.overwrite, self.resume, self.adds_to = bool(overwrite), bool(resume), tuple(adds_to)
        self.parts = None if parts is None else list(dict.fromkeys(str(p) for p in parts))
        for p in self.parts or ():
            rel = Path(p.rstrip("/"))
            if rel.is_absolute() or not rel.parts or ".." in rel.parts or p.strip("/") in ("", "."):
                raise ValueError(f"parts must be paths inside the folder, got {p!r}")
        self.flag = flag
        self.mode: str | None = None  # "new", "replace" or "continue" once open
        self.created: Path | None = None  # the outermost folder this run created (None: --out existed)
        self.existed_empty = False
        self.backup: Path | None = None  # where the earlier run was moved aside
        self._old_marker: str | None = None  # the marker text before a continuing run changed it
        self._made: list[
            tuple[Path, Path]
        ] = []  # parts mode: (folder entry, outermost folder created for it)
        self._entry: dict = {}
        self._lock: _Lock | None = None

    # -- names beside the folder ---------------------------------------------------------------------------------
    def _beside(self, kind: str) -> Path:
        name = self.path.name or "root"
        return self.path.parent / f".{name}.iclr24-{kind}"

    def _say(self, what: str) -> str:
        return f"{self.flag} {self.given} {what}"

    # -- opening --------------------------------------------------------------------------------------------------
    def open(self) -> RunFolder:
        """Check and lock the folder, set an earlier run aside (``overwrite``) and write the marker. Raises
        :class:`RunFolderError` (or the ``OSError`` of a folder that cannot be written) and then leaves nothing."""
        from .io import ensure_out_dir
        from .io import refuse_file_in_path

        refuse_file_in_path(self.given, self.flag)
        self.created = _first_missing(self.path)
        try:
            self._take_lock()
            self._recover()
            self._decide()
            if self.mode == "replace" and self.parts is None:
                self._set_aside_folder()
            ensure_out_dir(self.path, self.flag, shown=self.given)
            self._entry = {"command": self.command, "argv": self.argv, "started": _now(), "status": "running"}
            if self.parts is not None:
                self._open_parts()
            elif self.mode == "continue":
                m = self.path / MARKER
                self._old_marker = m.read_text(encoding="utf-8") if m.is_file() else None
                doc = read_marker(self.path) or {"format": FORMAT, "command": self.command, "runs": []}
                doc["runs"] = [*[r for r in doc.get("runs") or [] if isinstance(r, dict)], self._entry]
                _write_json(m, doc)
            else:
                _write_json(self.path / MARKER, self._marker_doc())
        except BaseException:
            self._undo_open()
            raise
        return self

    def _marker_doc(self, parts: list[str] | None = None) -> dict:
        doc: dict[str, Any] = {"format": FORMAT, "command": self.command}
        if parts is not None:
            doc["parts"] = parts
        doc["runs"] = [self._entry]
        return doc

    def _take_lock(self) -> None:
        info = {"pid": os.getpid(), "command": self.command, "started": _now()}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = _Lock(self._beside("lock"), info)
            held = lock.acquire()
        except PermissionError:
            if not self.path.is_dir():
                raise PermissionError(
                    self._say("cannot be created: its parent folder is not writable")
                ) from None
            lock = _Lock(self.path / _INNER_LOCK, info)  # the folder above is read-only: lock inside
            try:
                held = lock.acquire()
            except PermissionError:
                raise PermissionError(
                    self._say("is not writable: choose a folder you can write to")
                ) from None
        if held is not None:
            who = ", ".join(f"{k} {held[k]}" for k in ("command", "pid", "started") if held.get(k))
            raise RunFolderError(
                self._say(
                    f"is in use by another run ({who or 'its lock: ' + str(lock.path)}); wait for it to end, "
                )
                + f"or choose another {self.flag}"
            )
        self._lock = lock

    def _entries(self, folder: Path | None = None) -> list[Path]:
        folder = self.path if folder is None else folder
        if not folder.is_dir():
            return []
        return [p for p in folder.iterdir() if p.name != _INNER_LOCK]

    def _decide(self) -> None:
        if self.parts is not None:
            return  # _open_parts decides
        entries = self._entries()
        if not entries:
            self.mode, self.existed_empty = "new", self.path.is_dir()
            return
        marker = read_marker(self.path)
        if marker is None:
            raise RunFolderError(
                self._say(
                    f"is not empty and holds no iclr24 run (no {MARKER}): choose a new or empty folder "
                    "(--overwrite replaces only a folder an iclr24 run wrote)"
                )
            )
        if marker.get("parts") is not None:
            raise RunFolderError(
                self._say(
                    f"holds the results of `{marker['command']}` beside other runs: choose another {self.flag}"
                )
            )
        if marker["command"] in self.adds_to:
            self.mode = "continue"
        elif self.overwrite:
            self.mode = "replace"
        elif marker["command"] == self.command and self.resume:
            self.mode = "continue"
        else:
            raise RunFolderError(
                self._say(
                    f"holds an earlier {_describe(marker)}: pass --overwrite to replace it, or choose another "
                    f"{self.flag}"
                )
            )

    def _set_aside_folder(self) -> None:
        if isinstance(self._lock, _Lock) and self._lock.path.parent == self.path:
            raise RunFolderError(
                self._say("cannot be replaced: the folder above it is not writable; empty it yourself")
            )
        self.backup = self._beside(f"old-{os.getpid()}")
        _remove(self.backup)
        os.rename(self.path, self.backup)

    # -- parts: a shared --out -------------------------------------------------------------------------------------
    def _part(self, p: str) -> Path:
        return self.path / p.rstrip("/")

    def _present(self, p: str) -> bool:
        """An entry of the earlier run: a file, or a folder that is not empty."""
        q = self._part(p)
        if q.is_dir() and not q.is_symlink():
            return any(q.iterdir())
        return q.exists() or q.is_symlink()

    def _open_parts(self) -> None:
        assert self.parts is not None
        marker = read_marker(self.path)
        if marker is not None and marker.get("parts") is None:
            raise RunFolderError(
                self._say(f"holds an earlier {_describe(marker)}: choose another {self.flag}")
            )
        old = [str(p) for p in (marker or {}).get("parts") or [] if isinstance(p, str)]
        present = [p for p in dict.fromkeys([*old, *self.parts]) if self._present(p)]
        if marker is not None or present:
            if not self.overwrite:
                what = ", ".join(present[:3]) + (", ..." if len(present) > 3 else "")
                earlier = _describe(marker) if marker is not None else "run"
                raise RunFolderError(
                    self._say(
                        f"holds an earlier {earlier}{f' ({what})' if what else ''}: pass --overwrite to replace "
                        f"it, or choose another {self.flag}"
                    )
                )
            self.mode = "replace"
            self.backup = self._beside(f"old-{os.getpid()}")
            _remove(self.backup)
            self.backup.mkdir()
            _write_json(self.backup / _MANIFEST, {"parts": present, "marker": marker is not None})
            try:
                for p in present:
                    dest = self.backup / p.rstrip("/")
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    os.rename(self._part(p), dest)
                if marker is not None:
                    os.rename(self.path / MARKER, self.backup / MARKER)
            except BaseException:
                self._restore_parts(self.backup)  # what was moved goes back; nothing else was touched
                self.backup, self.mode = None, None
                raise
        else:
            self.mode = "new"
        for p in self.parts:
            if p.endswith("/"):
                q = self._part(p)
                top = _first_missing(q)
                if top is not None:
                    self._made.append((q, top))
                q.mkdir(parents=True, exist_ok=True)
                _write_json(q / MARKER, {**self._marker_doc(), "part_of": str(self.given)})
        _write_json(self.path / MARKER, self._marker_doc(self.parts))

    def _remove_parts(self) -> None:
        """Remove what this parts run wrote: its entries, its marker, the folders it created."""
        for p in self.parts or ():
            _remove(self._part(p))
        (self.path / MARKER).unlink(missing_ok=True)
        for q, top in reversed(self._made):
            _remove_empty_chain(q.parent, top)

    def _restore_parts(self, backup: Path) -> None:
        try:
            manifest = json.loads((backup / _MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = {"parts": [], "marker": False}
        for p in manifest.get("parts") or []:
            src = backup / str(p).rstrip("/")
            if src.exists():
                _remove(self._part(p))
                self._part(p).parent.mkdir(parents=True, exist_ok=True)
                os.rename(src, self._part(p))
        if manifest.get("marker") and (backup / MARKER).exists():
            os.replace(backup / MARKER, self.path / MARKER)
        _remove(backup)

    # -- a run killed outright -------------------------------------------------------------------------------------
    def _recover(self) -> None:
        """Put back an earlier run that a killed ``--overwrite`` run had set aside; drop leftover trash."""
        name = self.path.name or "root"
        parent = self.path.parent
        if not parent.is_dir():
            return
        for p in parent.iterdir():
            if p.name.startswith(f".{name}.iclr24-trash-"):
                _remove(p)
        for p in sorted(parent.glob(f".{name}.iclr24-old-*")):
            if (p / _MANIFEST).is_file():
                self._restore_parts(p)
            elif self.path.exists() and read_marker(self.path) is None and self._entries():
                raise RunFolderError(
                    self._say(
                        f"and {p} both exist (an --overwrite run was killed): keep one of them yourself"
                    )
                )
            else:
                _remove(self.path)
                os.rename(p, self.path)
            print(
                f"{self.command}: put back the earlier run in {self.given} (an --overwrite run into it had been "
                "killed before it ended)",
                file=sys.stderr,
            )

    # -- ending -------------------------------------------------------------------------------------------------
    def _finish_marker(self, status: str) -> None:
        self._entry.update(status=status, finished=_now())
        m = self.path / MARKER
        doc = read_marker(self.path) if self.mode == "continue" else None
        if doc is not None:
            runs = [r for r in doc.get("runs") or [] if isinstance(r, dict)]
            if runs and runs[-1].get("started") == self._entry["started"]:
                runs[-1] = self._entry
            doc["runs"] = runs
        else:
            doc = self._marker_doc(self.parts)
        if self.path.is_dir():
            _write_json(m, doc)
        if self.parts is not None:
            for p in self.parts:
                if p.endswith("/") and self._part(p).is_dir():
                    _write_json(self._part(p) / MARKER, {**self._marker_doc(), "part_of": str(self.given)})

    def _only_marker(self) -> bool:
        return [p.name for p in self._entries()] == [MARKER]

    def _drop_backup(self) -> None:
        if (
            self.parts is not None and self.backup is not None
        ):  # folders left empty by the earlier run's entries
            try:
                moved = json.loads((self.backup / _MANIFEST).read_text(encoding="utf-8")).get("parts") or []
            except (OSError, ValueError):
                moved = []
            for p in moved:
                d = self._part(str(p)).parent
                while d != self.path and self.path in d.parents and d.is_dir() and not any(d.iterdir()):
                    d.rmdir()
                    d = d.parent
        if self.backup is not None and self.backup.exists():
            trash = self._beside(f"trash-{os.getpid()}")
            os.rename(self.backup, trash)  # never a half-deleted earlier run that looks restorable
            _remove(trash)
        self.backup = None

    def _put_back(self) -> None:
        """Undo a replacing run: remove what it wrote, put the earlier run back."""
        if self.backup is None:
            return
        if self.parts is not None:
            self._remove_parts()
            self._restore_parts(self.backup)
        else:
            _remove(self.path)
            os.rename(self.backup, self.path)
        self.backup = None

    def done(self, rc: int | None) -> None:
        """The command returned ``rc``: the run is complete (``exit N`` when ``rc`` is not 0); an earlier run it
        replaced is deleted. A run that wrote nothing into a new folder leaves no marker there (and no folder it
        created); one that wrote nothing and exited non-zero puts an earlier run it was replacing back."""
        if self.mode is None:
            return
        rc = int(rc or 0)
        nothing = self.parts is None and self.mode != "continue" and self._only_marker()
        if nothing and (self.mode == "new" or rc):
            self._empty_out()
            self._put_back()
        else:
            self._finish_marker("complete" if rc == 0 else f"exit {rc}")
            self._drop_backup()
        self.mode = None

    def fail(self, kind: str) -> None:
        """The command raised: ``kind`` is ``"user"`` (a user error: whatever this run wrote goes), ``"interrupted"``
        or ``"failed"`` (a crash: a new folder keeps what was written, the marker says how the run ended). A
        replacing run always puts the earlier run back."""
        if self.mode is None:
            return
        if kind not in ("user", "interrupted", "failed"):
            raise ValueError(f"kind must be 'user', 'interrupted' or 'failed', got {kind!r}")
        if self.mode == "replace":
            self._put_back()
        elif self.mode == "continue":
            if kind == "user":
                from .io import atomic_write_text

                m = self.path / MARKER
                if self._old_marker is None:
                    m.unlink(missing_ok=True)
                else:
                    atomic_write_text(m, self._old_marker)
            else:
                self._finish_marker(kind)
        elif kind == "user":
            if self.parts is not None:
                self._remove_parts()
            self._empty_out(everything=True)
        else:
            if self.parts is None and self._only_marker():
                self._empty_out()
            else:
                self._finish_marker(kind)
        self.mode = None

    def _empty_out(self, everything: bool = False) -> None:
        """Remove this run's output from a new folder: all of it with ``everything`` (a folder that existed empty
        is emptied again; a parts run's entries are gone already), else only the marker of a run that wrote
        nothing. :meth:`close` then removes the folders this run created that are left empty."""
        if not everything:
            (self.path / MARKER).unlink(missing_ok=True)
        elif self.parts is not None:
            if self.created is not None:
                _remove(self.path)
        elif self.existed_empty:
            for p in self._entries():
                _remove(p)
        else:
            _remove(self.path)  # the folder did not exist before this run

    def _undo_open(self) -> None:
        """open() raised: leave nothing it made (an earlier run set aside goes back)."""
        if self.parts is not None and self.mode is not None:
            self._remove_parts()
        if self.backup is not None:
            self._put_back()
        elif self.mode is not None and self.parts is None and self.mode != "continue":
            self._empty_out(everything=True)
        self.mode = None
        self.close()

    def close(self) -> None:
        """Release the lock (and remove the folders above ``--out`` that only held it)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        if self.created is not None:
            _remove_empty_chain(self.path, self.created)

    def __enter__(self) -> RunFolder:
        return self.open()

    def __exit__(self, typ, exc, tb) -> None:
        try:
            if typ is None:
                self.done(0)
            elif issubclass(typ, KeyboardInterrupt):
                self.fail("interrupted")
            else:
                self.fail("failed")
        finally:
            self.close()


def _remove_empty_chain(inner: Path, top: Path) -> None:
    """Remove ``inner`` and the folders above it up to ``top`` (included) while they are empty."""
    if inner != top and top not in inner.parents:
        return
    chain = [inner, *[p for p in inner.parents if p == top or top in p.parents]]
    for d in chain:  # innermost first; stops at the first folder that is not empty
        if not d.exists() and not d.is_symlink():
            continue
        try:
            d.rmdir()
        except OSError:
            return
