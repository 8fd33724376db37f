"""Calibration runs for the claims table (``CLAIMS`` in ``src/iclr24/srigl/reproduce.py``), never the recorded run.

Trains the methods a paired claim compares on calibration seeds (disjoint from the evaluated pool) with one mode's
recipe, as the claim run does (one thread, CPU kernels pinned to AVX2, the same ``train`` call), and prints one
JSON line per run: the test accuracy (%), the ablated hidden neurons and the CPU seconds of the run
(``time.process_time``). ``--speed`` prints the speed claim's per-round ratios instead. The numbers, dated, go into
``docs/calibration.md`` and into the package data file ``src/iclr24/srigl/calibration.json``, which the rows'
``Calibration(...)`` read; ``--write`` merges this run's numbers into that file and ``--measured`` (required with it)
replaces the file's provenance line (see their help).

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

from iclr24.paperkit.cli import parse_with_write
from iclr24.paperkit.cli import seed_list
from iclr24.paperkit.threads import pin_process_dispatch
from iclr24.paperkit.threads import pin_process_threads

pin_process_threads(1)  # what the claim run does, before torch is imported
pin_process_dispatch(True)

WRITE_WHAT = (
    "what this run measured (each run's test accuracy, to 0.01 pp as the file, at its seed in the file's table of "
    "its data and mode: digits_quick, digits_full, or digits_full_95_more for seeds 112-123; mnist_full for --data "
    "mnist; as srigl90/rigl90/srigl95/rigl95/static95 for SRigL g=0.3, RigL and static-uns at 0.9/0.95; --speed: "
    "the 9 rounds' ratios, to 0.001, as the mode's x dense and x CSR rows; --measured replaces the file's "
    "'measured'; not written, refused or left out: other methods and sparsities, seeds the file has no place for, "
    "--epochs/--delta-t/--n-train trials, not the mode's recipe, --rounds other than 9, and the rows' "
    "seconds_per_seed, a row's cost made from several runs' CPU s: kept)"
)
_KEYS = {("SRigL g=0.3", 0.9): "srigl90", ("RigL", 0.9): "rigl90", ("SRigL g=0.3", 0.95): "srigl95",
         ("RigL", 0.95): "rigl95", ("static-uns", 0.95): "static95"}  # fmt: skip


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
    a = parse_with_write(p, argv, what=WRITE_WHAT)
    if a.write and (a.epochs or a.delta_t or a.n_train):
        p.error("--write records the mode's recipe only, not an --epochs/--delta-t/--n-train trial")
    if a.write and a.speed and a.rounds != 9:
        p.error("--write records 9 speed rounds (the file's rounds 100-108)")

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
        rec = {
            "speed": a.mode, "x_dense": [r["x_dense"] for r in m["rounds"]],
            "x_csr": [r["x_csr"] for r in m["rounds"]], "us": m["us"], "cpu_s": time.process_time() - t0,
            "load": os.getloadavg()[0], "dispatch": os.environ.get("MKL_CBWR"),
        }  # fmt: skip
        print(json.dumps(rec))
        if a.write:
            write([rec], measured=a.measured)
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
    records = []
    for seed in seed_list(a.seeds):
        for item in a.runs.split(","):
            lab, _, s = item.partition("@")
            method, gamma = rows[lab]
            t0 = time.process_time()
            r = R.train(tc.with_(method=method, sparsity=float(s), gamma_sal=gamma, seed=seed), data)
            rec = {
                "data": a.data, "mode": a.mode, "run": lab, "sparsity": float(s), "seed": seed,
                "acc": 100.0 * r.accuracy, "ablated": r.n_ablated, "invariants": r.invariants_ok,
                "cpu_s": time.process_time() - t0, "epochs": tc.epochs, "delta_t": tc.delta_t,
                "load": os.getloadavg()[0],
            }  # fmt: skip
            print(json.dumps(rec), flush=True)
            records.append(rec)
    if a.write:
        write(records, measured=a.measured)
    return 0


def _put(seeds: list, row: dict, key: str, seed: int, value: float) -> bool:
    """``row[key]`` (one value per seed of ``seeds``) with ``value`` at ``seed``; False (nothing changed) where the
    row or the seed is not in the file."""
    from iclr24.paperkit.power import merge_by_seed

    if key not in row:
        return False
    _, merged, left_out = merge_by_seed(seeds, {key: row[key]}, [seed], {key: [value]}, add=False)
    row[key] = merged[key]
    return not left_out


def merge(table: dict, records: list[dict], measured: str) -> dict:
    """``table`` (the calibration.json content) with ``records`` (this script's printed lines) merged in (changed in
    place, and returned): each accuracy at its seed's place, each speed measurement as its mode's rows, and, when
    there is a record, ``measured`` as the file's provenance line; everything else kept. Raises ``ValueError`` for
    a record the file has no place for (nothing is written then)."""
    for rec in records:
        if "speed" in rec:
            for key, name in (("x_dense", "dense"), ("x_csr", "csr")):
                if len(rec[key]) != len(table["speed_rounds"]):
                    raise ValueError(
                        f"{len(rec[key])} speed rounds, the file has {len(table['speed_rounds'])}"
                    )
                table["speed"][f"{rec['speed']}_{name}"] = [round(x, 3) for x in rec[key]]
            continue
        key = _KEYS.get((rec["run"], rec["sparsity"]))
        if key is None:
            raise ValueError(f"the file has no row for {rec['run']}@{rec['sparsity']}")
        name = f"{rec['data']}_{'full' if rec['data'] == 'mnist' else rec['mode']}"
        seeds = table["mnist_seeds" if rec["data"] == "mnist" else "seeds"]
        more = table["digits_full_95_more"]
        acc = round(rec["acc"], 2)
        if not _put(seeds, table[name], key, rec["seed"], acc) and not (
            name == "digits_full" and _put(more["seeds"], more, key, rec["seed"], acc)
        ):
            raise ValueError(f"the file has no place for {name} {key} seed {rec['seed']}")
    if records:  # every record has its place: the file's provenance becomes this run's
        table["measured"] = measured
    return table


def write(records: list[dict], path=None, *, measured: str):
    """Merge ``records`` into calibration.json (``path``; default: the package's file) through
    ``update_calibration_table``, ``measured`` the file's new provenance line; returns the path written."""
    from iclr24.paperkit.power import calibration_path
    from iclr24.paperkit.power import update_calibration_table

    if not measured.strip():
        raise ValueError("write needs measured, the file's new provenance line")
    return update_calibration_table(
        path or calibration_path("iclr24.srigl"), lambda table: merge(table, records, measured)
    )


if __name__ == "__main__":
    sys.exit(main())
