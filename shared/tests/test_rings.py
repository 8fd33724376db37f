"""paperkit is a core with two rings: the core imports neither ``paperkit.data`` nor ``paperkit.runner``; the
runner may import the data ring (the umbrella's ``iclr24 data``), the data ring never imports the runner.

One call goes outward, at call time only: the CLI scaffold's ``reproduce`` command hands the run to the runner
(``App.add_reproduce`` is what every package's CLI calls). Importing the core loads no ring (the last test)."""

import ast
import subprocess
import sys
from pathlib import Path

PAPERKIT = Path(__file__).parents[1] / "src" / "iclr24" / "paperkit"
RINGS = ("data", "runner")
ALLOWED = {"core": set(), "data": set(), "runner": {"data"}}
CALL_TIME = {("cli.py", "iclr24.paperkit.runner.report")}  # (module, what it imports inside a function)


def _ring(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in RINGS else "core"


def _imports(path: Path) -> set[tuple[str, bool]]:
    """(iclr24.paperkit module, inside a function) for every import in ``path``."""
    rel = path.relative_to(PAPERKIT.parents[1]).with_suffix("")
    package = list(rel.parts[:-1])
    out = set()
    tree = ast.parse(path.read_text())
    in_function = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for n in ast.walk(f)
    }
    for node in ast.walk(tree):
        found = set()
        if isinstance(node, ast.Import):
            found = {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found = {mod} | {f"{mod}.{a.name}" for a in node.names}  # `from iclr24.paperkit import data`
        out |= {(m, id(node) in in_function) for m in found if m.startswith("iclr24.paperkit.")}
    return out


def test_each_ring_imports_only_what_it_may():
    modules = sorted(PAPERKIT.rglob("*.py"))
    assert any(p.parent.name == "data" for p in modules) and any(p.parent.name == "runner" for p in modules)
    wrong = []
    for path in modules:
        here = _ring("iclr24.paperkit." + ".".join(path.relative_to(PAPERKIT).with_suffix("").parts))
        name = str(path.relative_to(PAPERKIT))
        for mod, lazy in _imports(path):
            there = _ring(mod)
            if lazy and any(name == n and (mod == m or mod.startswith(m + ".")) for n, m in CALL_TIME):
                continue
            if there != here and there != "core" and there not in ALLOWED[here]:
                wrong.append(f"{name} ({here}) imports {mod} ({there})")
    assert not wrong, "\n".join(wrong)


def test_importing_the_core_loads_no_ring():
    code = (
        "import sys, iclr24.paperkit, iclr24.paperkit.cli, iclr24.paperkit.claims\n"
        "print(sorted(m for m in sys.modules if m.split('.')[:3] in (['iclr24', 'paperkit', 'data'], "
        "['iclr24', 'paperkit', 'runner'])))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "[]"
