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
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
from torch import nn

from iclr24.paperkit.cli import seed_list


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


def main() -> None:
    torch.set_num_threads(1)
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("sweep")
    s.add_argument("--mode", choices=("quick", "full"), required=True)
    s.add_argument("--seeds", type=seed_list, required=True)
    c = sub.add_parser("cnn")
    c.add_argument("--data", choices=("digits", "mnist"), required=True)
    c.add_argument("--seeds", type=seed_list, required=True)
    c.add_argument("--epochs", type=int, default=20)
    c.add_argument("--every", type=int, default=5)
    c.add_argument("--train", type=int, default=10000)
    c.add_argument("--test", type=int, default=2000)
    k = sub.add_parser("claim")
    k.add_argument("--data", choices=("digits", "mnist"), required=True)
    k.add_argument("--seeds", type=seed_list, required=True)
    a = p.parse_args()
    if a.what == "claim":
        res = claim(a.data, a.seeds)
    elif a.what == "sweep":
        res = sweep(a.mode, a.seeds)
    else:
        res = cnn(a.data, a.seeds, a.epochs, a.every, a.train, a.test)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
