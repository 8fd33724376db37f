"""Many independent :class:`~.models.SpikingMLP` runs (norm x seed) trained side by side in one network.

A CPU-time device, not a different algorithm: G = len(norms) * len(seeds) networks are laid side by side along the
channel dimension. Every statistic of every norm is per channel, the LIF is elementwise, the linear layers are
block-diagonal (``einsum`` over a group dim), each group draws its own shuffled batches, and the loss is the *sum*
of the groups' mean losses, so each group's gradient, SGD update and running statistics are exactly those of its
own run (``tests/test_model.py::test_packed_training_equals_separate_runs`` checks this against
:func:`~.train.train_on`). The only shared quantities are the per-step p_t of TAB and k_t of TEBN, which are kept
per group here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

from .data import TemporalData
from .model import SpikingMLP
from .neurons import direct_encoding
from .neurons import lif_forward
from .norms import NORMS
from .norms import TAB
from .norms import TEBN
from .norms import make_norm
from .train import TrainConfig
from .train import TrainResult
from .train import _check_cfg
from .train import _check_data
from .train import _check_task
from .train import cosine_sgd

__all__ = ["PackedSpikingMLP", "train_packed"]


class _GroupedTAB(TAB):
    def __init__(self, width: int, T: int, groups: int) -> None:
        super().__init__(width * groups, T)
        self.width = width
        self.p = nn.Parameter(torch.ones(T, groups))

    def _step_weights(self) -> torch.Tensor:
        return self.p.repeat_interleave(self.width, dim=1)


class _GroupedTEBN(TEBN):
    def __init__(self, width: int, T: int, groups: int) -> None:
        super().__init__(width * groups, T)
        self.width = width
        self.k = nn.Parameter(torch.ones(T, groups))

    def _step_weights(self) -> torch.Tensor:
        return self.k.repeat_interleave(self.width, dim=1)


def _grouped_norm(name: str, width: int, T: int, groups: int) -> nn.Module:
    if name == "tab":
        m = _GroupedTAB(width, T, groups)
    elif name == "tebn":
        m = _GroupedTEBN(width, T, groups)
    else:
        m = make_norm(name, width * groups, T)  # all parameters per channel already
    m.check_finite = False  # the packed model checks its input once
    return m


class PackedSpikingMLP(nn.Module):
    """``len(norms) * len(seeds)`` SpikingMLPs; group g = (norms[g // S], seeds[g % S]).

    Each group's weights are those :class:`SpikingMLP` gets after ``seed_everything(seed)``.
    Input ``[B, T, G, d]`` (a batch per group) or ``[B, T, d]`` (shared); output ``[B, T, G, classes]``.
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        T: int,
        norms: Sequence[str],
        seeds: Sequence[int],
        *,
        hidden: Sequence[int] = (128, 128),
        tau: float = 0.9,
        v_th: float = 1.0,
        gamma: float = 1.0,
    ) -> None:
        super().__init__()
        from iclr24.paperkit import seed_everything

        norms = [n.lower() for n in norms]
        bad = [n for n in norms if n not in NORMS]
        if bad or not norms or not seeds or len(set(norms)) != len(norms):
            raise InputError(
                f"norms must be distinct names from {', '.join(NORMS)} and seeds non-empty; got {norms}"
            )
        self.norms, self.seeds, self.T = list(norms), list(seeds), T
        self.hidden, self.tau, self.v_th, self.gamma = tuple(hidden), tau, v_th, gamma
        S = len(seeds)
        nets = []
        for n in norms:
            for s in seeds:
                seed_everything(int(s))
                nets.append(
                    SpikingMLP(in_features, num_classes, T, hidden=hidden, norm=n, tau=tau, v_th=v_th)
                )
        lin = [[m for m in net.modules() if isinstance(m, nn.Linear)] for net in nets]
        self.weights = nn.ParameterList(
            [nn.Parameter(torch.stack([ls[i].weight.detach().t() for ls in lin])) for i in range(len(lin[0]))]
        )
        self.out_bias = nn.Parameter(torch.stack([ls[-1].bias.detach() for ls in lin]))
        self.layer_norms = nn.ModuleList(
            [nn.ModuleList([_grouped_norm(n, h, T, S) for n in norms]) for h in hidden]
        )
        self.last_rates: list[torch.Tensor] = []  # per hidden layer: [T, G]

    @property
    def groups(self) -> list[tuple[str, int]]:
        return [(n, s) for n in self.norms for s in self.seeds]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        G = len(self.norms) * len(self.seeds)
        if not bool(torch.isfinite(x).all()):
            raise InputError("PackedSpikingMLP: the input contains NaN or inf values")
        if x.dim() == 2:
            x = direct_encoding(x, self.T)
        if x.dim() == 3:
            h = torch.einsum("btd,gdh->btgh", x, self.weights[0])
        else:
            h = torch.einsum("btgd,gdh->btgh", x, self.weights[0])
        self.last_rates = []
        for i, norms in enumerate(self.layer_norms):
            B, T, _, width = h.shape
            flat = h.reshape(B, T, G * width)
            parts = flat.split(len(self.seeds) * width, dim=2)
            z = torch.cat([nm(part.contiguous()) for part, nm in zip(parts, norms, strict=True)], dim=2)
            s, _ = lif_forward(z, self.tau, self.v_th, self.gamma)
            s = s.reshape(B, T, G, width)
            self.last_rates.append(s.detach().mean(dim=(0, 3)))
            h = torch.einsum("btgd,gdh->btgh", s, self.weights[i + 1])
        return h + self.out_bias


def train_packed(
    data: TemporalData,
    norms: Sequence[str],
    seeds: Sequence[int],
    cfg: TrainConfig | None = None,
    *,
    hidden: Sequence[int] = (128, 128),
    tau: float = 0.9,
    v_th: float = 1.0,
    gamma: float = 1.0,
    device: str = "cpu",
    progress: bool = True,
) -> dict[tuple[str, int], TrainResult]:
    """Train every (norm, seed) network of :func:`~.train.train_on` at once; ``cfg.seed`` is ignored (``seeds``
    give both the initialisation and each group's batch order)."""
    from iclr24.paperkit import progress as pbar

    _check_task(data)
    cfg = _check_cfg(cfg)
    if (
        isinstance(norms, str)
        or not isinstance(norms, Sequence)
        or not all(isinstance(n, str) for n in norms)
    ):
        raise InputError(f"norms must be a list of norm names, got {describe(norms)}")
    if isinstance(seeds, str) or not isinstance(seeds, Sequence) or not seeds:
        raise InputError(f"seeds must be a non-empty list of integers, got {describe(seeds)}")
    seeds = [check_int(s, "seeds[i]", minimum=0, maximum=2**63 - 1) for s in seeds]
    _check_data(data.x_train, data.y_train, "train split")
    _check_data(data.x_test, data.y_test, "test split")
    t0 = time.perf_counter()
    dev = torch.device(device)
    model = PackedSpikingMLP(
        data.in_features,
        data.num_classes,
        data.T,
        norms,
        seeds,
        hidden=hidden,
        tau=tau,
        v_th=v_th,
        gamma=gamma,
    ).to(dev)
    G = len(model.groups)
    xtr, ytr = data.x_train.to(dev), data.y_train.to(dev)
    n = len(xtr)
    steps = -(-n // cfg.batch_size)
    opt, sched = cosine_sgd(model.parameters(), cfg.lr, cfg.momentum, cfg.weight_decay, cfg.epochs * steps)
    # the same per-seed batch order as train_on: paperkit's RandomSampler seeded with the run's seed
    gens = {s: torch.Generator().manual_seed(int(s)) for s in seeds}
    losses = torch.zeros(cfg.epochs, G)
    for epoch in pbar(range(cfg.epochs), desc=f"{data.name}: {G} runs", disable=None if progress else True):
        model.train()
        perms = {s: torch.randperm(n, generator=gens[s]) for s in seeds}
        idx = torch.stack([perms[s] for _, s in model.groups]).to(dev)  # [G, n]
        for b in range(0, n, cfg.batch_size):
            sel = idx[:, b : b + cfg.batch_size]  # [G, B]
            xb = xtr[sel].transpose(0, 1)  # [B, G, T, d]
            xb = xb.transpose(1, 2) if xb.dim() == 4 else direct_encoding(xb, data.T)
            yb = ytr[sel].t()  # [B, G]
            logits = model(xb).mean(1)  # [B, G, classes]
            per_group = F.cross_entropy(logits.permute(0, 2, 1), yb, reduction="none").mean(0)  # [G]
            opt.zero_grad()
            per_group.sum().backward()
            opt.step()
            sched.step()
            losses[epoch] += per_group.detach().cpu() * sel.shape[1]
    losses /= n
    model.eval()
    with torch.no_grad():
        pred = []
        for i in range(0, len(data.x_test), 512):
            pred.append(model(data.x_test[i : i + 512].to(dev)).mean(1).argmax(-1).cpu())  # [B, G]
        pred = torch.cat(pred)
    acc = 100.0 * (pred == data.y_test[:, None]).float().mean(0)
    seconds = time.perf_counter() - t0
    out = {}
    for g, key in enumerate(model.groups):
        per_step = {f"lif{i + 1}": [float(v) for v in r[:, g]] for i, r in enumerate(model.last_rates)}
        out[key] = TrainResult(
            test_acc=float(acc[g]),
            train_loss=[float(v) for v in losses[:, g]],
            firing_rate={k: sum(v) / len(v) for k, v in per_step.items()},
            firing_rate_per_step=per_step,
            seconds=seconds / G,
        )
    return out
