#!/usr/bin/env python3
"""Train the checkpoints a package ships: ``python tools/train_checkpoints.py NAME [--only MODEL ...]``.

Reads ``packages/NAME/src/iclr24/<module>/checkpoints/commands.json`` (model name -> the package's own ``train``
command, without ``--out``), runs each command in this process with one thread and the CPU kernels pinned (as
``reproduce`` runs), into a temporary folder, and installs the model folder it wrote as ``checkpoints/<model>``
(its provenance.json records the command, seed, steps, CPU seconds, machine, commit and losses). This is the script
that re-runs the recorded commands; ``reproduce --from-scratch`` retrains the same way from each provenance.json.
A file over 5 MB or a package over 25 MB of checkpoints is refused before it is installed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

MAX_FILE, MAX_PACKAGE = 5 * 2**20, 25 * 2**20


def _sizes_ok(folder: Path, ckdir: Path, name: str) -> str | None:
    big = [f.name for f in folder.iterdir() if f.is_file() and f.stat().st_size > MAX_FILE]
    if big:
        return f"{name}: {', '.join(big)} over 5 MB"
    others = sum(
        f.stat().st_size for f in ckdir.rglob("*") if f.is_file() and name not in f.relative_to(ckdir).parts
    )
    new = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    if others + new > MAX_PACKAGE:
        return f"{name}: the package's checkpoints would total {(others + new) / 2**20:.1f} MB (> 25 MB)"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name", help="package folder name, e.g. lace")
    ap.add_argument("--only", nargs="+", metavar="MODEL", help="train only these models of commands.json")
    args = ap.parse_args(argv)

    from iclr24.paperkit.threads import pin_process_dispatch
    from iclr24.paperkit.threads import pin_process_threads

    pin_process_threads(1)
    pin_process_dispatch(True)  # before torch computes anything: the numbers reproduce's --from-scratch gets

    from iclr24.paperkit.shipped import checkpoints_dir
    from iclr24.paperkit.shipped import install_model
    from iclr24.paperkit.shipped import run_train_command
    from iclr24.paperkit.shipped import shipped_commands
    from iclr24.paperkit.shipped import training_label

    package = "iclr24." + args.name.replace("-", "_")
    cmds = shipped_commands(package)
    todo = args.only or list(cmds)
    unknown = [m for m in todo if m not in cmds]
    if unknown:
        print(f"train_checkpoints: not in commands.json: {', '.join(unknown)} (has: {', '.join(cmds)})")
        return 2
    ckdir = checkpoints_dir(package)
    for model in todo:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix=f"ckpt-{model}-") as tmp:
            trained = run_train_command(cmds[model], Path(tmp) / "run")
            problem = _sizes_ok(trained, ckdir, model)
            if problem:
                print(f"train_checkpoints: {problem}; not installed")
                return 1
            dest = install_model(trained, ckdir / model)
        print(f"{model}: {training_label(dest)}; {time.perf_counter() - t0:.0f} s wall -> {dest}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
