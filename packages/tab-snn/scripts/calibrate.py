"""Calibration runs for the claims table of ``reproduce.py`` (not part of any recorded run).

Trains the norms of one task on calibration seeds (never evaluated seeds) with the package's recipe at each given
length, and prints JSON: every (norm, seed)'s test accuracy after the last epoch, and the CPU seconds
(``time.process_time``, one thread) one seed of all the norms costs. A run of E epochs is not a prefix of a longer
one (the cosine schedule spans the whole run), so every length is its own run. What it printed, and when, is in
``docs/calibration.md``; the numbers the claims use are package data, ``src/iclr24/tab_snn/calibration.json``, into
which ``--write`` merges this run, ``--measured`` (required with it) replacing the file's provenance line (see
their help).

    OMP_NUM_THREADS=1 uv run python packages/tab-snn/scripts/calibrate.py seq --seeds 110-115 --epochs 12 16 20
    OMP_NUM_THREADS=1 uv run python packages/tab-snn/scripts/calibrate.py mnist --seeds 100-102 --epochs 3 \
        --train 5000
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from iclr24.paperkit.cli import parse_with_write
from iclr24.paperkit.cli import seed_list

WRITE_WHAT = (
    "this run (seq: each (norm, seed)'s accuracy at its length, a length new to the file only when the run has the "
    "file's seeds 110-123 and all five norms, and at quick's/full's 20 epochs the CPU s per seed, to 0.1 s, as "
    "quick's, norms tdbn tebn tab, or full's, all five; mnist: at full's recipe only, 5 epochs, --train 10000, "
    "--test 2000, TAB's and tdBN's accuracy per seed and the CPU s per seed; --measured replaces the file's "
    "'measured' when anything is written; left out, said on stderr: seeds the file has no place for, seq: 110-123, "
    "mnist: 100-105, TEBN's MNIST accuracy and other norms' seconds; refused: static, the file holds no "
    "static-digits numbers, and mnist at another recipe)"
)


def _merge_row(seeds: list, row: dict, key: str, new_seeds: list, values: list, warn, what: str) -> bool:
    """``row[key]`` (one value per seed of ``seeds``) with ``values`` (per seed of ``new_seeds``) merged in; a seed
    the file does not hold is left out, ``warn``-ed as ``what``'s. Whether any seed was merged."""
    from iclr24.paperkit.power import merge_by_seed

    _, merged, left_out = merge_by_seed(seeds, {key: row[key]}, new_seeds, {key: values}, add=False)
    row[key] = merged[key]
    for s in left_out:
        warn(f"seed {s} left out: the file's {what} seeds are {seeds}")
    return len(left_out) < len(new_seeds)


def merge(table: dict, out: dict, measured: str, train: int = 10_000, test: int = 2_000, warn=None) -> dict:
    """``table`` (calibration.json's content) with ``out`` (what :func:`main` prints) merged in (changed in place,
    and returned), and ``measured`` as the file's provenance line when anything of it is; raises ``ValueError``
    for a run the file holds nothing of. ``warn`` is called with what is left out."""
    from iclr24.tab_snn.reproduce import FULL
    from iclr24.tab_snn.reproduce import NORMS_ORDER
    from iclr24.tab_snn.reproduce import QUICK

    warn = warn or (lambda msg: None)
    seeds, norms = out["seeds"], out["norms"]
    wrote = False
    if out["task"] == "seq":
        cal = table["seq"]
        for epochs, acc in out["acc"].items():
            if epochs not in cal["acc"]:
                if seeds != cal["seeds"] or set(norms) != set(NORMS_ORDER):
                    raise ValueError(
                        f"a new length ({epochs} epochs) needs seeds {cal['seeds']} and all five norms"
                    )
                cal["acc"][epochs] = {n: [None] * len(seeds) for n in NORMS_ORDER}
            for n in norms:
                wrote |= _merge_row(cal["seeds"], cal["acc"][epochs], n, seeds, acc[n], warn, "seq")
            if int(epochs) == QUICK.seq_epochs == FULL.seq_epochs:
                mode = {frozenset(NORMS_ORDER): "full", frozenset(("tdbn", "tebn", "tab")): "quick"}.get(
                    frozenset(norms)
                )
                if mode:
                    table["seq_seconds_per_seed"][mode] = round(out["cpu_seconds_per_seed"][epochs], 1)
                    wrote = True
                else:
                    warn(f"CPU seconds of norms {norms} left out (quick trains tdbn tebn tab, full all five)")
    elif out["task"] == "mnist":
        if list(out["acc"]) != [str(FULL.mnist_epochs)] or (train, test) != (
            FULL.mnist_train,
            FULL.mnist_test,
        ):
            raise ValueError(
                f"the file holds MNIST at full's recipe only: {FULL.mnist_epochs} epochs, --train "
                f"{FULL.mnist_train}, --test {FULL.mnist_test}"
            )
        cal, (epochs, acc) = table["mnist"], next(iter(out["acc"].items()))
        for n in ("tab", "tdbn"):
            if n not in acc:
                raise ValueError(f"the MNIST row needs {n}")
            _merge_row(cal["seeds"], cal, n, seeds, acc[n], warn, "MNIST")
        cal["seconds_per_seed"] = round(out["cpu_seconds_per_seed"][epochs], 1)
        wrote = True
        if set(acc) - {"tab", "tdbn"}:
            warn(
                f"MNIST accuracy of {sorted(set(acc) - {'tab', 'tdbn'})} left out (the file holds TAB and tdBN)"
            )
    else:
        raise ValueError(f"the file holds no {out['task']} numbers")
    for epochs, acc in table["seq"]["acc"].items():
        if any(v is None for row in acc.values() for v in row):
            raise ValueError(f"{epochs} epochs: not every seed measured")
    if wrote:  # the file's provenance becomes this run's
        table["measured"] = measured
    return table


