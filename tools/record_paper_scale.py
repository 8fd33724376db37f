#!/usr/bin/env python3
"""Record paper-scale rows: ``python tools/record_paper_scale.py [NAMES] [--device cuda] [--force]``.

Runs ``iclr24 bench --paper-scale NAMES`` (each paper in a fresh process of its own) into a temporary folder and
merges its rows into ``docs/paper-scale-<device>.json``, one row per package, each with the commit, the date, the
machine and the load at the start. ``tools/refresh_readme.py`` then writes the root README's paper-scale table and
each package README's row (between ``<!-- paper-scale:start -->`` and ``<!-- paper-scale:end -->``) from that file,
so no number there is typed by hand. Like ``record_run.py``, it refuses a busy machine (1-minute load >= 0.5)
unless ``--force``: the seconds per step would not be an idle machine's.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from record_run import IDLE_LOAD  # noqa: E402
from record_run import commit_of  # noqa: E402


def recorded_path(device: str) -> Path:
    return ROOT / "docs" / f"paper-scale-{device.split(':')[0]}.json"


def record(
    names: list[str], *, device: str = "cpu", force: bool = False, source: Path | None = None, log=print
) -> Path:
    load = os.getloadavg()[0]
    if (
        source is not None
    ):  # a run made elsewhere (tools/gpu_paper_scale.sh on a GPU machine): merged as it is
        doc = json.loads(Path(source).read_text())
        return merge(
            doc["rows"],
            device=doc.get("device", device),
            commit=commit_of(""),
            load=None,
            log=log,
            machine=doc.get("machine"),
        )
    if load >= IDLE_LOAD and not force:
        raise SystemExit(
            f"record_paper_scale: the machine is not idle (1-minute load {load:.2f} >= {IDLE_LOAD}); wait, or "
            "pass --force (the recorded seconds would not be an idle machine's)"
        )
    commit = commit_of(names[0] if len(names) == 1 else "")
    with tempfile.TemporaryDirectory(prefix="paper-scale-") as tmp:
        cmd = [sys.executable, "-m", "iclr24.paperkit.runner.umbrella", "bench", "--paper-scale", *names]
        cmd += ["--device", device, "--out", tmp]
        log(f"record_paper_scale: {' '.join(cmd[1:])} (load {load:.2f}) ...")
        subprocess.run(cmd, cwd=ROOT)  # exit 1 when a row errored: that row is recorded as an error
        doc = json.loads((Path(tmp) / "paper_scale.json").read_text())
    return merge(
        doc["rows"], device=device, commit=commit, load=round(load, 2), log=log, machine=doc.get("machine")
    )


def merge(
    rows: list[dict], *, device: str, commit: str, load: float | None, log=print, machine: dict | None = None
):
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    path = recorded_path(device)
    old = json.loads(path.read_text()) if path.exists() else {"version": 1, "device": device, "rows": {}}
    for row in rows:
        if row.get("missing"):
            continue
        old["rows"][row["package"]] = {**row, "commit": commit, "date": date, "load": load}
    if machine:
        old["machine"] = machine
    old["rows"] = dict(sorted(old["rows"].items()))
    path.parent.mkdir(exist_ok=True)
    tmp_path = path.with_suffix(".json.tmp")
    tmp_path.write_text(json.dumps(old, indent=1, allow_nan=False) + "\n")
    os.replace(tmp_path, path)
    log(f"record_paper_scale: wrote {path.relative_to(ROOT)} ({len(old['rows'])} rows)")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="packages (default: every installed paper)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--force", action="store_true", help="record even if the machine is not idle")
    ap.add_argument("--from", dest="source", type=Path, help="merge a paper_scale.json made elsewhere")
    a = ap.parse_args(argv)
    if a.source:
        record([], device=a.device, source=a.source)
        return 0
    names = a.names
    if not names:
        from iclr24.paperkit.runner.report import discover_papers

        names = list(discover_papers())
    record(names, device=a.device, force=a.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
