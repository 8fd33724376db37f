"""Calibration runs for the claims table of ``reproduce.py`` (not part of any recorded run).

Trains the norms of one task on calibration seeds (never evaluated seeds) with the package's recipe at each given
length, and prints JSON: every (norm, seed)'s test accuracy after the last epoch, and the CPU seconds
(``time.process_time``, one thread) one seed of all the norms costs. A run of E epochs is not a prefix of a longer
one (the cosine schedule spans the whole run), so every length is its own run. What it printed, and when, is in
``docs/calibration.md``.

    OMP_NUM_THREADS=1 uv run python packages/tab-snn/scripts/calibrate.py seq --seeds 110-115 --epochs 12 16 20
    OMP_NUM_THREADS=1 uv run python packages/tab-snn/scripts/calibrate.py mnist --seeds 100-102 --epochs 3 \
        --train 5000
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from iclr24.paperkit.cli import seed_list


def main() -> None:
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
    a = p.parse_args()
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


if __name__ == "__main__":
    main()
