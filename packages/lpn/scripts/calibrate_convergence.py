"""Calibration of the iteration at which the PnP-PGD convergence claims are gated (``claims_table.py``).

On calibration seeds only (never the evaluated ones): the digits config of each mode (DIGITS_QUICK on seeds 101, 102,
103; DIGITS_FULL on 101, 102), and the shipped calibration checkpoint ``conv-lpn28-h64-s101`` on 20 calibration
images (validation images 5000-5019, mask seed 101). Each runs PnP-PGD (step 0.5, no clip) for ``--iters`` iterations
and prints the first iteration from which ||x_{k+1} - x_k|| stays below 1e-4 and the PSNR at iterations 20, 100,
that one and the last. The gate is that iteration's maximum over the calibration runs times 1.25, rounded up to a
multiple of 50. One thread.

    OMP_NUM_THREADS=1 uv run python packages/lpn/scripts/calibrate_convergence.py [--only digits-quick ...]
"""

import argparse
import json
import math
import time
from dataclasses import replace

import torch

from iclr24.lpn.data import psnr
from iclr24.lpn.experiments import pnp_convergence_iteration
from iclr24.lpn.experiments import run_digits
from iclr24.lpn.pnp import inpainting_operator
from iclr24.lpn.pnp import pnp_pgd
from iclr24.lpn.reproduce import DIGITS_FULL
from iclr24.lpn.reproduce import DIGITS_QUICK


def gate(crossings: list) -> int | None:
    if not crossings or any(c is None for c in crossings):
        return None
    return int(math.ceil(1.25 * max(crossings) / 50) * 50)


def summary(name: str, norms: list[float], curve: list[float]) -> dict:
    k = pnp_convergence_iteration(norms)
    at = {n: curve[n - 1] for n in (20, 100, len(curve)) if n <= len(curve)}
    if k is not None:
        at[k] = curve[k - 1]
    row = {"run": name, "below_1e-4_from": k, "norm_at_100": norms[min(99, len(norms) - 1)],
           "norm_last": norms[-1], "psnr_at": {str(i): round(v, 3) for i, v in sorted(at.items())}}  # fmt: skip
    print(json.dumps(row), flush=True)
    return row


def digits(cfg, seeds, iters):
    rows = []
    for s in seeds:
        t0 = time.process_time()
        d = run_digits(replace(cfg, seed=s, converge_iters_long=iters), studies=True)
        rows.append(
            summary(f"digits seed {s}", d["pnp_step_norms"] + d["pnp_tail_step_norms"], d["pnp_psnr_curve"])
        )
        print(f"  ({time.process_time() - t0:.0f} CPU s)", flush=True)
    return rows


def mnist(iters):
    from iclr24.lpn.train import load_model
    from iclr24.paperkit.data.mnist import load_mnist
    from iclr24.paperkit.shipped import checkpoints_dir

    model = load_model(checkpoints_dir("iclr24.lpn") / "conv-lpn28-h64-s101")
    xs = torch.as_tensor(load_mnist()["val"][0]).reshape(-1, 1, 28, 28)[5000:5020]
    op = inpainting_operator((1, 28, 28), missing=0.4, seed=101)
    y = op.A(xs)
    curve: list[float] = []
    res = pnp_pgd(y, op.A, op.At, model, step=0.5, num_iter=iters, clip=None,
                  callback=lambda k, x: curve.append(float(psnr(x, xs).mean())))  # fmt: skip
    return [summary("mnist conv-lpn28-h64-s101 inpainting", res.step_norms, curve)]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--only", nargs="+", default=["digits-quick", "digits-full", "mnist"])
    p.add_argument("--iters", type=int, default=1500)
    a = p.parse_args()
    torch.set_num_threads(1)
    jobs = {
        "digits-quick": lambda: digits(DIGITS_QUICK, (101, 102, 103), a.iters),
        "digits-full": lambda: digits(DIGITS_FULL, (101, 102), a.iters),
        "mnist": lambda: mnist(a.iters),
    }
    for name in a.only:
        rows = jobs[name]()
        print(f"{name}: gate {gate([r['below_1e-4_from'] for r in rows])}", flush=True)


if __name__ == "__main__":
    main()
