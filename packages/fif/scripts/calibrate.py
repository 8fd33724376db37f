"""Calibration runs for the claims table (``reproduce.CLAIMS``): per-seed numbers on calibration seeds, never on
evaluated ones, printed as JSON lines; docs/calibration.md records what they gave. Not part of the recorded run.

    uv run python packages/fif/scripts/calibrate.py toy --mode quick --dataset sine --seeds 900-907
    uv run python packages/fif/scripts/calibrate.py toy --mode full --dataset s_curve --seeds 900-907 --exact
    uv run python packages/fif/scripts/calibrate.py mnist --mode full --seeds 900-905
    uv run python packages/fif/scripts/calibrate.py null --dataset sine --n 1000 --draws 100
    uv run python packages/fif/scripts/calibrate.py null --dataset mnist --draws 50

``--set key=value`` overrides a field of the mode's ``ReproConfig`` (to compare recipes). One thread; CPU seconds
are ``time.process_time()`` per arm (training and evaluation). ``--write`` also merges the per-seed values of a toy
or mnist run into the package's calibration.json (see ``--help``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import fields
from dataclasses import replace
from pathlib import Path

import torch

from iclr24.fif.reproduce import CALIBRATION_SEEDS
from iclr24.fif.reproduce import MODES
from iclr24.fif.reproduce import POOL
from iclr24.fif.reproduce import MnistFeatures
from iclr24.fif.reproduce import mnist_arms
from iclr24.fif.reproduce import null_mmd
from iclr24.fif.reproduce import train_arms
from iclr24.paperkit.cli import parse_with_write
from iclr24.paperkit.cli import seed_list
from iclr24.paperkit.power import CALIBRATION_FILE
from iclr24.paperkit.power import calibration_path
from iclr24.paperkit.power import merge_by_seed
from iclr24.paperkit.power import update_calibration_table

CALIBRATION_JSON = calibration_path("iclr24.fif")
WRITE_HELP = f"""--write merges a toy or mnist run's per-seed values into {CALIBRATION_FILE} (the package data the paired
rows' Calibrations read), into the entry of --mode and the data set (mnist: "mnist") when the file has one: the
metric of each arm the entry holds (FIF, AE+Gauss, exact) for the seeds run, the entry's other seeds kept; a seed
new to the entry only from a run with all its arms (--exact where it holds exact). Not written: the plain AE and
FIF's latent W1 (no row is calibrated on them), the CPU s (the rows' seconds per seed are idle-equivalent, 0.75 x
what a run under load measured, or measured idle: reproduce.py's _SECONDS_PER_SEED), a null run (the margins,
NULL, are rounded rules in reproduce.py), and a run with --set (not the mode's recipe). --measured (required with
--write) replaces the file's one provenance line, so it names the runs of the numbers kept too."""


def _seeds(text: str) -> list[int]:
    seeds = seed_list(text)
    bad = sorted(set(seeds) & set(POOL))
    if bad:
        raise SystemExit(
            f"seeds {bad} are evaluated seeds (POOL); calibrate on others, e.g. {CALIBRATION_SEEDS}"
        )
    return seeds


def _config(mode: str, sets: list[str]):
    c = MODES[mode]
    types = {f.name: type(getattr(c, f.name)) for f in fields(c)}
    kw = {}
    for s in sets:
        k, _, v = s.partition("=")
        kw[k] = tuple(int(x) for x in v.split(",")) if types[k] is tuple else types[k](v)
    return replace(c, **kw)


def write_calibration(
    path: str | Path, mode: str, dataset: str, rows: list[dict], measured: str
) -> list[str]:
    """Merge the printed per-seed ``rows`` of a run of ``mode`` on ``dataset`` into the calibration file at
    ``path``; returns what went where (or why nothing did)."""
    seeds, said = [r["seed"] for r in rows], []

    def merge(table: dict) -> None:
        entry = table.get(mode, {}).get(dataset)
        if entry is None:
            said.append(f"{mode} {dataset}: no row is calibrated on it, not written")
            return
        arms = [k for k in entry if k != "seeds"]
        missing = [k for k in arms if not all(k in r for r in rows)]
        new = [s for s in seeds if s not in entry["seeds"]]
        if missing and new:
            said.append(
                f"{mode} {dataset}: seeds {new} are new to the entry and the run lacks {missing}, not written"
            )
            return
        written = [k for k in arms if k not in missing]
        entry["seeds"], cols, _ = merge_by_seed(
            entry["seeds"], {k: entry[k] for k in arms}, seeds, {k: [r[k] for r in rows] for k in written}
        )
        entry.update(cols)
        table["measured"] = measured
        said.append(f"{mode} {dataset}: {', '.join(written)} of seeds {seeds}")

    update_calibration_table(path, merge)  # a table left as it was is not written
    return said


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=WRITE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("what", choices=("toy", "mnist", "null"))
    p.add_argument("--mode", default="quick", choices=("quick", "full"))
    p.add_argument("--dataset", default="sine")
    p.add_argument("--seeds", default="900-907")
    p.add_argument("--exact", action="store_true")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--draws", type=int, default=100)
    p.add_argument("--set", action="append", default=[])
    a = parse_with_write(p, what="this run's per-seed values")
    if a.write and (a.what == "null" or a.set):
        p.error("--write takes a toy or mnist run of the mode's own recipe (no null run, no --set)")
    torch.set_num_threads(1)
    c = _config(a.mode, a.set)
    if a.what == "null":
        t0 = time.process_time()
        if a.dataset == "mnist":
            from iclr24.paperkit.data.mnist import load_mnist

            vals = MnistFeatures(load_mnist(), c).null(a.draws, c.mnist_eval)
        else:
            vals = null_mmd(a.dataset, a.n, a.draws)
        s = sorted(vals)
        q95 = s[max(0, int(0.95 * len(s)) - 1)]  # the 95th of 100
        print(json.dumps({"null": a.dataset, "n": a.n, "draws": a.draws, "mean": statistics.fmean(vals),
                          "sd": statistics.stdev(vals), "q95": q95, "q95_minus_mean": q95 - statistics.fmean(vals), "max": s[-1],
                          "cpu_per_draw": (time.process_time() - t0) / a.draws}))  # fmt: skip
        return
    feats = None
    if a.what == "mnist":
        from iclr24.paperkit.data.mnist import load_mnist

        feats = MnistFeatures(load_mnist(), c)
    rows = []
    for seed in _seeds(a.seeds):
        if a.what == "toy":
            res = train_arms(c, a.dataset, seed, exact=a.exact)
            row = {"seed": seed, **{arm: m["mmd"] for arm, m in res["metrics"].items()},
                   "z_w1_FIF": res["metrics"]["FIF"]["z_w1"], "cpu": res["cpu"]}  # fmt: skip
        else:
            res = mnist_arms(c, seed, feats)
            row = {"seed": seed, **res["fd"], "cpu": res["cpu"]}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if a.write:
        dataset = a.dataset if a.what == "toy" else "mnist"
        print("\n".join(write_calibration(CALIBRATION_JSON, a.mode, dataset, rows, a.measured)))


if __name__ == "__main__":
    main()
