"""Calibration runs for the claims table (``reproduce.CLAIMS``): per-seed numbers on calibration seeds, never on
evaluated ones, printed as JSON lines; docs/calibration.md records what they gave. Not part of the recorded run.

    uv run python packages/fif/scripts/calibrate.py toy --mode quick --dataset sine --seeds 900-907
    uv run python packages/fif/scripts/calibrate.py toy --mode full --dataset s_curve --seeds 900-907 --exact
    uv run python packages/fif/scripts/calibrate.py mnist --mode full --seeds 900-905
    uv run python packages/fif/scripts/calibrate.py null --dataset sine --n 1000 --draws 100
    uv run python packages/fif/scripts/calibrate.py null --dataset mnist --draws 50

``--set key=value`` overrides a field of the mode's ``ReproConfig`` (to compare recipes). One thread; CPU seconds
are ``time.process_time()`` per arm (training and evaluation).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import fields
from dataclasses import replace

import torch

from iclr24.fif.reproduce import CALIBRATION_SEEDS
from iclr24.fif.reproduce import MODES
from iclr24.fif.reproduce import POOL
from iclr24.fif.reproduce import MnistFeatures
from iclr24.fif.reproduce import mnist_arms
from iclr24.fif.reproduce import null_mmd
from iclr24.fif.reproduce import train_arms
from iclr24.paperkit.cli import seed_list


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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("toy", "mnist", "null"))
    p.add_argument("--mode", default="quick", choices=("quick", "full"))
    p.add_argument("--dataset", default="sine")
    p.add_argument("--seeds", default="900-907")
    p.add_argument("--exact", action="store_true")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--draws", type=int, default=100)
    p.add_argument("--set", action="append", default=[])
    a = p.parse_args()
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
    for seed in _seeds(a.seeds):
        if a.what == "toy":
            res = train_arms(c, a.dataset, seed, exact=a.exact)
            row = {"seed": seed, **{arm: m["mmd"] for arm, m in res["metrics"].items()},
                   "z_w1_FIF": res["metrics"]["FIF"]["z_w1"], "cpu": res["cpu"]}  # fmt: skip
        else:
            res = mnist_arms(c, seed, feats)
            row = {"seed": seed, **res["fd"], "cpu": res["cpu"]}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
