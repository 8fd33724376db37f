#!/usr/bin/env python3
"""Record one paper's claim run: ``python tools/record_run.py NAME --quick|--full [--force]``.

Runs ``iclr24 reproduce NAME`` alone (its own process, its declared threads pinned) into a temporary folder and
writes ``packages/NAME/docs/claims-<mode>.json``: the paper's record from that run (claims, facts), with the commit,
the date, the machine, the load at the start, and the wall and CPU seconds. ``tools/refresh_readme.py`` then writes
the package README's reproduction table and the root README's status column from these files, so no number in
those tables is typed by hand.

The machine must be idle (1-minute load average below 0.5 at the start), else the script says so and stops,
unless ``--force``: the numbers would be the same (threads are pinned), but the recorded seconds would not be
an idle machine's. ``--keep FILE`` copies a file the run wrote (a plot named in the record) into ``docs/``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IDLE_LOAD = 0.5


def git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def commit_of(name: str) -> str:
    """HEAD's short hash, with ``+dirty`` when the package or paperkit has uncommitted changes."""
    head = git("rev-parse", "--short=10", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", f"packages/{name}", "shared")
    return head + ("+dirty" if dirty else "")


def record(
    name: str, mode: str, *, seed: int = 0, force: bool = False, keep: list[str] = (), log=print
) -> Path:
    pkg = ROOT / "packages" / name
    if not pkg.is_dir():
        known = ", ".join(sorted(p.name for p in (ROOT / "packages").iterdir() if p.is_dir()))
        raise SystemExit(f"record_run: no package {name!r} (packages: {known})")
    load = os.getloadavg()[0]
    commit = commit_of(name)  # the code that runs: taken before the run
    if load >= IDLE_LOAD and not force:
        raise SystemExit(
            f"record_run: the machine is not idle (1-minute load {load:.2f} >= {IDLE_LOAD}); wait, or pass --force "
            "(the numbers are the same, the recorded seconds are not an idle machine's)"
        )
    with tempfile.TemporaryDirectory(prefix=f"record-{name}-") as tmp:
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "iclr24.paperkit.runner.umbrella", "reproduce", name, f"--{mode}"]
        cmd += ["--seed", str(seed), "--out", str(out), "--quiet"]
        log(f"record_run: {' '.join(cmd[1:])} (load {load:.2f}) ...")
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=ROOT)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        doc = json.loads((out / "claims.json").read_text())
        (rec,) = doc["papers"]
        if rec["status"] == "failed":
            raise SystemExit(
                f"record_run: {name} failed: {rec['error']} (exit {p.returncode}); nothing recorded"
            )
        docs = pkg / "docs"
        docs.mkdir(exist_ok=True)
        for f in keep:
            src = out / rec["folder"] / f
            if not src.is_file():  # a lost plot is no reason to lose the record
                log(f"record_run: --keep {f}: the run wrote no such file; kept nothing for it")
                continue
            shutil.copyfile(src, docs / Path(f).name)
        recorded = {
            "version": 4,
            "paper": name,
            "mode": mode,
            "seed": seed,
            "command": f"iclr24 reproduce {name} --{mode}" + (f" --seed {seed}" if seed else ""),
            "commit": commit,
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": doc.get("machine", {}),
            "load": round(load, 2),
            "wall_seconds": round(wall, 1),
            "cpu_seconds": round(cpu, 1),
            "budget_seconds": rec.get("budget_seconds"),
            "dispatch": rec.get("dispatch"),
            "timing_fields": doc.get("timing_fields", []),
            "record": rec,
        }
    path = docs / f"claims-{mode}.json"
    tmp_path = path.with_suffix(".json.tmp")
    tmp_path.write_text(json.dumps(recorded, indent=1, allow_nan=False) + "\n")
    os.replace(tmp_path, path)
    n = {v: sum(c["verdict"] == v for c in rec["claims"]) for v in ("holds", "fails", "inconclusive")}
    log(
        f"record_run: wrote {path.relative_to(ROOT)}: {n['holds']} hold, {n['fails']} fail, "
        f"{n['inconclusive']} inconclusive; {wall:.0f} s wall, {cpu:.0f} s CPU"
    )
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", help="the package (folder name under packages/)")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick")
    mode.add_argument("--full", dest="mode", action="store_const", const="full")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="record even if the machine is not idle")
    ap.add_argument(
        "--keep", action="append", default=[], metavar="FILE", help="copy this output file to docs/"
    )
    a = ap.parse_args(argv)
    record(a.name, a.mode, seed=a.seed, force=a.force, keep=a.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
