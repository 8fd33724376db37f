"""The maintainer tools: the package scaffold and the README table."""

import ast
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from iclr24.paperkit.runner.testing_workflow import load_script

ROOT = Path(__file__).resolve().parents[2]


def test_new_package_scaffolds_the_conventional_layout(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "packages").mkdir()
    cmd = [
        sys.executable,
        str(ROOT / "tools" / "new_package.py"),
        "demo-paper",
        "--title",
        "A Demo",
        "--summary",
        "demo claim",
        "--dep",
        "numpy",
        "--no-lock",
        "--root",
        str(tmp_path),
    ]
    subprocess.run(cmd, check=True, capture_output=True)
    pkg = tmp_path / "packages" / "demo-paper"
    meta = tomllib.loads((pkg / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "iclr24-demo-paper"
    assert meta["project"]["scripts"] == {"demo-paper": "iclr24.demo_paper.cli:main"}
    assert meta["project"]["entry-points"]["iclr24.papers"] == {
        "demo-paper": "iclr24.demo_paper.reproduce:PAPER"
    }
    assert "numpy" in meta["project"]["dependencies"]
    src = pkg / "src" / "iclr24"
    assert not (src / "__init__.py").exists()  # PEP 420 namespace shared by all members
    for f in ("__init__.py", "cli.py", "reproduce.py", "bench.py", "data.py"):
        ast.parse((src / "demo_paper" / f).read_text())
    for f in ("tests/test_reproduce.py", "tests/test_cli.py", "README.md"):
        assert (pkg / f).exists()
    readme = (pkg / "README.md").read_text()
    for section in ("## Install", "## Python quickstart", "## CLI", "## Reproduction", "## Citation"):
        assert section in readme
    root = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert "iclr24-demo-paper" in root["project"]["dependencies"]
    assert root["tool"]["uv"]["sources"]["iclr24-demo-paper"] == {"workspace": True}
    # running it again keeps existing files and does not duplicate the root entries
    (src / "demo_paper" / "data.py").write_text("# edited\n")
    subprocess.run(cmd, check=True, capture_output=True)
    assert (src / "demo_paper" / "data.py").read_text() == "# edited\n"
    assert (tmp_path / "pyproject.toml").read_text().count('"iclr24-demo-paper"') == 1
    bad = subprocess.run([*cmd[:2], "Bad_Name", *cmd[3:]], capture_output=True, text=True)
    assert bad.returncode == 2 and "lower-case" in bad.stderr
    # the scaffold's own tests pass as generated (run against this paperkit, the package on the path)
    (src / "demo_paper" / "data.py").write_text('"""Data."""\n')
    env = {**__import__("os").environ, "PYTHONPATH": str(pkg / "src")}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--import-mode=importlib",
            str(pkg / "tests"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert "3 passed" in p.stdout


def test_root_workspace_depends_on_every_member():
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    deps = " ".join(root["project"]["dependencies"])
    for pkg in (ROOT / "packages").iterdir():
        if (pkg / "pyproject.toml").exists():
            name = tomllib.loads((pkg / "pyproject.toml").read_text())["project"]["name"]
            assert name in deps, f"root pyproject does not depend on {name}"
            assert root["tool"]["uv"]["sources"][name] == {"workspace": True}


def test_readme_table_is_current():
    p = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "refresh_readme.py"), "--check"], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr


def test_readme_and_ci_use_the_same_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    wf = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    for cmd in ("uv run pytest", "uv run iclr24 reproduce"):
        assert cmd in readme
    for text in (ci, wf):
        assert "uv sync --locked" in text and "uv run pytest" in text


def _refresh_module():
    return load_script(ROOT / "tools" / "refresh_readme.py")


def test_package_tables_are_generated_from_the_recorded_run(tmp_path, monkeypatch):
    mod = _refresh_module()
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    docs = tmp_path / "packages" / "demo" / "docs"
    docs.mkdir(parents=True)
    claims = [
        {"claim": "ours beats base", "metric": "acc", "ours": 0.9, "baseline": 0.8, "baseline_name": "base",
         "paper_value": 0.95, "rule": "ours > baseline", "verdict": "holds", "message": ""},
        {"claim": "paired", "metric": "acc", "ours": 1.5, "baseline": 1.0, "baseline_name": "b",
         "paper_value": None, "rule": "ours >= baseline (paired over 2 seeds, 95 % t-interval)",
         "verdict": "inconclusive", "message": "",
         "paired": {"n": 2, "ours": [1.0, 2.0], "baseline": [1.0, 1.0], "low": -5.9, "high": 6.9,
                    "form": "difference"}},
        {"claim": "fast", "metric": "s", "ours": 2.0, "baseline": 1.0, "baseline_name": "b", "rule": "ours > 1",
         "verdict": "holds", "message": "", "timing": True},
    ]  # fmt: skip
    doc = {
        "paper": "demo", "mode": "quick", "command": "iclr24 reproduce demo --quick", "commit": "abc", "load": 0.1,
        "date": "2026-12-02 00:00 UTC", "wall_seconds": 61.0, "cpu_seconds": 60.0, "machine": {"cpu_model": "X"},
        "record": {"claims": claims, "facts": [{"name": "MACs", "value": 12, "description": "closed form"}]},
    }  # fmt: skip
    import json

    (docs / "claims-quick.json").write_text(json.dumps(doc))
    readme = "# demo\n\n<!-- claims-quick:start -->\nold hand-typed table\n<!-- claims-quick:end -->\ntail\n"
    new = mod.refreshed_package("demo", readme)
    assert "old hand-typed table" not in new and new.endswith("<!-- claims-quick:end -->\ntail\n")
    assert "| ours beats base | acc | 0.95 | 0.9 | 0.8 (base) | `ours > baseline` | yes |" in new
    assert "1.5 (mean of 2 seeds: 1, 2)" in new and "inconclusive (95 % interval" in new
    assert "s (timing)" in new and "| MACs | 12 |" in new and "61 s wall" in new
    assert mod.refreshed_package("demo", new) == new  # idempotent: --check passes after a refresh
    full = mod.refreshed_package("demo", "<!-- claims-full:start -->\nhand-typed\n<!-- claims-full:end -->\n")
    assert "hand-typed" not in full and "Not recorded yet" in full and "record_run.py demo --full" in full
    assert mod.recorded_status("demo").startswith(
        "2/3 claims hold; 1 inconclusive (`--quick`, recorded 2026-12-02"
    )


def test_record_run_refuses_a_busy_machine_and_unknown_packages(monkeypatch):
    import pytest

    mod = load_script(ROOT / "tools" / "record_run.py")
    with pytest.raises(SystemExit, match="no package 'no-such'"):
        mod.record("no-such", "quick")
    monkeypatch.setattr(mod.os, "getloadavg", lambda: (3.0, 3.0, 3.0))
    with pytest.raises(SystemExit, match="not idle"):
        mod.record("srigl", "quick")


def test_paper_scale_rows_are_generated_from_the_recorded_file(tmp_path, monkeypatch):
    """The root README's paper-scale table and each package's row come from docs/paper-scale-<device>.json, which
    tools/record_paper_scale.py merges row by row (a GPU run's file too, with --from)."""
    import json

    mod = _refresh_module()
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    rec = load_script(ROOT / "tools" / "record_paper_scale.py")
    monkeypatch.setattr(rec, "ROOT", tmp_path)
    row = {"config": "ResNet-50 224px", "dataset": "d", "device": "cpu", "micro_batch": 32, "accumulation": 8,
           "seconds_per_paper_step": 40.0, "peak_rss_bytes": 3 * 2**30, "flops_per_paper_step": 3.2e12,
           "paper_steps": 1000, "hours_here": 11.1, "hours_h200": 0.003, "h200_utilisation": 0.35,
           "notes": ["synthetic JPEGs"]}  # fmt: skip
    gpu = tmp_path / "gpu.json"
    gpu.write_text(json.dumps({"device": "cuda", "machine": {"gpu": "NVIDIA H200", "cpu_count": 16},
                               "rows": [{"package": "demo", **row, "device": "cuda"}]}))  # fmt: skip
    rec.record([], source=gpu, log=lambda *_: None)
    rec.merge([{"package": "demo", **row}, {"package": "gone", "missing": True}], device="cpu", commit="abc",
              load=0.2, machine={"cpu_model": "X", "cpu_count": 2}, log=lambda *_: None)  # fmt: skip
    doc = json.loads((tmp_path / "docs" / "paper-scale-cpu.json").read_text())
    assert list(doc["rows"]) == ["demo"] and doc["rows"]["demo"]["load"] == 0.2
    readme = "# r\n<!-- paper-scale:start -->\nold\n<!-- paper-scale:end -->\n"
    pkg = mod._replace_block(readme, mod.PS_START, mod.PS_END, mod.paper_scale_block("demo"), "x")
    assert "old" not in pkg and "| demo | ResNet-50 224px | 32 x 8 | 40 | 3.00 GiB |" in pkg
    assert "**CPU**" in pkg and "**CUDA**" in pkg and "NVIDIA H200" in pkg and "- synthetic JPEGs" in pkg
    assert "load 0.20 at the start" in pkg and "load not recorded" in pkg
    assert "Not recorded yet" in mod.paper_scale_block("other")


def test_gpu_paper_scale_script_finds_every_paper_without_installing(tmp_path):
    """tools/gpu_paper_scale.sh: valid bash; on a bare machine it finds the papers from the checkout's pyprojects
    (an unknown name is a usage error that lists them, before any work)."""
    script = ROOT / "tools" / "gpu_paper_scale.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    env = {"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, "DEVICE": "cpu", "HOME": str(tmp_path)}
    r = subprocess.run(["bash", str(script), str(tmp_path / "out"), "no-such-paper"], env=env, capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    n = len(list((ROOT / "packages").glob("*/pyproject.toml")))
    assert f"gpu_paper_scale: {n} papers found" in r.stdout
    assert r.returncode == 2 and "unknown paper package(s): no-such-paper" in r.stderr and "srigl" in r.stderr
    assert not (tmp_path / "out").exists()


def test_compare_recorded_flags_a_changed_number_but_not_a_timing(tmp_path, monkeypatch):
    import json

    mod = load_script(ROOT / "tools" / "compare_recorded.py")
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    claims = [{"claim": "c", "ours": 1.0, "verdict": "holds"}, {"claim": "t", "ours": 9.0, "timing": True}]
    rec = {"status": "ok", "claims": claims, "facts": [], "seconds": 5.0}
    docs = tmp_path / "packages" / "demo" / "docs"
    docs.mkdir(parents=True)
    (docs / "claims-quick.json").write_text(json.dumps({"seed": 0, "commit": "abc", "record": rec}))
    timing_only = [claims[0], {**claims[1], "ours": 3.0}]
    run = {"mode": "quick", "seed": 0, "papers": [{"name": "demo", **rec, "claims": timing_only, "seconds": 9.0},
                                                  {"name": "other", **rec}]}  # fmt: skip
    rows = mod.compare(run)
    assert rows[0]["same"] is True and rows[1] == {"paper": "other", "same": None, "note": "no recorded file"}
    run["papers"][0]["claims"] = [{**claims[0], "ours": 1.01}, claims[1]]
    (row,) = mod.compare({**run, "papers": run["papers"][:1]})
    assert row["same"] is False and ".claims[0].ours: 1.01 vs 1.0" in row["note"]
    assert row["same_verdicts"] is True and abs(row["max_rel"] - 0.01 / 1.01) < 1e-12
    assert mod.max_relative_difference({"a": [1.0, 2]}, {"a": [1.0, 2, 3]}) is None


def test_load_test_times_a_command_and_reads_idle_seconds_from_a_run(tmp_path, capsys):
    import json

    import pytest

    mod = load_script(ROOT / "tools" / "load_test.py")
    with pytest.raises(SystemExit):  # a clear usage error before any busy process starts
        mod.main(["--idle", str(tmp_path / "missing.json"), "srigl"])
    assert "--idle must be a claims.json" in capsys.readouterr().err
    out = tmp_path / "t.json"
    assert mod.main(["--busy", "1", "--max-seconds", "5", "--command", "true", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["name"] == "true" and row["rc"] == 0 and row["seconds"] >= 0


# Functions over 60 lines allowed in a reproduce.py (issue 39, item 9): none any more; keep it that way.
_LONG_REPRODUCE_FUNCTIONS: set[tuple[str, str]] = set()


def test_every_reproduce_module_reads_as_a_list_of_claims():
    """No function of a package's ``reproduce.py`` is longer than 60 lines (issue 39, item 9): a long ``run`` hides
    which claims a paper makes; each claim or group of claims gets its own function. The functions not split yet
    would be listed above (none is); a new long function, or a listed one that is now short, fails this test."""
    long = set()
    paths = sorted((ROOT / "packages").glob("*/src/iclr24/*/reproduce.py"))
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.end_lineno - node.lineno + 1 > 60:
                    long.add((path.parts[-5], node.name))
    assert len(paths) == 19
    assert not long - _LONG_REPRODUCE_FUNCTIONS, (
        f"new functions over 60 lines: {sorted(long - _LONG_REPRODUCE_FUNCTIONS)}"
    )
    assert not _LONG_REPRODUCE_FUNCTIONS - long, (
        f"now at most 60 lines, remove from the list: {sorted(_LONG_REPRODUCE_FUNCTIONS - long)}"
    )


def test_every_recorded_run_is_within_its_budget():
    """paperkit 4: a recorded run may not exceed its mode's CPU cap (60 s quick, 600 s full, 1800 s full for the
    papers that declare it) by more than 25 %."""
    mod = _refresh_module()
    over = []
    records = sorted((ROOT / "packages").glob("*/docs/claims-*.json"))
    assert len(records) >= 19
    for path in records:
        doc = json.loads(path.read_text())
        cap = mod.budget_of(doc["paper"], doc["mode"])
        if doc["cpu_seconds"] > 1.25 * cap:
            over.append(f"{doc['paper']} --{doc['mode']}: {doc['cpu_seconds']:.0f} CPU s, cap {cap:.0f}")
    assert not over, f"recorded runs over their budget by more than 25 %: {over}"
    assert mod.budget_of("lace", "full") == 1800 and mod.budget_of("fastervit", "full") == 600
    assert mod.budget_of("fastervit", "quick") == 60


# Packages not yet on paperkit 4's claims table (Paper(claims=CLAIMS)); each Evidence issue removes its names.
_WITHOUT_CLAIMS_TABLE: set[str] = set()  # all nineteen are on it now


def test_packages_on_the_claims_table_are_listed_exactly():
    """A package whose ``Paper`` declares ``claims=`` is held to kinds, its table and data-only skips at run time
    (``Paper.validate``); this list of the others must shrink, never hide a moved package."""
    without = set()
    for path in sorted((ROOT / "packages").glob("*/src/iclr24/*/reproduce.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Paper":
                if "claims" not in {k.arg for k in node.keywords}:
                    without.add(path.parts[-5])
    assert without == _WITHOUT_CLAIMS_TABLE


def test_refresh_shows_a_sign_test_by_its_counts_not_an_interval():
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig

    cs = ClaimSet("demo", RunConfig(mode="full"))
    c = cs.paired(
        claim="fewer collapses", metric="collapsed per seed", ours=[0] * 8, baseline=[1] * 6 + [0] * 2,
        better="lower", test="sign", baseline_name="b",
    )  # fmt: skip
    cell = _refresh_module()._verdict(c.to_dict())
    assert cell.startswith("yes (exact sign test: 6 seeds for, 0 against, 2 ties; one-sided p for = 0.01562")
    assert "interval" not in cell


# --- the tree's shape: no import circle inside a package ---------------------------------------------------------
def _package_modules(src: Path) -> dict[str, Path]:
    """``iclr24.pkg.mod`` -> file, for every module under one package's ``src`` folder."""
    mods = {}
    for f in sorted(src.rglob("*.py")):
        parts = list(f.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = f
    return mods


def _import_graph(src: Path) -> dict[str, set[str]]:
    """Which of the package's own modules each module imports, at the top or inside a function. ``from . import x``
    of a submodule ``x`` is an edge to ``x`` only (the package's ``__init__`` runs first anyway); a name that is
    not a submodule is an edge to the module it comes from."""
    mods = _package_modules(src)
    graph: dict[str, set[str]] = {}
    for name, f in mods.items():
        here = name.split(".") if f.name == "__init__.py" else name.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                subs = [f"{target}.{a.name}" for a in node.names]
                deps.update(s for s in subs if s in mods)
                if target in mods and any(s not in mods for s in subs):
                    deps.add(target)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in mods)
        deps.discard(name)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: each strongly connected group of two or more modules, as one circle through them."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)

    def circle(group: list[str]) -> list[str]:  # a path from the group's first module back to it
        start, inside = group[0], set(group)
        paths = [[start]]
        while paths:
            path = paths.pop(0)
            for w in sorted(graph[path[-1]] & inside):
                if w == start:
                    return path + [start]
                if w not in path:
                    paths.append(path + [w])
        return group  # pragma: no cover - a strongly connected group always has a circle

    return [circle(g) for g in groups]


# circles that were there when this test was written, each still broken by an import inside a function; the list
# only shrinks (a circle that is gone must leave it)
KNOWN_CYCLES: set[tuple[str, ...]] = set()


def test_the_cycle_finder_names_a_circle(tmp_path):
    pkg = tmp_path / "iclr24" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from .b import g\n\ndef f():\n    return g()\n")
    (pkg / "b.py").write_text("def g():\n    from .c import h\n    return h()\n")
    (pkg / "c.py").write_text("from . import a\n\ndef h():\n    return 1\n")
    (pkg / "d.py").write_text("from . import a, b\n")
    assert _cycles(_import_graph(tmp_path)) == [
        ["iclr24.demo.a", "iclr24.demo.b", "iclr24.demo.c", "iclr24.demo.a"]
    ]


def test_no_import_circle_inside_a_package():
    found = {}
    for src in sorted((ROOT / "packages").glob("*/src")):
        for c in _cycles(_import_graph(src)):
            found[tuple(sorted(set(c)))] = " -> ".join(c)
    new = [found[k] for k in sorted(set(found) - KNOWN_CYCLES)]
    assert not new, (
        "import circles inside a package (move the shared piece to the module it belongs in): "
        + "; ".join(new)
    )
    gone = sorted(KNOWN_CYCLES - set(found))
    assert not gone, f"these circles are gone: remove them from KNOWN_CYCLES: {gone}"


# --- the tree's shape: no module over 800 lines ------------------------------------------------------------------
MAX_MODULE_LINES = 800


def _long_modules(roots: list[Path]) -> dict[str, int]:
    out = {}
    for root in roots:
        for f in sorted(root.rglob("*.py")):
            n = len(f.read_text().splitlines())
            if n > MAX_MODULE_LINES:
                out[f.relative_to(ROOT).as_posix()] = n
    return out


def test_no_module_over_800_lines():
    long = _long_modules(sorted((ROOT / "packages").glob("*/src")) + [ROOT / "shared" / "src"])
    assert not long, (
        f"modules over {MAX_MODULE_LINES} lines (split each along a seam a reader expects): "
        + ", ".join(f"{f} ({n})" for f, n in sorted(long.items()))
    )


# --- the tree's shape: one vocabulary of module names (docs/CONTRIBUTING.md) --------------------------------------
EVERY_PACKAGE_HAS = ("__init__.py", "cli.py", "data.py", "reproduce.py", "bench.py", "paper_scale.py")
SYNONYMS = {"models.py": "model.py", "training.py": "train.py", "experiment.py": "experiments.py"}
# packages written before the vocabulary, each with the name it still uses; the list only shrinks
KNOWN_OTHER_NAMES: set[tuple[str, str]] = set()


def test_module_vocabulary():
    missing, other = [], set()
    for src in sorted((ROOT / "packages").glob("*/src/iclr24/*")):
        package = src.parents[2].name
        names = {f.name for f in src.glob("*.py")}
        missing += [f"{package}: {m}" for m in EVERY_PACKAGE_HAS if m not in names]
        other |= {(package, n) for n in names if n in SYNONYMS}
    assert not missing, f"modules every package has (docs/CONTRIBUTING.md) are missing: {missing}"
    new = sorted(other - KNOWN_OTHER_NAMES)
    assert not new, "name modules by docs/CONTRIBUTING.md: " + ", ".join(
        f"{p}: {n} -> {SYNONYMS[n]}" for p, n in new
    )
    gone = sorted(KNOWN_OTHER_NAMES - other)
    assert not gone, f"renamed: remove them from KNOWN_OTHER_NAMES: {gone}"


def test_an_undecidable_claims_cell_says_so_once():
    v = _refresh_module()._verdict
    plan = "undecidable at this budget: calibrated slack +1.5: deciding it needs 144 paired seeds"
    assert v({"verdict": "undecidable", "message": plan}) == plan
    assert v({"verdict": "fails", "message": "seed 3 diverged"}) == "**no**: seed 3 diverged"
