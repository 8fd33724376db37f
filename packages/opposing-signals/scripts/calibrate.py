"""Calibration runs for the Adam claim of ``reproduce.py`` (not part of any recorded run).

For each calibration seed (never an evaluated seed): planted GD and planted Adam on the same split, planted images
and initialisation, ``--steps`` steps each, no sharpness. Read at several run lengths ``--at`` (neither optimiser's
trajectory depends on the run's length, so a prefix of the run is the shorter run): the groups' correlation over
the last half (the claim's metric), and the anti-phase amplitude over the run after its first eighth. Prints JSON,
with the CPU seconds (``time.process_time``, one thread) each seed's two runs cost. What it printed, and when, is in
``docs/calibration.md``.

    OMP_NUM_THREADS=1 uv run python packages/opposing-signals/scripts/calibrate.py --seeds 100-111 --steps 1200 \
        --at 600 800 1000 1200

``--write`` also merges what the run measured into the package's calibration.json (see ``--help``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from iclr24.paperkit.cli import parse_with_write
from iclr24.paperkit.cli import seed_list
from iclr24.paperkit.power import CALIBRATION_FILE
from iclr24.paperkit.power import calibration_path
from iclr24.paperkit.power import merge_by_seed
from iclr24.paperkit.power import update_calibration_table

CALIBRATION_JSON = calibration_path("iclr24.opposing_signals")
WRITE_HELP = f"""--write merges what the run measured into {CALIBRATION_FILE} (the package data the Adam rows' Calibrations
read): per-seed Adam and GD anti-phase amplitude at each --at length the file holds (600 and 1500) and correlation
(1500), for the seeds run (the tables' other seeds kept), and the CPU s of one seed's GD and Adam runs when --steps
is a length the file holds them for (1500; reproduce.py scales 600's from it). Not written: the settled correlation,
other lengths, the CPU s of other --steps; the recorded CPU s were measured with the kernels pinned to AVX2 as a
recorded run pins them (paperkit.threads), which this script does not do. --measured (required with --write)
replaces the file's one provenance line, so it names the runs of the numbers kept too."""


def write_calibration(path: str | Path, out: dict, measured: str) -> list[str]:
    """Merge the printed result ``out`` of one run into the calibration file at ``path``; returns what went where."""
    said = []

    def merge(table: dict) -> None:
        for length, by_opt in out["at"].items():
            for metric, key in (("amplitude", "amplitude"), ("corr", "corr")):
                if length in table[metric]:
                    row = table[metric][length]
                    values = {opt: by_opt[opt][key] for opt in ("adam", "gd")}
                    row["seeds"], cols, _ = merge_by_seed(
                        row["seeds"], {opt: row[opt] for opt in values}, out["seeds"], values
                    )
                    row.update(cols)
                    said.append(f"{metric} at {length} steps: seeds {out['seeds']}")
        steps = str(out["steps"])
        if steps in table["cpu_seconds_per_seed"]:
            table["cpu_seconds_per_seed"][steps] = {
                opt: out["cpu_seconds_per_seed"][opt] for opt in ("gd", "adam")
            }
            said.append(f"CPU s per seed at {steps} steps")
        if said:
            table["measured"] = measured

    update_calibration_table(path, merge)  # a table left as it was is not written
    return said or ["nothing of this run maps onto the file (lengths, --steps), not written"]


def main() -> None:
    from dataclasses import replace

    from iclr24.opposing_signals.experiments import run_experiment
    from iclr24.opposing_signals.groups import antiphase_amplitude
    from iclr24.opposing_signals.groups import group_mean_changes
    from iclr24.opposing_signals.groups import pearson
    from iclr24.opposing_signals.reproduce import FULL
    from iclr24.opposing_signals.reproduce import _digits
    from iclr24.opposing_signals.reproduce import _experiment

    torch.set_num_threads(1)
    p = argparse.ArgumentParser(epilog=WRITE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=seed_list, required=True)
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--at", type=int, nargs="+", default=[600, 800, 1000, 1200])
    a = parse_with_write(p)
    c = replace(FULL, steps=a.steps)
    out: dict = {"steps": a.steps, "seeds": a.seeds, "at": {str(L): {} for L in a.at}}
    cpu = {"gd": 0.0, "adam": 0.0}
    for seed in a.seeds:
        data = _digits(c, seed)["planted"]
        for opt in ("gd", "adam"):
            exp = (
                _experiment(c, seed, "adam", c.adam_lr, sharp=False)
                if opt == "adam"
                else _experiment(c, seed, sharp=False)
            )
            t0 = time.process_time()
            _, tracker = run_experiment(data.x_train, data.y_train, exp, data.group_a, data.group_b)
            cpu[opt] += time.process_time() - t0
            d = tracker.deltas()
            for L in a.at:
                dl = d[:L]
                half, settled = dl[L // 2 :], dl[L // 8 :]
                ha, hb = group_mean_changes(half, data.group_a), group_mean_changes(half, data.group_b)
                sa, sb = group_mean_changes(settled, data.group_a), group_mean_changes(settled, data.group_b)
                row = out["at"][str(L)].setdefault(opt, {"corr": [], "amplitude": [], "corr_settled": []})
                row["corr"].append(round(pearson(ha, hb), 4))
                row["amplitude"].append(round(antiphase_amplitude(sa, sb), 6))
                row["corr_settled"].append(round(pearson(sa, sb), 4))
    n = len(a.seeds)
    out["cpu_seconds_per_seed"] = {k: round(v / n, 2) for k, v in cpu.items()}
    print(json.dumps(out))
    if a.write:
        print("\n".join(write_calibration(CALIBRATION_JSON, out, a.measured)))


if __name__ == "__main__":
    main()
