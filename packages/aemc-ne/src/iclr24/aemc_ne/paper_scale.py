"""Paper scale: the paper's largest training setting (MovieLens-10M, item-based) for a few steps, measured.

``PAPER_SCALE`` is MovieLens-10M in the I-AutoRec orientation (items are samples, so the input and output width is
the 69,878 users), the main net 69878-500-69878 with a sigmoid hidden layer and linear output, the released code's
shared element net g (1-20-20-1 tanh, skip 0.8) and its optimiser (AdamW, weight decay 0), full batch over the
10,677 items. The paper's ML-10M width, learning rate and epoch count were not retrievable (its supplementary is not
public): the width is AutoRec's 500 for ML-10M, the learning rate, L2 and epoch cap are this package's MovieLens
protocol (``ReproConfig.real_lr``/``real_l2``/``real_max_epochs``). Data: a ``ratings.dat`` in GroupLens' ML-10M
format (``UserID::MovieID::Rating::Timestamp``, half-star ratings) with ML-10M's 69,878 users and 10,677 movies,
loaded by :func:`~iclr24.aemc_ne.data.load_movielens`. A micro-step is one column minibatch of the ``batch_size=``
path of :meth:`AEMC.fit`: densify the batch's items from the sparse matrix, forward, masked loss at its observed
entries (+ the L2 penalty), backward, AdamW step."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iclr24.paperkit.errors import InputError

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "paper_scale", "write_ml10m_format"]


@dataclass(frozen=True)
class PaperScaleConfig:
    dataset: str = "MovieLens-10M"
    n_users: int = 69_878  # ML-10M: 69,878 users, 10,677 movies, 10,000,054 ratings
    n_items: int = 10_677
    n_ratings_paper: int = 10_000_054
    n_ratings_standin: int = (
        1_000_000  # the stand-in file's ratings (10% of ML-10M; every user and movie present)
    )
    orientation: str = "item"  # I-AutoRec layout: items are samples, users are features
    main_hidden: tuple[int, ...] = (500,)  # AutoRec's width for ML-10M
    activation: str = "sigmoid"
    elem_hidden: tuple[int, ...] = (20, 20)  # the released code's element net
    skip: float = 0.8
    lr: float = 3e-3  # this package's MovieLens protocol (ReproConfig.real_lr)
    l2: float = 1.0  # AutoRec's lambda (ReproConfig.real_l2)
    weight_decay: float = 0.0  # the released code's AdamW
    epochs: int = (
        400  # this package's MovieLens cap (ReproConfig.real_max_epochs); full batch: 1 step per epoch
    )
    micro_batch_cpu: int = 256
    micro_batch_cuda: int = 2048


PAPER_SCALE = PaperScaleConfig()


def write_ml10m_format(folder: Path, n_users: int, n_items: int, n_ratings: int, seed: int = 0) -> Path:
    """A synthetic ``ratings.dat`` in GroupLens' ML-10M format: ``UserID::MovieID::Rating::Timestamp``, ratings in
    half stars 0.5-5, sparse non-contiguous ids (as in ML-10M); every user and every movie rated at least once."""
    if n_ratings < max(n_users, n_items):
        raise InputError(
            f"n_ratings must be >= max(n_users, n_items) = {max(n_users, n_items)}, got {n_ratings}"
        )
    rng = np.random.default_rng(seed)
    uid = np.sort(rng.choice(int(n_users * 1.024) + 1, n_users, replace=False)) + 1
    mid = np.sort(rng.choice(int(n_items * 6.1) + 1, n_items, replace=False)) + 1
    u = np.concatenate([np.arange(n_users), rng.integers(0, n_users, n_ratings - n_users)])
    i = np.concatenate([rng.permutation(np.resize(np.arange(n_items), n_users)),
                        rng.integers(0, n_items, n_ratings - n_users)])  # fmt: skip
    r = rng.integers(1, 11, n_ratings) / 2
    t = rng.integers(789_652_009, 1_231_131_736, n_ratings)
    path = Path(folder) / "ratings.dat"
    with path.open("w", encoding="latin-1") as f:
        for a, b, c, d in zip(uid[u].tolist(), mid[i].tolist(), r.tolist(), t.tolist()):
            f.write(f"{a}::{b}::{c:g}::{d}\n")
    return path


def paper_scale(
    device: str = "cpu",
    *,
    users: int | None = None,
    items: int | None = None,
    ratings: int | None = None,
    hidden: int | None = None,
    micro_batch: int | None = None,
):
    """One micro-step of ``PAPER_SCALE`` on ``device``; the keyword sizes shrink it for tests."""
    import torch

    from iclr24.paperkit.scale import ScaleRun

    from .completion import AEMCNE
    from .data import load_movielens
    from .model import l2_penalty

    c = PAPER_SCALE
    n_u, n_i = users or c.n_users, items or c.n_items
    n_r = ratings or c.n_ratings_standin
    width = (hidden,) if hidden else c.main_hidden
    # the paper's batch is every item (full batch); each micro-step is an AdamW step, the last one partial
    run = ScaleRun(
        device,
        batch=c.n_items,
        cuda=c.micro_batch_cuda,
        cpu=c.micro_batch_cpu,
        micro_batch=micro_batch,
        partial=True,
    )
    mb, acc = run.micro_batch, run.accumulation
    data = load_movielens(write_ml10m_format(run.folder, n_u, n_i, n_r))
    model = AEMCNE(main_hidden=width, activation=c.activation, elem_hidden=c.elem_hidden, skip=c.skip,
                   orientation=c.orientation)  # fmt: skip
    mean, std = float(data.values.mean()), float(data.values.std())
    x = model._csr(data, (data.values - mean) / std).astype(np.float32)  # samples (items) x features (users)
    n_samples, n_features = x.shape
    torch.manual_seed(0)
    net = model._build(n_features).to(device)
    opt = torch.optim.AdamW(net.parameters(), lr=c.lr, weight_decay=c.weight_decay)
    order = np.random.default_rng(0).permutation(n_samples)

    def minibatches():  # the batch's items, sparse, densified on the device as in AEMC.fit's minibatch path
        for k in itertools.count(0, mb):
            xb = x[np.sort(order[np.arange(k, k + mb) % n_samples])]
            coo = xb.tocoo()
            rows, cols = coo.row.astype(np.int64), coo.col.astype(np.int64)
            yield (
                torch.as_tensor(xb.toarray()),
                torch.as_tensor(rows),
                torch.as_tensor(cols),
                torch.as_tensor(coo.data),
            )

    def loss(xd, rows, cols, tgt):
        pred = net.predict_entries(xd, rows, cols)
        # Eq. (loss): (1/|Omega_b|) sum (X_ij - X_hat_ij)^2 + (l2/2) ||W||^2 / |Omega|
        return (tgt - pred).square().sum() / len(tgt) + 0.5 * c.l2 * l2_penalty(net.main) / len(data)

    step = run.train_step(minibatches(), loss, opt)
    notes = [
        f"stand-in data: a synthetic ratings.dat in ML-10M's format ({n_u:,} users x {n_i:,} movies, {n_r:,} "
        f"ratings, ids sparse as in ML-10M); the real file has {c.n_ratings_paper:,} ratings, which changes only "
        "the entries g and the loss see per batch (the main net's cost is set by the matrix shape)",
        f"paper batch = all {c.n_items:,} items (the released code trains full batch); micro-batch {mb} items x "
        f"{acc} = ceil({c.n_items:,} / {mb}) micro-steps, each an AdamW step of AEMC.fit's batch_size= path",
        f"paper steps = {c.epochs} epochs (this package's MovieLens cap; the paper's ML-10M epochs, width and lr "
        "are not public), AdamW lr 3e-3, L2 1.0, fp32 (the released code uses no mixed precision)",
        "load_movielens parses the file in Python lists: about 10x the stand-in's loading memory for the real "
        "10M-rating file",
    ]
    return run.paper_scale(
        step,
        config=f"AEMC-NE item-based {n_features}-{'-'.join(map(str, width))}-{n_features} sigmoid + g "
        f"1-{'-'.join(map(str, c.elem_hidden))}-1, AdamW, full batch",
        paper_steps=c.epochs,
        dataset=f"{c.dataset} format (synthetic stand-in)",
        notes=notes,
    )
