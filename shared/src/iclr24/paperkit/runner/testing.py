"""Checks every paper package's tests call, so nineteen packages test their contract the same way.

    from iclr24.paperkit.runner.testing import check_cli_contract, check_paper_smoke, run_readme_blocks

    def test_smoke_records(tmp_path):
        check_paper_smoke(PAPER, tmp_path)

    def test_cli_contract(tmp_path):
        check_cli_contract(main, tmp_path)

    def test_readme_blocks(tmp_path):   # each block alone in a fresh interpreter (see run_readme_blocks)
        res = run_readme_blocks(Path(__file__).parents[1] / "README.md", cwd=tmp_path,
                                values={0: {"n": "len(samples)"}})
        assert res["n"] == 100 and "done" in res["__stdout__"]

Each raises ``AssertionError`` with what went wrong (pytest shows it), so they work with plain pytest.

Property tests of a package's public API use the seeded probes (no hypothesis needed)::

    from iclr24.paperkit.runner.testing import Prober, probe_arrays, probe_files, probe_sizes

    def test_public_api_refuses_bad_input(tmp_path):
        p = Prober()
        p.sweep(psnr, 0, probe_arrays((8, 8)), np.zeros((8, 8)))   # every wrong array as the first argument
        p.sweep(load_signal, 0, probe_files(tmp_path, ".png"))        # every wrong file kind
        p.sweep(fit, "steps", probe_sizes())                           # every wrong size as ``steps=``
        p.check()                                  # each call worked or raised InputError; nothing else escaped
        p.assert_covers(mypackage, skip={"main": "the CLI, tested in test_cli"})
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import json
import math
import os
import re
import signal
import threading
import zipfile
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..claims import ClaimSet
from ..claims import RunConfig
from ..errors import InputError
from ..errors import describe
from ..paper import Paper

__all__ = [
    "check_star_import",
    "check_paper_smoke",
    "check_records",
    "check_cli_contract",
    "check_out_at_a_file_refused",
    "check_cli_defaults",
    "check_app_defaults",
    "check_damaged_model_refused",
    "check_retrain_first_steps",
    "run_readme_blocks",
    "readme_blocks",
    "readme_block_groups",
    "CONTINUES",
    "run_rank_script",
    "check_ranks_in_sync",
    "Prober",
    "probe_arrays",
    "probe_sizes",
    "probe_floats",
    "probe_files",
    "probe_inputs",
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


def check_damaged_model_refused(
    folder: str | os.PathLike, tmp_path: str | os.PathLike, load: Callable[[Any], Any] | None = None
) -> None:
    """A copy of the model folder with one weight byte flipped is refused by ``load`` (default
    :func:`.pretrained.read_model_folder`) with the sha256 error, not loaded."""
    import shutil

    from ..errors import InputFileError
    from ..pretrained import WEIGHTS_FILE
    from ..pretrained import read_model_folder

    bad = Path(tmp_path) / f"damaged-{Path(folder).name}"
    shutil.copytree(folder, bad)
    raw = bytearray((bad / WEIGHTS_FILE).read_bytes())
    raw[-1] ^= 0xFF
    (bad / WEIGHTS_FILE).write_bytes(bytes(raw))
    try:
        (load or read_model_folder)(bad)
    except InputFileError as e:
        assert "does not match its provenance" in str(e), str(e)
    else:
        raise AssertionError(f"{bad}: a damaged weights file was loaded")


def check_retrain_first_steps(
    folder: str | os.PathLike,
    out: str | os.PathLike,
    overrides: Mapping[str, str | None],
    steps: Sequence[int],
) -> dict:
    """Retrain a shipped model by its recorded command with ``overrides`` (a shorter run) and check that the losses
    at ``steps`` are the recorded ones (:func:`.shipped.loss_mismatches`); returns the fresh losses."""
    from ..pretrained import read_model_folder
    from ..shipped import loss_mismatches
    from ..shipped import retrain
    from ..threads import pinned_threads

    recorded = read_model_folder(folder)[2]["losses"]
    with pinned_threads(1):
        fresh = read_model_folder(retrain(folder, out, overrides))[2]["losses"]
    want = {str(s) for s in steps}
    assert want <= set(recorded), f"steps {sorted(want - set(recorded), key=int)} were not recorded"
    assert want <= set(fresh), f"steps {sorted(want - set(fresh), key=int)} were not retrained"
    bad = loss_mismatches({k: recorded[k] for k in want}, {k: fresh[k] for k in want})
    assert not bad, f"{Path(folder).name}: the retrain differs from provenance.json: " + "; ".join(bad[:5])
    return fresh


def check_cli_defaults(
    app: Any, command: str, config: Any, *, skip: Sequence[str] = (), dests: Mapping[str, str] | None = None
) -> list[str]:
    """The options of ``app``'s ``command`` whose ``dest`` names a field of the dataclass ``config`` (or a
    parameter with a default, when ``config`` is a function), each checked to default to that field's default (a
    default declared twice that has drifted apart fails). ``dests`` maps an option's ``dest`` to the field it feeds
    when the names differ. Returns the checked names; ``skip`` names options whose default differs on purpose (say
    why beside the call). The common flags (``--seed``, ``--device``, ...) are not checked."""
    from ..cli import _default_of

    dests = dict(dests or {})
    sub = _subparsers(app.parser)[command]
    checked, drift = [], []
    what = getattr(config, "__name__", repr(config))
    common = {id(a) for g in sub._action_groups if g.title == "common options" for a in g._group_actions}
    for a in sub._actions:
        name = dests.get(a.dest, a.dest)
        if a.dest in skip or not a.option_strings or id(a) in common:
            continue
        try:
            want = _default_of(config, name)
        except TypeError:
            continue
        checked.append(a.dest)
        if a.default != want:
            drift.append(f"{'/'.join(a.option_strings)}: {a.default!r} vs {what}.{name} = {want!r}")
    assert not drift, f"{app.prog} {command}: CLI defaults differ from the config's: " + "; ".join(drift)
    return checked


def check_app_defaults(
    app: Any, sources: Mapping[str, Any], *, skip: Sequence[str] = (), dests: Mapping[str, str] | None = None
) -> dict[str, list[str]]:
    """:func:`check_cli_defaults` for several commands at once: ``sources`` maps a command to its config (or a
    tuple of configs and functions: an option is checked against the first that has its field); every command must
    have at least one option checked, so a command whose flags stopped feeding its config fails too. ``skip`` and
    ``dests`` go to each check."""
    done = {}
    for command, cfgs in sources.items():
        cfgs = cfgs if isinstance(cfgs, tuple | list) else (cfgs,)
        done[command] = []
        for c in cfgs:
            done[command] += check_cli_defaults(app, command, c, skip=(*skip, *done[command]), dests=dests)
        assert done[command], f"{app.prog} {command}: no option defaults to a field of {cfgs}"
    return done


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
        check_out_at_a_file_refused(main, out_command, tmp_path)


def check_out_at_a_file_refused(
    main: Callable[[Sequence[str]], int], command: Sequence[str], tmp_path: str | os.PathLike
) -> None:
    """``command --out FILE --quiet`` with FILE an existing file is refused with one line naming it on stderr
    (exit 2) before any work, and the file is left as it was."""
    blocker = Path(tmp_path) / "a-file-not-a-folder"
    blocker.write_text("keep me")
    rc, _, err = _run(main, [*command, "--out", str(blocker), "--quiet"])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and str(blocker) in lines[0], (
        f"--out at a file must be refused in one line naming it, got rc={rc}: {err!r}"
    )
    assert blocker.read_text() == "keep me", "--out at a file was overwritten"


CONTINUES = "<!-- continues -->"
"""The marker, on the line before a README's code fence, of a block that goes on from the block before it."""

