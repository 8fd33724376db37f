"""Calibration runs for the claims table (``CLAIMS`` in ``src/iclr24/srigl/reproduce.py``), never the recorded run.

Trains the methods a paired claim compares on calibration seeds (disjoint from the evaluated pool) with one mode's
recipe, as the claim run does (one thread, CPU kernels pinned to AVX2, the same ``train`` call), and prints one
JSON line per run: the test accuracy (%), the ablated hidden neurons and the CPU seconds of the run
(``time.process_time``). ``--speed`` prints the speed claim's per-round ratios instead. The numbers, dated, go into
``docs/calibration.md`` and into the rows' ``Calibration(...)``.

    python packages/srigl/scripts/calibrate.py --mode quick --data digits --seeds 100-111 \
        --runs "SRigL g=0.3@0.9,RigL@0.9"
    python packages/srigl/scripts/calibrate.py --speed --rounds 9
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from iclr24.paperkit.cli import seed_list
from iclr24.paperkit.threads import pin_process_dispatch
from iclr24.paperkit.threads import pin_process_threads

pin_process_threads(1)  # what the claim run does, before torch is imported
pin_process_dispatch(True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("quick", "full"), default="quick")
    p.add_argument("--data", choices=("digits", "mnist"), default="digits")
    p.add_argument("--seeds", default="100-104", help="calibration seeds, e.g. 100-111")
    p.add_argument(
        "--runs", default="SRigL g=0.3@0.9,RigL@0.9", help="LABEL@SPARSITY,... (METHOD_ROWS labels)"
    )
    p.add_argument("--epochs", type=int, default=None, help="override the mode's epochs (trying a recipe)")
    p.add_argument("--delta-t", type=int, default=None)
    p.add_argument("--n-train", type=int, default=None, help="MNIST: training images (default: the mode's)")
    p.add_argument("--speed", action="store_true", help="time the speed claim's rounds instead")
    p.add_argument("--rounds", type=int, default=9)
    a = p.parse_args(argv)

    import torch

    from iclr24.srigl import reproduce as R
    from iclr24.srigl.data import digits_split
    from iclr24.srigl.data import mnist_split

    torch.set_num_threads(1)
    if a.speed:
        from dataclasses import replace

        from iclr24.srigl.bench import time_fixed_variant

        sc = replace(R.MODES[a.mode].speed, rounds=a.rounds)
        t0 = time.process_time()
        m = time_fixed_variant(sc)
        print(json.dumps({
            "speed": a.mode, "x_dense": [r["x_dense"] for r in m["rounds"]],
            "x_csr": [r["x_csr"] for r in m["rounds"]], "us": m["us"], "cpu_s": time.process_time() - t0,
            "load": os.getloadavg()[0], "dispatch": os.environ.get("MKL_CBWR"),
        }))  # fmt: skip
        return 0
    if a.data == "digits":
        tc = R.MODES[a.mode].digits
        data = digits_split(0)
    else:
        mc = R.FULL.mnist  # MNIST runs in --full only
        tc = mc.train
        data = mnist_split(a.n_train or mc.n_train)
    if a.epochs:
        tc = tc.with_(epochs=a.epochs)
    if a.delta_t:
        tc = tc.with_(delta_t=a.delta_t)
    rows = {lab: (m, g) for lab, m, g in R.METHOD_ROWS}
    for seed in seed_list(a.seeds):
        for item in a.runs.split(","):
            lab, _, s = item.partition("@")
            method, gamma = rows[lab]
            t0 = time.process_time()
            r = R.train(tc.with_(method=method, sparsity=float(s), gamma_sal=gamma, seed=seed), data)
            print(json.dumps({
                "data": a.data, "mode": a.mode, "run": lab, "sparsity": float(s), "seed": seed,
                "acc": 100.0 * r.accuracy, "ablated": r.n_ablated, "invariants": r.invariants_ok,
                "cpu_s": time.process_time() - t0, "epochs": tc.epochs, "delta_t": tc.delta_t,
                "load": os.getloadavg()[0],
            }), flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