def write(out: dict, path=None, *, measured: str, **kw):
    """Merge ``out`` into calibration.json (``path``; default: the package's file) through
    ``update_calibration_table``, ``measured`` the file's new provenance line; returns the path written."""
    from iclr24.paperkit.power import calibration_path
    from iclr24.paperkit.power import update_calibration_table

    if not measured.strip():
        raise ValueError("write needs measured, the file's new provenance line")
    warn = kw.pop("warn", lambda msg: print(f"--write: {msg}", file=sys.stderr))
    return update_calibration_table(
        path or calibration_path("iclr24.tab_snn"), lambda table: merge(table, out, measured, warn=warn, **kw)
    )


def main(argv: list[str] | None = None) -> None:
    from iclr24.tab_snn.data import seq_digits
    from iclr24.tab_snn.data import seq_mnist
    from iclr24.tab_snn.data import static_digits
    from iclr24.tab_snn.packed import train_packed
    from iclr24.tab_snn.reproduce import FULL
    from iclr24.tab_snn.reproduce import NORMS_ORDER
    from iclr24.tab_snn.train import TrainConfig

    torch.set_num_threads(1)
    p = argparse.ArgumentParser()
    p.add_argument("task", choices=("seq", "static", "mnist"))
    p.add_argument("--seeds", type=seed_list, required=True)
    p.add_argument("--epochs", type=int, nargs="+", required=True)
    p.add_argument("--norms", nargs="+", default=None)
    p.add_argument("--train", type=int, default=5000, help="MNIST training images")
    p.add_argument("--test", type=int, default=2000, help="MNIST test images")
    a = parse_with_write(p, argv, what=WRITE_WHAT)
    if a.write and a.task == "static":
        p.error("--write: the calibration file holds no static-digits numbers")
    if a.write and a.task == "mnist" and (a.epochs, a.train, a.test) != ([FULL.mnist_epochs], FULL.mnist_train,
                                                                     FULL.mnist_test):  # fmt: skip
        p.error("--write: the calibration file holds MNIST at full's recipe only (--epochs 5 --train 10000)")
    if a.task == "seq":
        data, norms = seq_digits(), a.norms or list(NORMS_ORDER)
    elif a.task == "static":
        data, norms = static_digits(FULL.static_T), a.norms or list(NORMS_ORDER)
    else:
        data, norms = seq_mnist(n_train=a.train, n_test=a.test), a.norms or ["tdbn", "tebn", "tab"]
    out: dict = {"task": a.task, "seeds": a.seeds, "norms": norms, "acc": {}, "cpu_seconds_per_seed": {}}
    for epochs in a.epochs:
        tc = TrainConfig(epochs=epochs, batch_size=FULL.batch_size, lr=FULL.lr)
        t0 = time.process_time()
        res = train_packed(data, norms, a.seeds, tc, hidden=FULL.hidden, progress=False)
        out["cpu_seconds_per_seed"][str(epochs)] = round((time.process_time() - t0) / len(a.seeds), 2)
        out["acc"][str(epochs)] = {n: [round(res[(n, s)].test_acc, 3) for s in a.seeds] for n in norms}
    print(json.dumps(out))
    if a.write:
        write(out, measured=a.measured, train=a.train, test=a.test)


if __name__ == "__main__":
    main()