_FENCE = re.compile(r"```python\n(.*?)```", re.S)


def readme_blocks(path: str | os.PathLike, lang: str = "python") -> list[str]:
    """The fenced code blocks of one language in a Markdown file, in order."""
    text = Path(path).read_text(encoding="utf-8")
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def readme_block_groups(path: str | os.PathLike) -> list[list[int]]:
    """The README's ```python blocks (by index) in the groups that run together: each block starts a group of its
    own unless the line before its fence is :data:`CONTINUES`, which puts it in the group of the block before."""
    text = Path(path).read_text(encoding="utf-8")
    groups: list[list[int]] = []
    for i, m in enumerate(_FENCE.finditer(text)):
        before = [ln.strip() for ln in text[: m.start()].splitlines() if ln.strip()]
        if before and before[-1] == CONTINUES:
            assert groups, (
                f"{Path(path).name}: python block 0 is marked {CONTINUES}, but no block comes before it"
            )
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


_RUNNER = """
import json, sys
spec = json.load(open(sys.argv[1], encoding="utf-8"))

def plain(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "item") and getattr(v, "ndim", None) == 0:
        return v.item()
    if hasattr(v, "tolist"):
        return plain(v.tolist())
    if isinstance(v, (list, tuple, set, frozenset)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    return repr(v)

ns = {"__name__": "__main__"}
values = {}
for index, file in spec["blocks"]:
    source = open(file, encoding="utf-8").read()
    exec(compile(source, file, "exec"), ns)
    for name, expr in spec["values"].get(str(index), {}).items():
        values[name] = plain(eval(expr, ns))
json.dump(values, open(spec["result"], "w", encoding="utf-8"))
"""


