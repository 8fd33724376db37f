"""Calibration runs for the Adam claim of ``reproduce.py`` (not part of any recorded run).

For each calibration seed (never an evaluated seed): planted GD and planted Adam on the same split, planted images
and initialisation, ``--steps`` steps each, no sharpness. Read at several run lengths ``--at`` (neither optimiser's
trajectory depends on the run's length, so a prefix of the run is the shorter run): the groups' correlation over
the last half (the claim's metric), and the anti-phase amplitude over the run after its first eighth. Prints JSON,
with the CPU seconds (``time.process_time``, one thread) each seed's two runs cost. What it printed, and when, is in
``docs/calibration.md``.

    OMP_NUM_THREADS=1 uv run python packages/opposing-signals/scripts/calibrate.py --seeds 100-111 --steps 1200 \
        --at 600 800 1000 1200
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from iclr24.paperkit.cli import seed_list


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
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=seed_list, required=True)
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--at", type=int, nargs="+", default=[600, 800, 1000, 1200])
    a = p.parse_args()
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


if __name__ == "__main__":
    main()
