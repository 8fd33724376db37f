"""Calibration of the sample-based claims (``reproduce.CLAIMS``): per-seed mean policy error of MoCoDyna(d=2) and of
the best of Q-learning, Dyna and OS-Dyna on calibration seeds (never evaluated), with CPU seconds per seed, printed
as JSON; docs/calibration.md records what they gave. Not part of the recorded run.

    uv run python packages/maxent-moco/scripts/calibrate.py --lam 0.1 --steps 50000 --seeds 200-207
    uv run python packages/maxent-moco/scripts/calibrate.py --lam 0.1 --steps 150000 --seeds 200-201 --full-arms

``--write`` also merges what the run measured into the package's calibration.json (see ``--help``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from iclr24.maxent_moco.reproduce import BASELINES
from iclr24.maxent_moco.reproduce import CALIBRATION_SEEDS
from iclr24.maxent_moco.reproduce import FULL
from iclr24.maxent_moco.reproduce import POOL
from iclr24.maxent_moco.reproduce import QUICK
from iclr24.maxent_moco.reproduce import SampleConfig
from iclr24.maxent_moco.reproduce import _sample_group
from iclr24.paperkit.cli import parse_with_write
from iclr24.paperkit.cli import seed_list
from iclr24.paperkit.power import CALIBRATION_FILE
from iclr24.paperkit.power import calibration_path
from iclr24.paperkit.power import merge_by_seed
from iclr24.paperkit.power import update_calibration_table

CALIBRATION_JSON = calibration_path("iclr24.maxent_moco")
WRITE_HELP = f"""--write merges what the run measured into {CALIBRATION_FILE} (the package data the rows'
Calibrations read), for each lambda into the row of the mode that runs it on --steps samples (quick: 30k, lambda 0.1 on 100k; full:
150k): the per-seed ours and baseline of the seeds run (the row's other seeds kept), and the CPU s per (seed,
lambda) only when the run's arms are that mode's (quick: d = 2 alone, no --full-arms; full: --full-arms). Not
written: a lambda or sample count no row uses; the CPU s of a run whose arms are not its mode's (full's rows take
theirs from a --full-arms run, which may cover fewer seeds); the file's note. --measured (required with --write)
replaces the file's one provenance line, so it names the runs of the numbers kept too."""
_ARMS = {"quick": QUICK[1], "full": FULL[1]}  # each mode's sample-based config


def write_calibration(
    path: str | Path, results: list[dict], cfg: SampleConfig, cpu_per_seed_lambda: float, measured: str
) -> list[str]:
    """Merge the printed ``results`` of one run of ``cfg`` into the calibration file at ``path``; returns what went
    where (and what did not map)."""
    said = []

    def merge(table: dict) -> None:
        unmapped = []
        for res in results:
            lam, steps = res["lam"], res["steps"]
            mode = next((m for m, c in _ARMS.items() if c.steps(lam) == steps), None)
            row = table["rows"][mode].get(str(lam)) if mode else None
            if row is None:
                said.append(f"lambda {lam} at {steps} samples: no row runs it, not written")
                unmapped.append(lam)
                continue
            row["seeds"], cols, _ = merge_by_seed(
                row["seeds"],
                {"ours": row["ours"], "baseline": row["baseline"]},
                res["seeds"],
                {"ours": res["ours"], "baseline": res["baseline"]},
            )
            row.update(cols)
            if (cfg.ds, cfg.ablations) == (_ARMS[mode].ds, _ARMS[mode].ablations):
                row["cpu_seconds_per_seed"] = round(cpu_per_seed_lambda, 2)
                what = "per-seed values and CPU s"
            else:
                what = f"per-seed values (CPU s kept: these are not {mode}'s arms)"
            said.append(f"lambda {lam} at {steps} samples -> {mode} row: {what}, seeds {res['seeds']}")
        if len(said) > len(unmapped):  # something maps: the file's provenance becomes this run's
            table["measured"] = measured

    update_calibration_table(path, merge)  # a table left as it was is not written
    return said


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=WRITE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--lam", type=float, action="append", required=True)
    p.add_argument("--steps", type=int, default=30_000)
    p.add_argument("--seeds", default=f"{CALIBRATION_SEEDS[0]}-{CALIBRATION_SEEDS[-1]}")
    p.add_argument(
        "--full-arms", action="store_true", help="--full's arms too (d = 1, 2, 3 and the two variants)"
    )
    a = parse_with_write(p)
    seeds = seed_list(a.seeds)
    if set(seeds) & set(POOL):
        raise SystemExit(f"seeds {sorted(set(seeds) & set(POOL))} are evaluated seeds (POOL)")
    cfg = SampleConfig(
        lams=tuple(a.lam), ds=(1, 2, 3) if a.full_arms else (2,), n_steps=a.steps, ablations=a.full_arms
    )
    t0 = time.process_time()
    runs = _sample_group(cfg, {lam: seeds for lam in cfg.lams}, a.steps, show=False)
    cpu = time.process_time() - t0
    results = []
    for lam in cfg.lams:
        per_seed = {k: v.mean(axis=1) for k, v in runs["errors"][lam].items()}
        best = np.min([per_seed[k] for k in BASELINES], axis=0)
        results.append({
            "lam": lam, "steps": a.steps, "seeds": seeds, "ours": per_seed["MoCoDyna(d=2)"].tolist(),
            "baseline": best.tolist(), "best_baseline": [BASELINES[i] for i in np.argmin([per_seed[k] for k in BASELINES], 0)],
            "cpu_seconds_per_seed_all_lams": cpu / len(seeds),
        })  # fmt: skip
        print(json.dumps(results[-1]))
    if a.write:
        cpu_per_seed_lambda = cpu / len(seeds) / len(cfg.lams)
        print("\n".join(write_calibration(CALIBRATION_JSON, results, cfg, cpu_per_seed_lambda, a.measured)))


if __name__ == "__main__":
    main()
