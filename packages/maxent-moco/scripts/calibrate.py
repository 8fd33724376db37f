"""Calibration of the sample-based claims (``reproduce.CLAIMS``): per-seed mean policy error of MoCoDyna(d=2) and of
the best of Q-learning, Dyna and OS-Dyna on calibration seeds (never evaluated), with CPU seconds per seed, printed
as JSON; docs/calibration.md records what they gave. Not part of the recorded run.

    uv run python packages/maxent-moco/scripts/calibrate.py --lam 0.1 --steps 50000 --seeds 200-207
    uv run python packages/maxent-moco/scripts/calibrate.py --lam 0.1 --steps 150000 --seeds 200-201 --full-arms
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from iclr24.maxent_moco.reproduce import BASELINES
from iclr24.maxent_moco.reproduce import CALIBRATION_SEEDS
from iclr24.maxent_moco.reproduce import POOL
from iclr24.maxent_moco.reproduce import SampleConfig
from iclr24.maxent_moco.reproduce import _sample_group
from iclr24.paperkit.cli import seed_list


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lam", type=float, action="append", required=True)
    p.add_argument("--steps", type=int, default=30_000)
    p.add_argument("--seeds", default=f"{CALIBRATION_SEEDS[0]}-{CALIBRATION_SEEDS[-1]}")
    p.add_argument(
        "--full-arms", action="store_true", help="--full's arms too (d = 1, 2, 3 and the two variants)"
    )
    a = p.parse_args()
    seeds = seed_list(a.seeds)
    if set(seeds) & set(POOL):
        raise SystemExit(f"seeds {sorted(set(seeds) & set(POOL))} are evaluated seeds (POOL)")
    cfg = SampleConfig(
        lams=tuple(a.lam), ds=(1, 2, 3) if a.full_arms else (2,), n_steps=a.steps, ablations=a.full_arms
    )
    t0 = time.process_time()
    runs = _sample_group(cfg, {lam: seeds for lam in cfg.lams}, a.steps, show=False)
    cpu = time.process_time() - t0
    for lam in cfg.lams:
        per_seed = {k: v.mean(axis=1) for k, v in runs["errors"][lam].items()}
        best = np.min([per_seed[k] for k in BASELINES], axis=0)
        print(json.dumps({
            "lam": lam, "steps": a.steps, "seeds": seeds, "ours": per_seed["MoCoDyna(d=2)"].tolist(),
            "baseline": best.tolist(), "best_baseline": [BASELINES[i] for i in np.argmin([per_seed[k] for k in BASELINES], 0)],
            "cpu_seconds_per_seed_all_lams": cpu / len(seeds),
        }))  # fmt: skip


if __name__ == "__main__":
    main()
