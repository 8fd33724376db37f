"""Calibration runs for the claims table (docs/calibration.md): per-seed source-only / AaD / SF(DA)^2 accuracies on
calibration seeds (never evaluated ones), with CPU seconds, then the power plan each row of ``CLAIMS`` would get.

    OMP_NUM_THREADS=1 uv run python packages/sfda2/scripts/calibrate.py --study mnist --mode full --seeds 100-115
    OMP_NUM_THREADS=1 uv run python packages/sfda2/scripts/calibrate.py --study mnist --mode quick --seeds 100-115
    OMP_NUM_THREADS=1 uv run python packages/sfda2/scripts/calibrate.py --study digits --mode full --seeds 100-123

One JSON line per seed, then one line per row of the table for that study and mode. Not the recorded run.
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch

from iclr24.paperkit.cli import seed_list
from iclr24.paperkit.power import Calibration
from iclr24.paperkit.power import power_plan
from iclr24.sfda2.data import mnist_to_digits
from iclr24.sfda2.reproduce import CLAIMS
from iclr24.sfda2.reproduce import STUDIES
from iclr24.sfda2.reproduce import _collapsed
from iclr24.sfda2.reproduce import _digits_target
from iclr24.sfda2.reproduce import one_seed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--study", choices=("mnist", "digits"), default="mnist")
    p.add_argument("--mode", choices=("quick", "full"), default="full")
    p.add_argument("--seeds", default="100-115", help="calibration seeds: 100-115 or 100,101")
    a = p.parse_args()
    torch.set_num_threads(1)
    cfg = STUDIES[a.mode]
    runs = []
    for s in seed_list(a.seeds):
        d = mnist_to_digits(None, cfg.mnist_n_source, seed=s) if a.study == "mnist" else _digits_target(s)
        r = one_seed(cfg, d, s)
        runs.append(r)
        print(
            json.dumps({k: r[k] for k in ("seed", "source-only", "aad", "sfda2", "cpu", "nonfinite")}),
            flush=True,
        )
    col = {k: [r[k] for r in runs] for k in ("source-only", "aad", "sfda2")}
    per_seed = statistics.fmean(sum(r["cpu"].values()) for r in runs)
    arms = {"sfda2_vs_aad": ("sfda2", "aad"), "sfda2_adapts": ("sfda2", "source-only"),
            "aad_adapts": ("aad", "source-only"), "collapse": ("sfda2", "aad")}  # fmt: skip
    for spec in CLAIMS:
        study, what = spec.id.split("_", 1)
        if study != a.study or a.mode not in spec.modes:
            continue
        ours, base = (col[k] for k in arms[what])
        if what == "collapse":
            ours, base = _collapsed(ours, col["source-only"]), _collapsed(base, col["source-only"])
        cal = Calibration(seeds=tuple(r["seed"] for r in runs), ours=tuple(ours), baseline=tuple(base),
                          seconds_per_seed=per_seed, measured="calibrate.py")  # fmt: skip
        plan = power_plan(cal, better=spec.better, margin=spec.margin, factor=spec.factor, test=spec.test,
                          budget_seconds=spec.budget[a.mode], max_seeds=len(spec.seeds[a.mode]))  # fmt: skip
        print(json.dumps({"row": spec.id, "seconds_per_seed": round(per_seed, 2), "plan": plan.reason}))


if __name__ == "__main__":
    main()
