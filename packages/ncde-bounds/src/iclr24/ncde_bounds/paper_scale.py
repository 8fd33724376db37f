"""Paper scale (issue 48): the paper's trained-NCDE experiment (B) at its own size, for a few steps.

``PAPER_SCALE``: the reconstructed setting of the paper's synthetic regression (``ReproConfig()`` / ``TrainConfig()``
defaults): n = 1000 training series (smooth paths from the 2048-step reference, observed on an irregular grid of
K + 1 = 33 points, the finest of (B)'s grids, time as a channel), an NCDE with hidden state p = 8 and a vector field
of one hidden layer of width 32 (tanh), fixed-step RK4 with 2 substeps per interval, Adam 1e-2 decayed
geometrically to 1e-3 over 300 full-batch epochs (one step an epoch). The paper has no public code or data; these
are the package's data generators, exactly as the claims use them (in memory: the paper's data are generated). One
step is one full-batch update of :func:`~.train.fit`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from iclr24.paperkit import PaperScale
from iclr24.paperkit.scale import ScaleRun

from .synthetic import irregular_grid_indices
from .synthetic import smooth_paths
from .synthetic import subsample
from .synthetic import true_cde
from .train import TrainConfig
from .train import _loss_fn
from .train import make_ncde

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "paper_scale"]


@dataclass(frozen=True)
class PaperScaleConfig:
    """(B) of ``ReproConfig()``: n = 1000, K = 32 (the finest grid), 2048-step reference, ``TrainConfig()``."""

    n_train: int = 1000
    k: int = 32
    n_fine: int = 2048
    train: TrainConfig = TrainConfig()
    grids: int = 4  # K in {4, 8, 16, 32}
    seeds: int = 3

    @property
    def paper_steps(self) -> int:
        return (
            self.train.epochs
        )  # full batch: one step an epoch (one model; (B) trains grids x seeds of them)


PAPER_SCALE = PaperScaleConfig()


def paper_scale(device: str = "cpu", *, cfg: PaperScaleConfig | None = None) -> PaperScale:
    """One full-batch step of the (B) NCDE at K = 32 on n = 1000 series. ``cfg``: a smaller config (tests)."""
    cfg = cfg or PAPER_SCALE
    tc = cfg.train
    t, v = smooth_paths(cfg.n_train, n_fine=cfg.n_fine, seed=100)
    y = true_cde(seed=0)(t, v, substeps=1)
    y = (y - y.mean()) / y.std()  # fit() standardises mse targets
    idx = irregular_grid_indices(cfg.n_fine, cfg.k, cfg.n_train, seed=112 + cfg.k)
    times, values = subsample(t, v, idx)
    times, values, y = times.float().to(device), values.float().to(device), y.float().to(device)
    lengths = torch.full((cfg.n_train,), values.shape[1])
    torch.manual_seed(0)
    model = make_ncde(values.shape[-1], tc).to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=tc.lr)
    gamma = (tc.lr_final / tc.lr) ** (1.0 / max(tc.epochs - 1, 1))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: gamma**e)
    loss_fn = _loss_fn(tc.loss)

    def loss(times, values, y):
        return loss_fn(model(times, values, lengths, None), y)  # full batch, as fit()

    run = ScaleRun(device, batch=cfg.n_train)  # full batch: one micro-step a paper step
    return run.paper_scale(
        run.train_step(itertools.repeat((times, values, y)), loss, opt, after=sched.step),
        config=(
            f"NCDE p {tc.hidden}, field width {tc.width} x depth {tc.depth}, {tc.solver.upper()} x{tc.substeps}, "
            f"n {cfg.n_train} full batch, K {cfg.k}, Adam {tc.lr:g}->{tc.lr_final:g}, {tc.epochs} epochs"
        ),
        paper_steps=cfg.paper_steps,
        dataset=(
            f"smooth synthetic paths (the package's generator, as the paper's experiment), {cfg.n_train:,} series "
            f"of {cfg.k + 1} irregular observations x {values.shape[-1]} channels"
        ),
        notes=[
            "the paper's generators are not public: the reconstructed experiment (B) of reproduce.ReproConfig()",
            f"one model at the finest grid; (B) trains {cfg.grids} grids (K 4-32) x {cfg.seeds} seeds: at most "
            f"{cfg.grids * cfg.seeds}x this row (coarser grids are cheaper)",
            "fp32, full batch (the paper's regime: a few thousand short series)",
        ],
    )
