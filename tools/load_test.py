#!/usr/bin/env python3
"""How much slower each paper runs while other processes compete for the cores (a benchmark, not a test).

``python tools/load_test.py [--busy 3] [NAMES...]`` starts ``--busy`` CPU-bound busy processes (each stops by itself
after ``--max-seconds``), runs ``iclr24 reproduce NAMES --quick`` (default: every paper with a recorded
``docs/claims-quick.json``) and prints, per paper, its seconds under load against its recorded idle seconds.
``--command "srigl bench --quick"`` times a command instead. The goal: no paper more than 3x slower under 3
competing processes on 2 cores (each paper pins its own threads, so it does not spin against the others).
``--out DIR`` keeps the run's report; ``--json FILE`` writes the table. ``--idle claims.json`` takes the idle
seconds from a whole ``iclr24 reproduce --quick`` run on this machine instead of the recorded files (which may come
from another machine).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def busy(seconds: float) -> None:
    """Spin on the CPU until ``seconds`` have passed (bounded: it always stops by itself)."""
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        for _ in range(10_000):
            x = (x * 1_103_515_245 + 12_345) % 2_147_483_648


def recorded_seconds(name: str) -> float | None:
    p = ROOT / "packages" / name / "docs" / "claims-quick.json"
    if not p.exists():
        return None
    return json.loads(p.read_text())["record"]["seconds"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="papers (default: every paper with a recorded quick run)")
    ap.add_argument("--busy", type=int, default=3, help="competing busy processes (default 3)")
    ap.add_argument("--max-seconds", type=float, default=3600.0, help="the busy processes stop after this")
    ap.add_argument("--command", help="time this command instead of iclr24 reproduce")
    ap.add_argument("--out", type=Path, help="keep the reproduce output here")
    ap.add_argument("--json", type=Path, help="write the table as JSON here")
    ap.add_argument(
        "--idle", type=Path, help="idle seconds from this claims.json (an idle run on this machine)"
    )
    a = ap.parse_args(argv)
    if a.busy < 0 or a.max_seconds <= 0:
        ap.error("--busy must be >= 0 and --max-seconds > 0")
    idle_of = recorded_seconds
    if a.idle is not None:
        try:
            measured = {p["name"]: p["seconds"] for p in json.loads(a.idle.read_text())["papers"]}
        except (OSError, ValueError, KeyError, TypeError) as e:
            ap.error(
                f"--idle must be a claims.json written by iclr24 reproduce, could not read {a.idle}: {e}"
            )
        idle_of = measured.get
    names = a.names or sorted(
        p.name for p in (ROOT / "packages").iterdir() if (p / "docs" / "claims-quick.json").exists()
    )
    procs = [mp.Process(target=busy, args=(a.max_seconds,), daemon=True) for _ in range(a.busy)]
    for p in procs:
        p.start()
    rows = []
    try:
        if a.command:
            t0 = time.perf_counter()
            rc = subprocess.run(shlex.split(a.command), cwd=ROOT).returncode
            rows.append({"name": a.command, "seconds": time.perf_counter() - t0, "idle": None, "rc": rc})
        else:
            with tempfile.TemporaryDirectory() as tmp:
                out = a.out or Path(tmp) / "out"
                cmd = [
                    sys.executable,
                    "-m",
                    "iclr24.paperkit.runner.umbrella",
                    "reproduce",
                    *names,
                    "--quick",
                ]
                subprocess.run([*cmd, "--quiet", "--out", str(out)], cwd=ROOT)
                doc = json.loads((out / "claims.json").read_text())
                for r in doc["papers"]:
                    rows.append({"name": r["name"], "seconds": r["seconds"], "idle": idle_of(r["name"])})
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join()
    source = f"idle seconds ({a.idle.name})" if a.idle else "recorded idle seconds"
    print(f"| paper | seconds under {a.busy} busy processes | {source} | slowdown |")
    print("|---|---|---|---|")
    for r in rows:
        idle = r["idle"]
        ratio = f"{r['seconds'] / idle:.2f}x" if idle else "-"
        print(f"| {r['name']} | {r['seconds']:.1f} | {idle if idle is None else f'{idle:.1f}'} | {ratio} |")
    if a.json:
        a.json.write_text(json.dumps({"busy": a.busy, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
