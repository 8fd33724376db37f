#!/usr/bin/env python3
"""Scaffold a paper package: ``python tools/new_package.py NAME --title "..." --summary "..." [--dep torch ...]``.

Creates ``packages/NAME`` as CONVENTIONS.md shows (distribution ``iclr24-NAME``, import ``iclr24.<snake>``, CLI
``NAME``, entry point in the ``iclr24.papers`` group), adds it to the workspace root's dependencies and sources,
and runs ``uv lock``. Never overwrites an existing file.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def files(name: str, snake: str, title: str, summary: str, deps: list[str]) -> dict[str, str]:
    dep_lines = "".join(f'    "{d}",\n' for d in ["iclr24-paperkit", *deps])
    pkg = f"iclr24.{snake}"
    return {
        "pyproject.toml": f'''[project]
name = "iclr24-{name}"
version = "0.1.0"
description = "{title}"
readme = "README.md"
requires-python = ">=3.11"
license = "MIT"
dependencies = [
{dep_lines}]

[project.scripts]
{name} = "{pkg}.cli:main"

[project.entry-points."iclr24.papers"]
{name} = "{pkg}.reproduce:PAPER"

[tool.uv.sources]
iclr24-paperkit = {{ workspace = true }}

[build-system]
requires = ["uv_build>=0.8,<0.20"]
build-backend = "uv_build"

[tool.uv.build-backend]
module-name = "{pkg}"
''',
        "README.md": f"""# iclr24-{name}

{title} (ICLR 2024).

{summary}

## Install

```bash
pip install iclr24-{name}          # or, in this repository: uv run {name} --help
```

## Python quickstart

```python
import {pkg}
```

## CLI

```bash
{name} --help
{name} reproduce --quick --out results/{name}
{name} bench
```

## Reproduction

| claim | paper's number | ours | baseline | command |
|---|---|---|---|---|
| (to measure) | | | | `{name} reproduce --quick` |

## Using your own data or weights

## Scaling out

## Citation
""",
        f"src/iclr24/{snake}/__init__.py": f'"""{title}."""\n\n__all__: list[str] = []\n',
        f"src/iclr24/{snake}/data.py": '"""Built-in offline data, and loaders for the real datasets from a path the user gives."""\n',
        f"src/iclr24/{snake}/reproduce.py": f'''"""The paper's claims, checked at CPU scale: ``run(config) -> list[Claim]`` in smoke/quick/full modes."""

from __future__ import annotations

from iclr24.paperkit import Claim, Paper, RunConfig


def run(config: RunConfig) -> list[Claim]:
    raise NotImplementedError("{name}: claim checks not written yet")


PAPER = Paper(
    name="{name}",
    title="{title}",
    summary="{summary}",
    run=run,
)
''',
        f"src/iclr24/{snake}/bench.py": '''"""Benchmarks behind the ``bench`` subcommand: ours against the baseline in one run, ratios of medians."""

from __future__ import annotations

from iclr24.paperkit import BenchResult


def run_benchmarks(quick: bool = True) -> list[BenchResult]:
    return []
''',
        f"src/iclr24/{snake}/cli.py": f'''"""The ``{name}`` command: a thin shell over the API."""

from __future__ import annotations

import argparse

from iclr24.paperkit import bench_table
from iclr24.paperkit.cli import App

from . import bench
from .reproduce import PAPER

app = App("{name}", PAPER.title)
app.add_reproduce(lambda: PAPER)


@app.command("bench", "Benchmark against the baseline (medians of repeats, ratios).")
def _bench(args: argparse.Namespace) -> int:
    print(bench_table(bench.run_benchmarks(quick=args.mode != "full")))
    return 0


def main(argv=None) -> int:
    return app.main(argv)
''',
        "tests/test_reproduce.py": f'''from iclr24.paperkit import Claim, RunConfig

from {pkg}.reproduce import PAPER


def test_smoke_claims_run_end_to_end(tmp_path):
    claims = PAPER.check(RunConfig(mode="smoke", seed=0, out=tmp_path, progress=False))
    assert claims and all(isinstance(c, Claim) for c in claims)
    assert all(c.paper == "{name}" for c in claims)
''',
        "tests/test_cli.py": f"""import pytest

from {pkg}.cli import main


def test_help_exits_zero(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    assert "reproduce" in capsys.readouterr().out


def test_bad_argument_exits_2():
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--seed", "-1"])
    assert e.value.code == 2
""",
    }


def add_to_root(name: str, root: Path = ROOT) -> None:
    pp = root / "pyproject.toml"
    text = pp.read_text()
    dist = f"iclr24-{name}"
    if f'"{dist}"' in text or f'"{dist}[' in text:
        return
    text = re.sub(
        r"(\[project\][^\[]*?dependencies = \[\n)((?:    .*\n)*?)(\])",
        lambda m: m.group(1) + m.group(2) + f'    "{dist}",\n' + m.group(3),
        text,
        count=1,
    )
    text = text.replace("[tool.uv.sources]\n", f"[tool.uv.sources]\n{dist} = {{ workspace = true }}\n", 1)
    pp.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", help="folder/CLI name, lower-case with dashes, e.g. persona-bias")
    ap.add_argument("--title", required=True, help="the paper's title")
    ap.add_argument("--summary", required=True, help="one line: what the package checks/offers")
    ap.add_argument("--dep", action="append", default=[], help="a dependency (repeatable)")
    ap.add_argument("--no-lock", action="store_true", help="skip `uv lock`")
    ap.add_argument("--root", type=Path, default=ROOT, help="the workspace root")
    a = ap.parse_args(argv)
    if not NAME_RE.match(a.name):
        ap.error(f"name must be lower-case letters/digits with single dashes, got {a.name!r}")
    snake = a.name.replace("-", "_")
    root = a.root.resolve()
    base = root / "packages" / a.name
    for rel, content in files(a.name, snake, a.title, a.summary, a.dep).items():
        p = base / rel
        if p.exists():
            print(f"keep   {p.relative_to(root)} (exists)")
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
        print(f"create {p.relative_to(root)}")
    add_to_root(a.name, root)
    if not a.no_lock:
        subprocess.run(["uv", "lock"], cwd=root, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
