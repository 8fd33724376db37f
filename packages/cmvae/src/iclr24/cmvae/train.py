"""The training loop: Adam (amsgrad) on ``model.loss`` over shuffled mini-batches, as in MultiVae's PolyMNIST
example. Short and visible; works under ``torchrun`` (each rank a shard, gradients averaged by DDP)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch

from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import describe
from iclr24.paperkit.resume import check_checkpoint_arg
from iclr24.paperkit.tracking import StepLog

from .model import CMVAE

__all__ = ["fit"]


class NonFiniteTrainingError(FloatingPointError, InputError):
    """Training diverged (NaN/inf parameters or loss): too large a learning rate or unscaled data. An InputError,
    and a FloatingPointError."""


def _drop_label(item: object) -> object:
    """``([x_1, ..., x_M], label)`` (what :class:`~.data.PolyMNISTFolder` yields, and a DataLoader's batches of
    it) -> ``(x_1, ..., x_M)``: clustering is unsupervised; anything else unchanged."""
    if isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], tuple | list):
        return tuple(item[0])
    return item


def _modalities(model: CMVAE, xs: object) -> list:
    """``xs`` as the list of M modality tensors: a list/tuple of tensors (``None`` for a missing modality), or a
    torch ``Dataset`` of ``(x_1, ..., x_M)`` or ``([x_1, ..., x_M], label)`` items or a ``DataLoader`` of such
    batches, read once in its order (labels are not used)."""
    from iclr24.paperkit.data.user import as_tensors
    from iclr24.paperkit.data.user import is_user_data

    if is_user_data(xs):
        what = "train data (one tensor per modality)"
        return list(as_tensors(xs, fields=model.n_modalities, what=what, item=_drop_label))
    if isinstance(xs, torch.Tensor) or not isinstance(xs, list | tuple):
        raise InputError(
            f"xs must be a list of {model.n_modalities} tensors (one per modality), or a Dataset / DataLoader of "
            f"({', '.join(f'x_{m + 1}' for m in range(model.n_modalities))}) tuples; got {describe(xs)}"
        )
    return list(xs)


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
    callbacks=None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
) -> list[float]:
    """Train ``model`` on the tuples ``xs`` (a list of M tensors [N, ...]); returns the mean loss per epoch.

    ``xs`` may also be a torch ``Dataset`` of ``(x_1, ..., x_M)`` items (or ``([x_1, ..., x_M], label)``, as
    :class:`~.data.PolyMNISTFolder` yields; the label is not used) or a ``DataLoader`` of such batches: it is read
    once, in its order, into the M tensors in memory (then shuffled by ``seed`` as always), so the run equals the
    run on those tensors. ``prior_lr``: a separate learning rate for the cluster prior (logits and means); default ``lr``.
    ``distributed=True`` (under ``torchrun``): the model is wrapped in DDP and each rank reads its own shard.

    ``callbacks`` / ``log_dir``: paperkit's :class:`~iclr24.paperkit.tracking.StepLog`, called after every Adam
    step with ``loss`` and ``epoch`` (and ``epoch_loss``, the epoch's mean, at its last step); ``log_dir`` writes
    ``metrics.jsonl`` and TensorBoard event files when ``tensorboard`` is installed (rank 0 only under torchrun).
    ``checkpoint``: a training-state file written after every epoch (model, optimiser, the shuffling generator,
    the global RNGs the posterior samples draw from, the losses); with ``resume=True`` an existing one is
    continued, so an interrupted run resumed ends bit for bit as the uninterrupted one."""
    for name, v in (("epochs", epochs), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10**8:
            raise InputError(f"{name} must be an integer in [1, 10**8], got {v!r}")
    if not hasattr(model, "_check_inputs"):
        raise InputError(f"model must be a CMVAE or MMVAEPlus, got {describe(model)}")
    if not (isinstance(lr, int | float) and 0 < lr <= 100):
        raise InputError(f"lr must be a positive number, got {lr!r}")
    xs = _modalities(model, xs)
    model._check_inputs(xs, mask)  # shapes, finiteness, missing modalities
    check_checkpoint_arg(checkpoint, resume)
    N = next(x for x in xs if x is not None).shape[0]
    rank, world = 0, 1
    net: torch.nn.Module = model
    if distributed:
        from iclr24.paperkit.distributed import init_distributed
        from iclr24.paperkit.distributed import wrap_ddp

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
    history: list[float] = []
    start = 0
    meta = {"epochs": epochs, "batch_size": batch_size, "lr": lr, "prior_lr": prior_lr, "seed": seed, "n": N,
            "world": world, "spec": getattr(model, "spec", None)}  # fmt: skip
    if resume and Path(checkpoint).is_file():
        from iclr24.paperkit.resume import load_train_state

        saved: dict = {}
        start = load_train_state(checkpoint, model=model, optimizer=opt, generators={"shuffle": g}, expect=meta,
                                 into=saved, what="cmvae training state")  # fmt: skip
        history = [float(v) for v in saved.get("history", [])]
    steps_per_epoch = -(-(N // world) // batch_size)
    log = StepLog(log_dir if rank == 0 else None, callbacks, name="cmvae")
    bar = progress(range(start, epochs), desc="train cmvae", disable=not show_progress or rank != 0)
    try:
        for epoch in bar:
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
                    raise NonFiniteTrainingError(
                        f"training diverged: the loss became {float(loss)}; lower lr"
                    )
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                value = float(loss.detach())
                total += value * len(idx)
                count += len(idx)
                metrics = {"loss": value, "epoch": epoch}
                if s + batch_size >= len(perm):
                    metrics["epoch_loss"] = total / max(count, 1)
                log(epoch * steps_per_epoch + s // batch_size + 1, metrics)
            history.append(total / max(count, 1))
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{history[-1]:.2f}")
            if checkpoint is not None and rank == 0:  # every rank holds the same weights; rank 0 writes
                from iclr24.paperkit.resume import save_train_state

                save_train_state(checkpoint, step=epoch + 1, model=model, optimizer=opt, generators={"shuffle": g},
                                 meta=meta, extra={"history": history})  # fmt: skip
    except BaseException:
        log.close()
        raise
    log.close({"final_loss": history[-1] if history else None, "epochs": len(history)})
    return history