def run_readme_blocks(
    path: str | os.PathLike,
    *,
    cwd: str | os.PathLike | None = None,
    blocks: Sequence[int] | None = None,
    values: dict[int, dict[str, str]] | None = None,
    replace: dict[str, str] | None = None,
    timeout: float = 1200,
) -> dict:
    """Run a README's ```python blocks as a reader pastes them: each block alone in a fresh interpreter (a
    subprocess, so only the imports and names the block itself shows exist), unless the line before its fence is
    ``<!-- continues -->``: such a block runs in the same interpreter right after the block before it (so a group
    of consecutive continuation blocks costs one interpreter start). ``cwd``: where they run (default: a fresh
    temporary folder), so the files they write land there.

    ``blocks`` picks some by index (a block that needs your files, a GPU, torchrun or the network is left out this
    way; a picked continuation block brings the blocks it continues). ``values``: ``{block index: {name:
    expression}}``, each expression evaluated in the block's interpreter right after that block; the result is
    turned into plain data (arrays, tensors and tuples into lists, NumPy scalars into numbers, anything else into
    its repr). ``replace``: ``{old: new}`` substitutions in the blocks' text (e.g. a smaller step count), each of
    which must occur. Returns the values and, under ``"__stdout__"``, what the blocks printed. A block that raises
    fails with its traceback (and the hint to add what it lacks or mark it a continuation)."""
    import subprocess
    import sys
    import tempfile

    path = Path(path)
    code = readme_blocks(path)
    assert code, f"{path} has no ```python blocks"
    for old, new in (replace or {}).items():
        assert any(old in c for c in code), f"replace: {old!r} occurs in no python block of {path.name}"
        code = [c.replace(old, new) for c in code]
    groups = readme_block_groups(path)
    if blocks is not None:
        wanted = set(blocks)
        for i in wanted:
            assert 0 <= i < len(code), f"{path.name} has {len(code)} python blocks, no block {i}"
        groups = [g[: max(g.index(i) for i in g if i in wanted) + 1] for g in groups if wanted & set(g)]
    values = {int(k): dict(v) for k, v in (values or {}).items()}
    ran = {i for g in groups for i in g}
    missing = sorted(set(values) - ran)
    assert not missing, f"values asked of block(s) {missing}, which do not run"
    env = dict(os.environ)
    env.setdefault("MPLBACKEND", "Agg")
    result: dict = {}
    printed = []
    with tempfile.TemporaryDirectory(prefix="readme-") as tmp:
        run_dir = Path(cwd) if cwd is not None else Path(tmp) / "cwd"
        run_dir.mkdir(parents=True, exist_ok=True)
        for g in groups:
            files = []
            for i in g:
                f = Path(tmp) / f"{path.parent.name or 'README'}_{path.stem}_block{i}.py"
                f.write_text(code[i], encoding="utf-8")
                files.append([i, str(f)])
            spec = Path(tmp) / "spec.json"
            out = Path(tmp) / "values.json"
            out.unlink(missing_ok=True)
            spec.write_text(
                json.dumps(
                    {"blocks": files, "values": {str(i): values.get(i, {}) for i in g}, "result": str(out)}
                ),
                encoding="utf-8",
            )
            what = f"{path.name} python block{'s' if len(g) > 1 else ''} {', '.join(map(str, g))}"
            try:
                p = subprocess.run(
                    [sys.executable, "-c", _RUNNER, str(spec)],
                    cwd=run_dir,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
            except subprocess.TimeoutExpired:
                raise AssertionError(
                    f"{what}: still running after {timeout:.0f} s in a fresh interpreter"
                ) from None
            if p.returncode != 0:
                tail = "\n".join(p.stderr.strip().splitlines()[-25:])
                raise AssertionError(
                    f"{what} failed in a fresh interpreter (exit {p.returncode}); a block runs alone with the "
                    f"imports and names it shows, unless the line before its fence is {CONTINUES}:\n{tail}"
                )
            printed.append(p.stdout)
            result.update(json.loads(out.read_text(encoding="utf-8")))
    result["__stdout__"] = "".join(printed)
    return result


def run_rank_script(
    code: str, folder: str | os.PathLike, *, nproc: int = 2, timeout: float = 600
) -> list[dict]:
    """Run ``code`` as a script under torchrun (``nproc`` gloo ranks on loopback) with ``folder`` as its one
    argument, and return what each rank wrote to ``<folder>/r<rank>.json`` (rank order). The script writes that
    file itself, e.g. ``json.dump(result, open(f"{sys.argv[1]}/r{info.rank}.json", "w"))``."""
    from ..distributed import run_torchrun

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


def check_ranks_in_sync(
    code: str, folder: str | os.PathLike, *, nproc: int = 2, timeout: float = 600, atol: float = 1e-6
) -> list[dict]:
    """:func:`run_rank_script` of a data-parallel training, checked: each rank's ``world`` is ``nproc`` and its
    ``params`` (the flattened weights the script wrote) those of rank 0 within ``atol`` (DDP kept them in
    sync). Returns what each rank wrote, for the test's own checks."""
    import numpy as np

    ranks = run_rank_script(code, folder, nproc=nproc, timeout=timeout)
    assert [r["world"] for r in ranks] == [nproc] * nproc, f"world sizes {[r['world'] for r in ranks]}"
    for rank, r in enumerate(ranks[1:], 1):
        assert np.allclose(r["params"], ranks[0]["params"], rtol=1e-5, atol=atol), f"rank {rank} left rank 0"
    return ranks


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


# ---------------------------------------------------------------------------------------------------------------
# Property probes: seeded wrong inputs, and a checker that nothing but InputError escapes a public function.


def probe_arrays(
    shape: Sequence[int] = (4, 3), *, seed: int = 0, torch: bool = False, dtype: str = "float32"
) -> list[tuple[str, Any]]:
    """Wrong variants of a valid array of ``shape`` and ``dtype`` (seeded): NaN, +inf, -inf, empty (0 along the
    first axis), a 0-d scalar, one axis fewer and one more, the last axis one longer, other dtypes (int64, bool,
    float64, or float32 for a bool/int ``dtype``) and huge values (1e30, finite). ``torch=True`` gives tensors."""
    import numpy as np

    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in shape)
    base = rng.standard_normal(shape)
    good = base.astype(dtype)
    out: list[tuple[str, Any]] = []
    if np.issubdtype(good.dtype, np.floating) and good.size:
        for label, v in (("nan", np.nan), ("inf", np.inf), ("-inf", -np.inf)):
            x = good.copy()
            x.flat[int(rng.integers(x.size))] = v
            out.append((label, x))
        out.append(("all-nan", np.full(shape, np.nan, dtype=good.dtype)))
        out.append(("huge", (base * 1e30).astype(dtype)))
    out.append(("empty", np.zeros((0, *shape[1:]), dtype=good.dtype)))
    out.append(("scalar", np.asarray(good.flat[0] if good.size else 1, dtype=good.dtype)))
    if len(shape) > 1:
        out.append(("rank-1", good.reshape(-1)))
    out.append(("rank+1", good[None]))
    if shape:
        out.append(("last-axis+1", rng.standard_normal((*shape[:-1], shape[-1] + 1)).astype(dtype)))
    others = ["int64", "bool", "float64"] if np.issubdtype(good.dtype, np.floating) else ["float32", "int64"]
    for other in others:
        if np.dtype(other) != good.dtype:
            out.append((other, (base > 0) if other == "bool" else (base * 3).astype(other)))
    if torch:
        import torch as _torch

        out = [(label, _torch.from_numpy(np.ascontiguousarray(x))) for label, x in out]
    return [(f"array:{label}", x) for label, x in out]


