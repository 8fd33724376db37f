"""Calibration behind the shipped poly_mnist checkpoints (README, "Shipped checkpoints"): how many Adam steps the
CPU-scale CMVAE needs on poly_mnist (real MNIST, 28x28, 3 modalities) before its shared latent is used and its
clusters follow the digits. Calibration seed only (100; the checkpoints use seeds 0, 1, 2). Trains the model of the
shipped commands once and prints one JSON line per evaluation (every ``--every`` epochs): test ACC of the official
sampled assignment at K_max, of q(c|z) at the posterior means (diagnostic), and of KMeans(10) on the mean of the
unimodal posterior means, with the epoch's loss and the CPU seconds so far.

    OMP_NUM_THREADS=1 nice -n 5 uv run --locked python packages/cmvae/scripts/mnist_calibration.py --seed 100
"""

from __future__ import annotations

import argparse
import json
import resource

import torch

from iclr24.cmvae.data import poly_mnist
from iclr24.cmvae.metrics import clustering_scores
from iclr24.cmvae.model import build_mlp_model
from iclr24.cmvae.train import fit


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=100)
    p.add_argument("--epochs", type=int, default=64)
    p.add_argument("--every", type=int, default=8)
    p.add_argument("--n-train", type=int, default=6000)
    p.add_argument("--mmvae", action="store_true", help="calibrate the MMVAE+ baseline instead")
    a = p.parse_args()
    torch.set_num_threads(1)
    from sklearn.cluster import KMeans

    data = poly_mnist(None, a.n_train, 1000, 3, seed=a.seed)
    xs, xt, y = data.tensors("train"), data.tensors("test"), data.test_labels
    torch.manual_seed(a.seed)
    model = build_mlp_model(data.input_dims, hidden=(128, 128), likelihood="normal", likelihood_scale=0.1,
                            beta=1.0, n_clusters_max=20, clustered=not a.mmvae)  # fmt: skip
    spe = -(-a.n_train // 128)
    t0 = _cpu()

    def on_step(step, metrics):
        if "epoch_loss" not in metrics or (metrics["epoch"] + 1) % a.every:
            return
        with torch.no_grad():
            z = model.encode(xt).numpy()
            row = {"epoch": metrics["epoch"] + 1, "step": step, "loss": round(metrics["epoch_loss"], 2),
                   "cpu_s": round(_cpu() - t0, 1),
                   "kmeans_latent": round(100 * clustering_scores(
                       y, KMeans(10, n_init=10, random_state=0).fit(z).predict(z))["acc"], 1)}  # fmt: skip
            if not a.mmvae:
                row["sampled"] = round(
                    100 * clustering_scores(y, model.predict_clusters(xt).clusters)["acc"], 1
                )
                row["at_means"] = round(
                    100 * clustering_scores(y, model.predict_clusters(xt, at_means=True).clusters)["acc"], 1
                )
        print(json.dumps(row), flush=True)

    fit(model, xs, epochs=a.epochs, batch_size=128, lr=3e-3, prior_lr=1e-2, seed=a.seed, callbacks=on_step)
    print(json.dumps({"steps_per_epoch": spe, "cpu_s": round(_cpu() - t0, 1)}))


if __name__ == "__main__":
    main()
