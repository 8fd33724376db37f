"""Calibration of the MNIST conv-denoiser baseline's training budget (its plateau), on calibration seed 101.

Trains ``ConvDenoiser`` (the arm ``lpn train --arch conv-denoiser`` trains) with the l2 loss at lr 1e-3, batch 32,
and prints the mean PSNR at sigma 0.1 on 200 calibration images (validation images 5000-5199, disjoint from the
evaluated images 0-199) every 250 steps. One thread. The numbers it printed are in ``reproduce.py``
(``MNIST_CALIBRATION``); the shipped checkpoints' step count follows from them.

    OMP_NUM_THREADS=1 uv run python packages/lpn/scripts/calibrate_mnist_baseline.py [--hidden 32] [--steps 3000]
"""

import argparse
import time

import torch

from iclr24.lpn.data import psnr
from iclr24.lpn.experiments import ConvDenoiser
from iclr24.lpn.train import TrainConfig
from iclr24.lpn.train import train
from iclr24.paperkit.data.mnist import load_mnist

p = argparse.ArgumentParser()
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--steps", type=int, default=3000)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--seed", type=int, default=101)
p.add_argument("--every", type=int, default=250)
a = p.parse_args()
torch.set_num_threads(1)
d = load_mnist()
x = torch.as_tensor(d["train"][0]).reshape(-1, 1, 28, 28)
xc = torch.as_tensor(d["val"][0]).reshape(-1, 1, 28, 28)[5000:5200]
g = torch.Generator().manual_seed(777)
noisy = xc + 0.1 * torch.randn(xc.shape, generator=g)
torch.manual_seed(a.seed)
model = ConvDenoiser(1, a.hidden, 5, 10.0)
t0 = time.process_time()


def on_step(step, m, loss):
    if (step + 1) % a.every == 0:
        with torch.no_grad():
            m.eval()
            v = float(psnr(m(noisy), xc).mean())
            m.train()
        print(f"step {step + 1} psnr {v:.3f} loss {loss:.5f} cpu {time.process_time() - t0:.1f}", flush=True)


cfg = TrainConfig(num_steps=a.steps, loss="l2", lr=1e-3, batch_size=a.batch_size, seed=a.seed)
train(model, x, cfg, show_progress=False, on_step=on_step)
print(f"noisy psnr {float(psnr(noisy, xc).mean()):.3f}")