def probe_sizes(*, huge: bool = True) -> list[tuple[str, Any]]:
    """Wrong counts and sizes: 0, -1, a float (2.5), ``True``, NaN, and (``huge``) 10**20 (past int64) and 2**40
    (in range, far too big to allocate): a size must be checked before anything is allocated or looped over."""
    out: list[tuple[str, Any]] = [
        ("zero", 0),
        ("negative", -1),
        ("float", 2.5),
        ("bool", True),
        ("nan", math.nan),
    ]
    if huge:
        out += [("past-int64", 10**20), ("2**40", 2**40)]
    return [(f"size:{label}", v) for label, v in out]


def probe_floats() -> list[tuple[str, Any]]:
    """Wrong real hyper-parameters: NaN, +inf, -inf, -1.0, 0.0 and 1e300."""
    vals = [
        ("nan", math.nan),
        ("inf", math.inf),
        ("-inf", -math.inf),
        ("-1", -1.0),
        ("0", 0.0),
        ("1e300", 1e300),
    ]
    return [(f"float:{label}", v) for label, v in vals]


def probe_files(folder: str | os.PathLike, suffix: str = "", *, seed: int = 0) -> list[tuple[str, Path]]:
    """Wrong files, written under ``folder`` with ``suffix`` (``".pt"``, ``".npz"``, ``".tsv"``: loaders that pick
    a reader by suffix then take the path they are written for): a missing path, a folder, a 0-byte file, a text
    file, a file of random bytes, a binary (non-UTF-8) text file and a zip holding one text member."""
    import numpy as np

    root = Path(folder) / f"probe-files{suffix.replace('.', '-')}-{seed}"
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    files: dict[str, Path] = {}
    files["missing"] = root / f"missing{suffix}"
    files["folder"] = root / f"a-folder{suffix}"
    files["folder"].mkdir(exist_ok=True)
    (files["folder"] / "inside.txt").write_text("not what was asked for\n")
    files["0-byte"] = root / f"empty{suffix}"
    files["0-byte"].write_bytes(b"")
    files["text"] = root / f"text{suffix}"
    files["text"].write_text("this is a text file, not the format expected\nline two\t1\t2\n")
    files["random-bytes"] = root / f"random{suffix}"
    files["random-bytes"].write_bytes(rng.integers(0, 256, 512, dtype=np.uint8).tobytes())
    files["binary-text"] = root / f"latin1{suffix}"
    files["binary-text"].write_bytes(b"caf\xe9\tna\xefve\t\xff\xfe\n\x00\x01\x02\n")
    files["zip-of-text"] = root / f"zip{suffix}"
    with zipfile.ZipFile(files["zip-of-text"], "w") as z:
        z.writestr("notes.txt", "a zip archive, but not of arrays or tensors")
    return [(f"file:{label}", p) for label, p in files.items()]


