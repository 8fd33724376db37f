"""Calibration runs for the accuracy claims (``src/iclr24/drum_rules/calibration.py``), never a recorded run.

For each calibration seed (never an evaluated seed), the three models trained alike on the seed's own synthetic KG
by the claim's own code (``reproduce._train_three``: the QUICK or FULL config, 1 thread, the kernels pinned as in a
claims run), then the filtered MRR of each with ``link_prediction(..., ties="expected")``: what
``docs/calibration.md`` describes, as a script. Prints one JSON line per seed: the MRR of DRUM (``sum``), SMDRUM
(``sm``) and MMDRUM (``mm``) and the CPU seconds of the whole seed (``time.process_time``). The numbers the claims
use are package data, ``src/iclr24/drum_rules/calibration.json``; ``--write`` merges this run into it, ``--measured``
(required with it) replacing the file's provenance line (their help).

    OMP_NUM_THREADS=1 uv run python packages/drum-rules/scripts/calibrate.py --mode quick --seeds 101-116
    OMP_NUM_THREADS=1 uv run python packages/drum-rules/scripts/calibrate.py --mode full --seeds 101-108
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from iclr24.paperkit.cli import parse_with_write
from iclr24.paperkit.cli import seed_list

WRITE_WHAT = (
    "this run (each seed's MRR of DRUM, SMDRUM and MMDRUM, to 4 decimals as the file, in the mode's table, at the "
    "seed's place; --measured replaces the file's 'measured' when any seed is written; left out, said on stderr: "
    "seeds the file does not hold, quick 101-116, full 101-108; not written: the mode's seconds_per_seed, the CPU s "
    "of DRUM and one variant on one seed, a row's cost, as this script times all three models and two link "
    "predictions a seed: edit it with the run's date)"
)


def run_seed(cfg, seed: int) -> dict:
    """One calibration seed: ``{"seed", "mrr": {agg: MRR}, "cpu_s"}``."""
    from iclr24.drum_rules.reproduce import _load_data
    from iclr24.drum_rules.reproduce import _train_three
    from iclr24.drum_rules.train import link_prediction

    t0 = time.process_time()
    data = _load_data(cfg, seed)
    models, _ = _train_three(cfg, data, seed, False)
    mrr = {a: round(link_prediction(m, data, ties="expected")["mrr"], 4) for a, (m, _) in models.items()}
    return {"seed": seed, "mrr": mrr, "cpu_s": round(time.process_time() - t0, 2)}


def merge(table: dict, mode: str, results: list[dict], measured: str, warn=None) -> dict:
    """``table`` (calibration.json's content) with ``results`` (:func:`run_seed`'s, in ``mode``) merged in at their
    seeds (changed in place, and returned), and ``measured`` as the file's provenance line when any seed is;
    everything else kept. ``warn`` is called with what is left out."""
    from iclr24.paperkit.power import merge_by_seed

    warn = warn or (lambda msg: None)
    cal = table[mode]
    new = {agg: [r["mrr"][agg] for r in results] for agg in cal["mrr"]}
    _, cal["mrr"], left_out = merge_by_seed(
        cal["seeds"], cal["mrr"], [r["seed"] for r in results], new, add=False
    )
    for seed in left_out:
        warn(f"{mode}: seed {seed} left out (the file holds seeds {cal['seeds']})")
    if len(left_out) < len(results):  # the file's provenance becomes this run's
        table["measured"] = measured
    return table


def write(mode: str, results: list[dict], path=None, warn=None, *, measured: str):
    """Merge ``results`` into calibration.json (``path``; default: the package's file) through
    ``update_calibration_table``, ``measured`` the file's new provenance line; returns the path written."""
    from iclr24.paperkit.power import calibration_path
    from iclr24.paperkit.power import update_calibration_table

    if not measured.strip():
        raise ValueError("write needs measured, the file's new provenance line")
    warn = warn or (lambda msg: print(f"--write: {msg}", file=sys.stderr))
    return update_calibration_table(
        path or calibration_path("iclr24.drum_rules"),
        lambda table: merge(table, mode, results, measured, warn),
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("quick", "full"), default="quick")
    p.add_argument(
        "--seeds", type=seed_list, default=seed_list("101-116"), help="calibration seeds, e.g. 101-116"
    )
    a = parse_with_write(p, argv, what=WRITE_WHAT)

    from iclr24.paperkit.threads import pin_process_dispatch
    from iclr24.paperkit.threads import pinned_threads

    pin_process_dispatch()
    from iclr24.drum_rules import reproduce

    if set(a.seeds) & set(reproduce.ACCURACY_POOL):
        p.error("calibration seeds must not be evaluated seeds (the pool is 0-99)")
    cfg = {"quick": reproduce.QUICK, "full": reproduce.FULL}[a.mode]
    results = []
    with pinned_threads(1):
        for s in a.seeds:
            results.append({"mode": a.mode, **run_seed(cfg, s)})
            print(json.dumps(results[-1]), flush=True)
    if a.write:
        write(a.mode, results, measured=a.measured)
    return 0


if __name__ == "__main__":
    sys.exit(main())
