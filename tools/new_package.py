#!/usr/bin/env python3
"""Scaffold a paper package: ``python tools/new_package.py NAME --title "..." --summary "..." [--dep torch ...]``.

Creates ``packages/NAME`` in the paperkit-2 shape (``run(config) -> ClaimSet``, ``app.add_bench``, tests through
``iclr24.paperkit.runner.testing``; its own tests pass as generated) as the repository's conventions show (distribution ``iclr24-NAME``, import ``iclr24.<snake>``, CLI
``NAME``, entry point in the ``iclr24.papers`` group), adds it to the workspace root's dependencies and sources,
and runs ``uv lock``. Never overwrites an existing file. The modules it writes carry the names of
``docs/CONTRIBUTING.md`` (one vocabulary for every package: ``model.py``, ``train.py``, ``experiments.py``, ...),
and its README has the layout written there (summary, ``## Quickstart``, then ``## Paper -> code``).
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
    kit = [] if any(d.startswith("iclr24-paperkit") for d in deps) else ["iclr24-paperkit"]
    dep_lines = "".join(f'    "{d}",\n' for d in [*kit, *deps])
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

## Quickstart

### Install

```bash
pip install iclr24-{name}          # or, in this repository: uv run {name} --help
```

### Python quickstart

```python
import {pkg}
```

## Paper -> code

| Eq./Alg. | file:function | test |
|---|---|---|

## CLI

```bash
{name} --help
{name} reproduce --quick --out results/{name}
{name} bench
```

## Reproduction

| claim | paper | ours | baseline | holds | command |
|---|---|---|---|---|---|
| (to measure) | | | | | `{name} reproduce --quick` |

## Differences from the official code

## Using your own data or weights

## Scaling out

## Citation
""",
        f"src/iclr24/{snake}/__init__.py": f'"""{title}."""\n\n__all__: list[str] = []\n',
        f"src/iclr24/{snake}/data.py": '"""Built-in offline data, and loaders for the real datasets from a path the user gives."""\n',
        f"src/iclr24/{snake}/reproduce.py": f'''"""The paper's claims, checked at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

``CLAIMS`` is the claims table (paperkit's ``ClaimSpec``): each claim's kind, rule, baseline, data, seeds and how
they were chosen, and budget, fixed here before any run; ``run`` executes it. Each claim compares the method against
the paper's baseline on the same data, budget and seeds. Facts (closed forms, properties by construction) are
recorded apart. How the configs and seeds were calibrated: ``docs/calibration.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr24.paperkit import ClaimSet, ClaimSpec, Paper, RunConfig, run_claims

NAME = "{name}"


@dataclass(frozen=True)
class ReproConfig:
    """The experiment's settings; the defaults are the paper's."""

    samples: int = 10_000


SMOKE = ReproConfig(samples=100)
QUICK = ReproConfig(samples=10_000)
FULL = ReproConfig(samples=100_000)

CLAIMS = (
    ClaimSpec(
        id="template",
        kind="headline",
        claim="template: replace with the paper's claim",
        metric="E[x^2] of a standard normal (template)",
        baseline="E|x|",
        data="built-in synthetic data",
        rule="ours > baseline",
        seeds={{"quick": (100,), "full": (100,)}},
        seeds_why="one deterministic measurement (replace: paired claims take their seeds from a Calibration)",
        budget={{"quick": 40, "full": 400}},
    ),
)


def measure(c: ReproConfig, seed: int) -> dict[str, float]:
    """Replace with the paper's experiment: ours and the baseline on the same data and budget."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(c.samples)
    return {{"ours": float(np.mean(x**2)), "baseline": float(np.mean(np.abs(x)))}}


def run(cfg: RunConfig) -> ClaimSet:
    c = cfg.pick(smoke=SMOKE, quick=QUICK, full=FULL)
    claims = ClaimSet(NAME, cfg)

    def template(spec: ClaimSpec, seeds: list[int]) -> None:
        m = measure(c, seeds[0])
        claims.add(spec=spec, ours=m["ours"], baseline=m["baseline"], details={{"seed": seeds[0]}})

    run_claims(claims, CLAIMS, {{"template": template}})
    claims.fact("template fact", value=1.0, description="replace with a closed form of the method")
    return claims


PAPER = Paper(
    name=NAME,
    title="{title}",
    summary="{summary}",
    run=run,
    claims=CLAIMS,
)
''',
        f"src/iclr24/{snake}/bench.py": '''"""Benchmarks behind ``bench``: ours against the baseline in one run, interleaved medians, threads pinned."""

from __future__ import annotations

from iclr24.paperkit.bench import BenchReport, benchmark


def run_benchmarks(mode: str) -> BenchReport:
    n = {"smoke": 1_000, "quick": 100_000, "full": 1_000_000}[mode]
    r = benchmark(
        lambda: sum(i * i for i in range(n)),
        baseline=lambda: sum([i * i for i in range(n)]),
        name="generator (template)",
        baseline_name="list (template)",
        repeats=3 if mode == "smoke" else 7,
        threads=1,
    )
    return BenchReport(results=[r], notes=["template: replace with the paper's speed claim"])
''',
        f"src/iclr24/{snake}/cli.py": f'''"""The ``{name}`` command: a thin shell over the API."""

from __future__ import annotations

from iclr24.paperkit.cli import App

from . import bench
from .reproduce import PAPER

app = App("{name}", PAPER.title)
app.add_reproduce(lambda: PAPER)
app.add_bench(bench.run_benchmarks)
main = app.main
''',
        "tests/test_reproduce.py": f'''from {pkg}.reproduce import PAPER

from iclr24.paperkit.runner.testing import check_paper_smoke


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert all(c.paper == "{name}" for c in cs)
''',
        "tests/test_cli.py": f"""from {pkg}.cli import main

from iclr24.paperkit.runner.testing import check_cli_contract


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_bench_smoke(tmp_path):
    assert main(["bench", "--smoke", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "bench.json").exists()
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