def probe_inputs(
    shape: Sequence[int] = (4, 3),
    *,
    folder: str | os.PathLike | None = None,
    suffix: str = "",
    torch: bool = False,
    seed: int = 0,
) -> Iterator[tuple[str, Any]]:
    """Every probe at once, as ``(label, value)``: :func:`probe_arrays` around ``shape``, :func:`probe_sizes`,
    :func:`probe_floats` and, with ``folder``, :func:`probe_files`."""
    yield from probe_arrays(shape, seed=seed, torch=torch)
    yield from probe_sizes()
    yield from probe_floats()
    if folder is not None:
        yield from probe_files(folder, suffix, seed=seed)


class _ProbeTimeout(BaseException):
    """Raised in a probed call that runs past its time limit (a BaseException, so ``except Exception`` in the code
    under test cannot swallow it)."""


def _short(v: Any) -> str:
    if isinstance(v, Path):
        return f"Path({v.name!r})"
    if isinstance(v, tuple | list) and any(hasattr(x, "shape") for x in v):
        inner = ", ".join(
            f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}" if hasattr(x, "shape") else _short(x)
            for x in v
        )
        return f"{type(v).__name__}({inner})"
    text = describe(v)
    return text if len(text) <= 70 else text[:67] + "..."


def _is_finite_scalar(v: Any) -> bool | None:
    """True/False for a real scalar result (float, 0-d array/tensor), None for anything else."""
    if isinstance(v, bool) or isinstance(v, int):
        return None
    if isinstance(v, float):
        return math.isfinite(v)
    shape = getattr(v, "shape", None)
    if shape is not None and tuple(shape) == () and hasattr(v, "dtype") and "complex" not in str(v.dtype):
        try:
            return math.isfinite(float(v))
        except (TypeError, ValueError, RuntimeError):
            return None
    return None


