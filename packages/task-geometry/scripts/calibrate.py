"""Calibration runs for the claims table of ``reproduce.py`` (not part of any recorded run).

Prints JSON: per-seed Tanh and ReLU values of every gated metric on calibration seeds (never evaluated seeds), and
the CPU seconds (``time.process_time``, one thread) each seed costs. What it printed, and when, is in
``docs/calibration.md``.

    OMP_NUM_THREADS=1 uv run python packages/task-geometry/scripts/calibrate.py sweep --mode quick --seeds 100-104
    OMP_NUM_THREADS=1 uv run python packages/task-geometry/scripts/calibrate.py cnn --data digits --seeds 100-105
    OMP_NUM_THREADS=1 uv run python packages/task-geometry/scripts/calibrate.py cnn --data mnist --seeds 100-102 \
        --epochs 10 --every 2
    OMP_NUM_THREADS=1 uv run python packages/task-geometry/scripts/calibrate.py claim --data mnist --seeds 109-120

``claim`` runs the claim's own path (``train_cnn`` and ``measure_cnn`` at the full recipe, as ``reproduce`` does)
and times each seed whole (both nonlinearities, training and measuring), the per-seed cost the power plan uses.

With ``--write`` (after the subcommand) a run also merges its per-seed values into the package's
``calibration.json``, the table ``reproduce.py`` reads, and ``--measured`` (required with it) replaces the file's
provenance string of what it wrote (what maps and what does not: ``--help`` of each subcommand):

    OMP_NUM_THREADS=1 uv run python packages/task-geometry/scripts/calibrate.py sweep --mode full --seeds 100-105 \
        --write --measured "2026-12-08, commit abc1234 + scripts/calibrate.py, 1 thread, load 1-2"
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from iclr24.paperkit.cli import parse_with_write
from iclr24.paperkit.cli import seed_list
from iclr24.paperkit.power import CALIBRATION_FILE
from iclr24.paperkit.power import calibration_path
from iclr24.paperkit.power import merge_by_seed
from iclr24.paperkit.power import update_calibration_table

_STRINGS = (
    "--measured replaces the provenance string of what it writes: mnist's own 'measured' for MNIST seeds 109-120, "
    "the file's 'measured' for any other seed and row, both when both"
)
WRITE_WHAT = {
    "sweep": "this run as its mode's sweep[MODE] values (each seed run replaces or adds its Tanh and ReLU values of "
    "the (cell, metric) pairs the file holds, the gated ones, the run's other metrics not written, other seeds kept; "
    "the mode's cpu_seconds becomes this run's cpu_seconds_per_seed; --measured replaces the file's 'measured')",
    "claim": "this run as the digits or mnist row (each seed run replaces or adds its Tanh and ReLU CKA, other "
    "seeds kept; digits' cpu_seconds becomes this run's cpu_seconds_per_seed; not written: MNIST's cpu_seconds, the "
    f"row's cost inside the idle full record of 2026-12-03, not a calibrate.py timing; {_STRINGS})",
    "cnn": "this run's CKA at the recipe's epochs (digits 20, MNIST 2 on the first 10,000 / 2,000 images: the run "
    "must measure that epoch) as the digits or mnist row (seed by seed, other seeds kept; not written: the CPU "
    f"seconds, this run's are per epoch, `claim` measures a seed's; {_STRINGS})",
}
# the MNIST seeds mnist's own 'measured' describes (the claim's second calibration); 'measured' all the others
MNIST_OWN_SEEDS = range(109, 121)


def merge_calibration(table: dict, out: dict, measured: str) -> None:
    """Merge the per-seed values of ``out`` (this script's JSON of a ``sweep``, ``claim`` or ``cnn`` run) into
    ``table`` (calibration.json's object), in place, as ``--write`` says, and set the provenance strings of what
    it merged to ``measured`` (mnist's own for MNIST seeds 109-120, the file's for any other); raises
    ``ValueError`` for what does not map onto the file."""
    from iclr24.task_geometry.reproduce import FULL

    if "mode" in out:  # sweep
        block = table["sweep"][out["mode"]]
        old = {(key, act): v[act] for key, v in block["values"].items() for act in ("tanh", "relu")}
        new = {}
        for key, act in old:
            cell, metric = key.rsplit(",", 1)
            new[(key, act)] = out["cells"][cell][metric][act]
        block["seeds"], lists, _ = merge_by_seed(block["seeds"], old, out["seeds"], new)
        for (key, act), v in lists.items():
            block["values"][key][act] = v
        block["cpu_seconds"] = out["cpu_seconds_per_seed"]
        table["measured"] = measured
        return
    row = table[out["data"]]
    if "epochs" in out:  # claim
        cka = out["cka_y"]
    else:  # cnn
        epochs = FULL.mnist_epochs if out["data"] == "mnist" else FULL.digits_epochs
        if str(epochs) not in out["cka_y"]:
            raise ValueError(
                f"the run did not measure epoch {epochs}, the recipe's, which {CALIBRATION_FILE} holds"
            )
        if out["data"] == "mnist" and (out["train"], out["test"]) != (FULL.mnist_train, FULL.mnist_test):
            raise ValueError(
                f"{CALIBRATION_FILE} holds MNIST on {FULL.mnist_train} / {FULL.mnist_test} images"
            )
        cka = out["cka_y"][str(epochs)]
    row["seeds"], lists, _ = merge_by_seed(
        row["seeds"], {"tanh": row["tanh"], "relu": row["relu"]}, out["seeds"], cka
    )
    row.update(lists)
    if "epochs" in out and out["data"] == "digits":
        row["cpu_seconds"] = out["cpu_seconds_per_seed"]
    for seed in out["seeds"]:
        (row if out["data"] == "mnist" and seed in MNIST_OWN_SEEDS else table)["measured"] = measured


def write_calibration(out: dict, path: str | Path, measured: str) -> Path:
    """Merge ``out`` into the calibration file at ``path`` (:func:`merge_calibration`, ``measured`` the new
    provenance line), atomically."""
    if not measured.strip():
        raise ValueError("write_calibration needs measured, the file's new provenance line")
    return update_calibration_table(path, lambda table: merge_calibration(table, out, measured))


def sweep(mode: str, seeds: list[int]) -> dict:
    from dataclasses import replace

    from iclr24.task_geometry.experiments import run_sweep
    from iclr24.task_geometry.reproduce import _GATED
    from iclr24.task_geometry.reproduce import FULL
    from iclr24.task_geometry.reproduce import QUICK

    base = {"quick": QUICK, "full": FULL}[mode].sweep
    out: dict = {"mode": mode, "seeds": seeds, "cells": {}}
    total = 0.0
    for seed in seeds:  # one seed at a time: the CPU seconds per seed
        t0 = time.process_time()
        rows = run_sweep(replace(base, cells=_GATED, seeds=(seed,)), show_progress=False)
        total += time.process_time() - t0
        for r in rows:
            cell = out["cells"].setdefault(f"k={r['k']},a={r['a']:g}", {})
            for m in ("cka_x", "cka_y", "ps", "ccgp"):
                cell.setdefault(m, {}).setdefault(r["act"], []).append(round(float(r[m]), 5))
    out["cpu_seconds_per_seed"] = round(total / len(seeds), 2)
    return out


def _data(name: str, train: int, test: int):
    if name == "mnist":
        from iclr24.paperkit.data import load_mnist

        d = load_mnist()
        (xtr, ytr), (xte, yte) = d["train"], d["test"]
        return xtr[:train], ytr[:train], xte[:test], yte[:test], 28
    from iclr24.task_geometry.reproduce import _digits_split

    return (*_digits_split(), 8)


def cnn(name: str, seeds: list[int], epochs: int, every: int, train: int, test: int) -> dict:
    """Train Tanh and ReLU CNNs (the loop of ``train_cnn``, with the same random draws) and measure the target
    alignment after every ``every`` epochs."""
    from iclr24.task_geometry.cnn import SmallCNN
    from iclr24.task_geometry.cnn import _images
    from iclr24.task_geometry.cnn import digit_dichotomies
    from iclr24.task_geometry.cnn import measure_cnn

    xtr, ytr, xte, yte, side = _data(name, train, test)
    T = digit_dichotomies()
    X = _images(xtr, 1, side)
    Y = torch.as_tensor(T.astype(np.float32)[np.asarray(ytr)])
    out: dict = {"data": name, "seeds": seeds, "train": len(ytr), "test": len(yte), "cka_y": {}, "acc": {}}
    cpu = {"train": 0.0, "measure_final": 0.0}
    for seed in seeds:
        for act in ("tanh", "relu"):
            torch.manual_seed(seed)
            model = SmallCNN(T.shape[1], act=act, side=side)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            g = torch.Generator().manual_seed(seed)
            loss_fn = nn.BCEWithLogitsLoss()
            for ep in range(1, epochs + 1):
                t0 = time.process_time()
                perm = torch.randperm(X.shape[0], generator=g)
                for start in range(0, X.shape[0], 64):
                    idx = perm[start : start + 64]
                    loss = loss_fn(model(X[idx]), Y[idx])
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                cpu["train"] += time.process_time() - t0
                if ep % every == 0 or ep == epochs:
                    model.eval()
                    t0 = time.process_time()
                    geo, acc = measure_cnn(model, xte, yte, T, seed=seed)
                    if ep == epochs:
                        cpu["measure_final"] += time.process_time() - t0
                    model.train()
                    out["cka_y"].setdefault(str(ep), {}).setdefault(act, []).append(round(geo.cka_target, 5))
                    out["acc"].setdefault(str(ep), {}).setdefault(act, []).append(round(acc, 4))
    n = len(seeds)
    out["cpu_seconds_per_seed_per_epoch"] = round(cpu["train"] / n / epochs, 2)
    out["cpu_seconds_per_seed_measure"] = round(cpu["measure_final"] / n, 2)
    return out


def claim(name: str, seeds: list[int]) -> dict:
    """The CNN claim's per-seed values and CPU seconds, through the same calls as ``reproduce._cnn_claim``."""
    from iclr24.task_geometry.cnn import digit_dichotomies
    from iclr24.task_geometry.cnn import measure_cnn
    from iclr24.task_geometry.cnn import train_cnn
    from iclr24.task_geometry.reproduce import FULL

    train, test = (FULL.mnist_train, FULL.mnist_test) if name == "mnist" else (0, 0)
    xtr, ytr, xte, yte, side = _data(name, train, test)
    epochs = FULL.mnist_epochs if name == "mnist" else FULL.digits_epochs
    T = digit_dichotomies()
    out: dict = {"data": name, "seeds": seeds, "epochs": epochs, "cka_y": {"tanh": [], "relu": []},
                 "acc": {"tanh": [], "relu": []}, "cpu_seconds": []}  # fmt: skip
    for seed in seeds:
        t0 = time.process_time()
        for act in ("tanh", "relu"):
            model = train_cnn(xtr, ytr, T, act=act, epochs=epochs, side=side, seed=seed)
            geo, acc = measure_cnn(model, xte, yte, T, seed=seed)
            out["cka_y"][act].append(round(float(geo.cka_target), 4))
            out["acc"][act].append(round(float(acc), 4))
        out["cpu_seconds"].append(round(time.process_time() - t0, 2))
    out["cpu_seconds_per_seed"] = round(sum(out["cpu_seconds"]) / len(seeds), 2)
    return out


def _calibration_arg() -> argparse.ArgumentParser:
    w = argparse.ArgumentParser(add_help=False)
    w.add_argument("--calibration", type=Path, default=None, help="the file --write merges into")
    return w


def main(argv: list[str] | None = None) -> None:
    torch.set_num_threads(1)
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("sweep", parents=[_calibration_arg()])
    s.add_argument("--mode", choices=("quick", "full"), required=True)
    s.add_argument("--seeds", type=seed_list, required=True)
    c = sub.add_parser("cnn", parents=[_calibration_arg()])
    c.add_argument("--data", choices=("digits", "mnist"), required=True)
    c.add_argument("--seeds", type=seed_list, required=True)
    c.add_argument("--epochs", type=int, default=20)
    c.add_argument("--every", type=int, default=5)
    c.add_argument("--train", type=int, default=10000)
    c.add_argument("--test", type=int, default=2000)
    k = sub.add_parser("claim", parents=[_calibration_arg()])
    k.add_argument("--data", choices=("digits", "mnist"), required=True)
    k.add_argument("--seeds", type=seed_list, required=True)
    a = parse_with_write(p, argv, what=WRITE_WHAT, commands={"sweep": s, "cnn": c, "claim": k})
    if a.write and a.what == "cnn":
        from iclr24.task_geometry.reproduce import FULL

        epochs = FULL.mnist_epochs if a.data == "mnist" else FULL.digits_epochs
        if a.epochs < epochs or (epochs % a.every and epochs != a.epochs):
            p.error(
                f"--write: {CALIBRATION_FILE} holds the CKA at epoch {epochs}, which this run does not measure"
            )
        if a.data == "mnist" and (a.train, a.test) != (FULL.mnist_train, FULL.mnist_test):
            p.error(
                f"--write: {CALIBRATION_FILE} holds MNIST on {FULL.mnist_train} / {FULL.mnist_test} images"
            )
    if a.what == "claim":
        res = claim(a.data, a.seeds)
    elif a.what == "sweep":
        res = sweep(a.mode, a.seeds)
    else:
        res = cnn(a.data, a.seeds, a.epochs, a.every, a.train, a.test)
    print(json.dumps(res))
    if a.write:
        path = write_calibration(res, a.calibration or calibration_path("iclr24.task_geometry"), a.measured)
        print(f"merged into {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
