"""Checks every paper package's tests call, so nineteen packages test their contract the same way.

    from iclr24.paperkit.testing import check_cli_contract, check_paper_smoke, run_readme_blocks

    def test_smoke_records(tmp_path):
        check_paper_smoke(PAPER, tmp_path)

    def test_cli_contract(tmp_path):
        check_cli_contract(main, tmp_path)

    def test_readme_quickstart(tmp_path):
        run_readme_blocks(Path(__file__).parents[1] / "README.md", cwd=tmp_path)

Each raises ``AssertionError`` with what went wrong (pytest shows it), so they work with plain pytest.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .claims import ClaimSet, Paper, RunConfig

__all__ = [
    "check_star_import",
    "check_paper_smoke",
    "check_records",
    "check_cli_contract",
    "run_readme_blocks",
    "readme_blocks",
    "run_rank_script",
]


def _finite_numbers(obj: Any, where: str) -> None:
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return
    if isinstance(obj, int | float):
        assert math.isfinite(obj), f"{where}: non-finite number {obj!r}"
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _finite_numbers(v, f"{where}.{k}")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            _finite_numbers(v, f"{where}[{i}]")


def check_records(cs: ClaimSet, out: Path, *, mode: str = "smoke", min_claims: int = 1) -> None:
    """A claim set's records: enough claims, the paper's name on each, verdicts right for the mode, no ``error``
    records, finite JSON-serialisable numbers, and every artefact present under ``out``."""
    assert isinstance(cs, ClaimSet), f"run() must return a ClaimSet, got {type(cs).__name__}"
    assert len(cs.claims) >= min_claims, f"expected at least {min_claims} claim(s), got {len(cs.claims)}"
    errors = [f"{c.claim}: {c.message}" for c in cs.claims if c.status == "error"]
    assert not errors, "measurements raised: " + "; ".join(errors)
    for c in cs.claims:
        assert c.paper == cs.paper, f"claim {c.claim!r} names paper {c.paper!r}, expected {cs.paper!r}"
        if mode == "smoke":
            assert c.status in ("smoke", "skipped"), f"smoke mode gave {c.claim!r} the verdict {c.status!r}"
        else:
            assert c.status in ("holds", "fails", "skipped"), f"{c.claim!r}: verdict {c.status!r}"
    doc = cs.to_dict()
    text = json.dumps(doc, allow_nan=False)
    _finite_numbers(json.loads(text), cs.paper)
    for a in doc["artifacts"]:
        p = Path(out) / a
        assert p.is_file() and p.stat().st_size > 0, f"artefact {a} is missing or empty under {out}"


def check_paper_smoke(
    paper: Paper, tmp_path: str | os.PathLike, *, seed: int = 0, min_claims: int = 1
) -> ClaimSet:
    """Run ``paper`` in smoke mode into ``tmp_path`` and check its records (see :func:`check_records`)."""
    assert isinstance(paper, Paper), f"expected a Paper, got {type(paper).__name__}"
    out = Path(tmp_path)
    cs = paper.check(RunConfig(mode="smoke", seed=seed, out=out, progress=False))
    check_records(cs, out, mode="smoke", min_claims=min_claims)
    assert all(f.paper == paper.name for f in cs.facts)
    return cs


def _run(main: Callable[[Sequence[str]], int], argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    return int(rc or 0), out.getvalue(), err.getvalue()


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def check_cli_contract(
    main: Callable[[Sequence[str]], int],
    tmp_path: str | os.PathLike,
    *,
    app: Any = None,
    out_command: Sequence[str] | None = ("reproduce", "--smoke"),
) -> None:
    """A package CLI's contract: ``--help`` works for the app and each command; every option has help text; a bad
    flag is one line on stderr and exit 2; ``--out`` pointing at a file is refused with one line (exit 2) before any
    work, and the file is left as it was. ``app`` defaults to ``main.__self__`` (``main = app.main``)."""
    app = app if app is not None else getattr(main, "__self__", None)
    assert app is not None and hasattr(app, "parser"), "pass app= (main is not an App's bound main)"
    rc, out, _ = _run(main, ["--help"])
    assert rc == 0 and out.strip(), "--help must print usage and exit 0"
    for name, sub in _subparsers(app.parser).items():
        rc, text, _ = _run(main, [name, "--help"])
        assert rc == 0, f"{name} --help exited {rc}"
        for a in sub._actions:
            if a.option_strings and a.help is None and not isinstance(a, argparse._HelpAction):
                raise AssertionError(
                    f"{app.prog} {name}: option {'/'.join(a.option_strings)} has no help text"
                )
            if a.help == argparse.SUPPRESS:
                continue
    rc, _, err = _run(main, ["--no-such-flag-xyz"])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1, f"a bad flag must give one line and exit 2, got rc={rc}: {err!r}"
    if out_command:
        blocker = Path(tmp_path) / "a-file-not-a-folder"
        blocker.write_text("keep me")
        rc, _, err = _run(main, [*out_command, "--out", str(blocker), "--quiet"])
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert rc == 2 and len(lines) == 1 and str(blocker) in lines[0], (
            f"--out at a file must be refused in one line naming it, got rc={rc}: {err!r}"
        )
        assert blocker.read_text() == "keep me", "--out at a file was overwritten"


def readme_blocks(path: str | os.PathLike, lang: str = "python") -> list[str]:
    """The fenced code blocks of one language in a Markdown file, in order."""
    text = Path(path).read_text(encoding="utf-8")
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def run_readme_blocks(
    path: str | os.PathLike, *, cwd: str | os.PathLike | None = None, blocks: Sequence[int] | None = None
) -> dict:
    """Execute a README's Python blocks in order in one namespace (inside ``cwd`` when given, so files they write
    land there) and return the namespace. ``blocks`` picks some by index. Stdout is captured."""
    code = readme_blocks(path)
    assert code, f"{path} has no ```python blocks"
    chosen = [code[i] for i in blocks] if blocks is not None else code
    ns: dict = {"__name__": "__readme__"}
    prev = os.getcwd()
    buf = io.StringIO()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(buf):
            for i, block in enumerate(chosen):
                exec(compile(block, f"{Path(path).name}[python block {i}]", "exec"), ns)
    finally:
        os.chdir(prev)
    ns["__stdout__"] = buf.getvalue()
    return ns


def run_rank_script(
    code: str, folder: str | os.PathLike, *, nproc: int = 2, timeout: float = 600
) -> list[dict]:
    """Run ``code`` as a script under torchrun (``nproc`` gloo ranks on loopback) with ``folder`` as its one
    argument, and return what each rank wrote to ``<folder>/r<rank>.json`` (rank order). The script writes that
    file itself, e.g. ``json.dump(result, open(f"{sys.argv[1]}/r{info.rank}.json", "w"))``."""
    from .distributed import run_torchrun

    folder = Path(folder)
    script = folder / "rank_script.py"
    script.write_text(code)
    run_torchrun([str(script), str(folder)], nproc=nproc, timeout=timeout)
    out = []
    for rank in range(nproc):
        f = folder / f"r{rank}.json"
        assert f.is_file(), f"rank {rank} wrote no {f.name} in {folder}"
        out.append(json.loads(f.read_text()))
    return out


def check_star_import(module: str) -> list[str]:
    """``from <module> import *`` works: every name in ``__all__`` exists (a name listed but never imported makes the
    star import raise). Returns the names; raises ``AssertionError`` naming the missing ones."""
    import importlib

    mod = importlib.import_module(module)
    names = list(getattr(mod, "__all__", []))
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, f"{module}.__all__ names {missing}, which {module} does not define or import"
    ns: dict[str, Any] = {}
    exec(f"from {module} import *", ns)  # noqa: S102 - the real statement a user types
    assert set(names) <= set(ns), f"from {module} import * misses {sorted(set(names) - set(ns))}"
    return names