class Prober:
    """Calls public functions with probe inputs and records every call that let anything but ``allowed``
    (:class:`InputError` by default) escape, or that ran past ``time_limit`` seconds, or (``finite=True``, the
    default) that returned a NaN/inf scalar: :meth:`check` then fails listing them all.

    ``time_limit`` is a backstop against a size checked too late (a loop over 10**20 steps), not a timing
    assertion: it stops the call with SIGALRM, which can leave a module half imported, so keep it generous.

    A call returns the function's result, the allowed exception it raised, or None where it failed."""

    def __init__(
        self,
        allowed: type[BaseException] | tuple[type[BaseException], ...] = InputError,
        *,
        time_limit: float = 60.0,
        finite: bool = True,
    ) -> None:
        self.allowed = allowed if isinstance(allowed, tuple) else (allowed,)
        self.time_limit = time_limit
        self.finite = finite
        self.failures: list[str] = []
        self.calls = 0
        self.refused = 0
        self.called: set[str] = set()

    def _timer(self) -> contextlib.AbstractContextManager:
        if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
            return contextlib.nullcontext()

        @contextlib.contextmanager
        def limit() -> Iterator[None]:
            def fire(signum: int, frame: Any) -> None:
                raise _ProbeTimeout

            old = signal.signal(signal.SIGALRM, fire)
            signal.setitimer(signal.ITIMER_REAL, self.time_limit)
            try:
                yield
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)

        return limit()

    def __call__(
        self,
        fn: Callable[..., Any],
        *args: Any,
        probe_label: str = "",
        allowed: tuple[type[BaseException], ...] | None = None,
        finite: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        name = getattr(fn, "__qualname__", None) or type(fn).__name__
        self.called.add(getattr(fn, "__name__", name))
        self.calls += 1
        shown = ", ".join([*map(_short, args), *(f"{k}={_short(v)}" for k, v in kwargs.items())])
        where = f"{name}({shown})" + (f" [{probe_label}]" if probe_label else "")
        ok = self.allowed if allowed is None else allowed
        try:
            with self._timer():
                result = fn(*args, **kwargs)
        except _ProbeTimeout:
            self.failures.append(
                f"{where}: still running after {self.time_limit:g} s (a size checked too late?)"
            )
            return None
        except ok as e:
            self.refused += 1
            if not str(e).strip():
                self.failures.append(f"{where}: raised {type(e).__name__} with an empty message")
            return e
        except Exception as e:  # noqa: BLE001 - this is what the probe looks for
            text = str(e).strip().splitlines()[0][:160] if str(e).strip() else ""
            self.failures.append(f"{where}: {type(e).__name__} escaped: {text}")
            return None
        if (self.finite if finite is None else finite) and _is_finite_scalar(result) is False:
            self.failures.append(f"{where}: returned {float(result)} without a word")
        return result

    def sweep(
        self,
        fn: Callable[..., Any],
        where: int | str,
        values: Iterable[tuple[str, Any]],
        *args: Any,
        **kwargs: Any,
    ) -> None:
        """Call ``fn`` once per ``(label, value)`` in ``values``, the value put in at position ``where`` (an int:
        inserted among ``args``) or as the keyword ``where`` (a str), the other arguments as given."""
        for label, value in values:
            if isinstance(where, int):
                a = list(args)
                a.insert(where, value)
                self(fn, *a, probe_label=label, **kwargs)
            else:
                self(fn, *args, probe_label=label, **{**kwargs, where: value})

    def sweep_loaders(
        self, loaders: Iterable[Callable[..., Any]], folder: str | os.PathLike, suffixes: Iterable[str]
    ) -> None:
        """Every one of ``loaders`` on every wrong file kind (:func:`probe_files` under ``folder``) of each of
        ``suffixes``, the file as the loader's first argument."""
        loaders = list(loaders)
        for suffix in suffixes:
            files = probe_files(folder, suffix)
            for loader in loaders:
                self.sweep(loader, 0, files)

    def sweep_loop_options(
        self, fn: Callable[..., Any], folder: str | os.PathLike, *args: Any, **kwargs: Any
    ) -> None:
        """Sweep the options a paperkit training loop takes, each with its wrong values (files under ``folder``):
        ``log_dir`` a file, ``callbacks`` an int list and a float, ``checkpoint`` every wrong file kind (with
        ``resume=True``) and ``checkpoint_every`` every wrong size; ``args`` and ``kwargs`` make a valid call."""
        self.sweep(fn, "log_dir", [("a file", probe_files(folder, ".log")[3][1])], *args, **kwargs)
        self.sweep(fn, "callbacks", [("int", [3]), ("float", 2.5)], *args, **kwargs)
        self.sweep(fn, "checkpoint", probe_files(folder, ".state"), *args, **kwargs, resume=True)
        self.sweep(fn, "checkpoint_every", probe_sizes(), *args, **kwargs)

    def check(self) -> None:
        """Fail listing every call that let something else escape (or returned NaN, or hung)."""
        assert self.calls, "no call was probed"
        if self.failures:
            shown = "\n  ".join(self.failures[:40])
            more = f"\n  ... and {len(self.failures) - 40} more" if len(self.failures) > 40 else ""
            raise AssertionError(
                f"{len(self.failures)} of {self.calls} probed calls went wrong:\n  {shown}{more}"
            )

    def assert_covers(self, module: Any, skip: Iterable[str] | dict[str, str] = ()) -> None:
        """Every public function (and class, unless it is an exception) in ``module.__all__`` was probed at least
        once, or is in ``skip`` (better a dict naming why)."""
        skipped = set(skip)
        names = [n for n in getattr(module, "__all__", []) if n not in skipped]
        missing = []
        for n in names:
            obj = getattr(module, n, None)
            if not callable(obj) or (inspect.isclass(obj) and issubclass(obj, BaseException)):
                continue
            if n not in self.called and getattr(obj, "__name__", n) not in self.called:
                missing.append(n)
        assert not missing, f"{module.__name__}: public callables never probed: {', '.join(missing)}"
