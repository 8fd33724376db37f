"""The training loop: Adam (amsgrad) on ``model.loss`` over shuffled mini-batches, as in MultiVae's PolyMNIST
example. Short and visible; works under ``torchrun`` (each rank a shard, gradients averaged by DDP)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError, describe

from .model import CMVAE

__all__ = ["fit"]


class NonFiniteTrainingError(FloatingPointError, InputError):
    """Training diverged (NaN/inf parameters or loss): too large a learning rate or unscaled data. An InputError,
    and a FloatingPointError."""


def fit(
    model: CMVAE,
    xs: Sequence[torch.Tensor],
    *,
    epochs: int = 40,
    batch_size: int = 128,
    lr: float = 1e-3,
    prior_lr: float | None = None,
    seed: int = 0,
    mask: torch.Tensor | None = None,
    show_progress: bool = False,
    distributed: bool = False,
) -> list[float]:
    """Train ``model`` on the tuples ``xs`` (a list of M tensors [N, ...]); returns the mean loss per epoch.

    ``prior_lr``: a separate learning rate for the cluster prior (logits and means); default ``lr``.
    ``distributed=True`` (under ``torchrun``): the model is wrapped in DDP and each rank reads its own shard."""
    for name, v in (("epochs", epochs), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10**8:
            raise InputError(f"{name} must be an integer in [1, 10**8], got {v!r}")
    if not hasattr(model, "_check_inputs"):
        raise InputError(f"model must be a CMVAE or MMVAEPlus, got {describe(model)}")
    if not (isinstance(lr, int | float) and 0 < lr <= 100):
        raise InputError(f"lr must be a positive number, got {lr!r}")
    model._check_inputs(list(xs), mask)  # shapes, finiteness, missing modalities
    N = next(x for x in xs if x is not None).shape[0]
    rank, world = 0, 1
    net: torch.nn.Module = model
    if distributed:
        from iclr24.paperkit.distributed import init_distributed, wrap_ddp

        info = init_distributed()
        rank, world = info.rank, info.world_size
        net = wrap_ddp(model, info)
    g = torch.Generator().manual_seed(seed)
    if prior_lr is not None and not (isinstance(prior_lr, int | float) and 0 < prior_lr < float("inf")):
        raise InputError(f"prior_lr must be a positive number, got {prior_lr!r}")
    prior = [p for p in (model.cluster_logits, model.cluster_means) if p.requires_grad]
    ids = {id(p) for p in prior}
    rest = [p for p in model.parameters() if p.requires_grad and id(p) not in ids]
    groups = [{"params": rest}] + ([{"params": prior, "lr": prior_lr or lr}] if prior else [])
    opt = torch.optim.Adam(groups, lr=lr, amsgrad=True)
    history = []
    bar = progress(range(epochs), desc="train cmvae", disable=not show_progress or rank != 0)
    for _ in bar:
        perm = torch.randperm(N, generator=g)[: (N // world) * world][rank::world]  # equal steps per rank
        total, count = 0.0, 0
        for s in range(0, len(perm), batch_size):
            idx = perm[s : s + batch_size]
            batch = [None if x is None else x[idx] for x in xs]
            try:
                loss = net(batch, None if mask is None else mask[idx])
            except ValueError as e:  # torch.distributions' argument check: the parameters became NaN/inf
                if "Expected parameter" not in str(e):
                    raise
                raise NonFiniteTrainingError(
                    "training diverged: the posterior parameters became NaN/inf; lower lr or rescale the data"
                ) from None
            if not bool(torch.isfinite(loss.detach())):
                raise NonFiniteTrainingError(f"training diverged: the loss became {float(loss)}; lower lr")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
            count += len(idx)
        history.append(total / max(count, 1))
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss=f"{history[-1]:.2f}")
    return history
