"""Paper scale (issue 48): DRUM training at the reference configuration on an FB15k-237-sized graph.

``PAPER_SCALE``: FaithfulRE / DRUM defaults (``--rank 3 --num_step 3 --rnn_state_size 128 --query_embed_size 128
--batch_size 64 --max_epoch 10 --learning_rate 1e-3``, trained with L1 normalisation and CrossEntropy over the score
vector; each batch of 64 queries is doubled by the inverse queries, 128 rows) on a graph of FB15k-237's size (14,541
entities, 237 relations, 272,115 training triples), split 3:1 into background facts and training queries as
:func:`~.data.load_dataset` does. The data is a synthetic stand-in written as tab-separated ``head relation tail``
files in a temporary folder and read by the package's own loader (:func:`~.data.load_tsv`). One step is one
micro-batch of :func:`~.train.train`'s update (forward over all heads, CrossEntropy, backward, Adam).

Memory: the micro-batch (8 rows x 16) was sized for this package's earlier sum step, which materialised ``M_k v``
for all 2|R| operators, ``(2|R|, E, B)`` floats per step and rank, kept for the backward pass (the reference code
keeps the same per-operator products): about 27.6 MB per query per step on FB15k-237, 21 GB at 128 rows; one
micro-step of 8 rows took 18.5 s of CPU on one core (2026-12-02). The present step (:func:`.model.sum_step`, a
gather and scatter-add over the 408k operator entries) keeps only ``v`` between the passes and holds a few
``(entries, B)`` arrays while it runs (1.6 MB each per row); the micro-batch is unchanged so that the recorded
paper-scale figures stay those of the record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import PaperScale
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.scale import ScaleRun
from iclr24.paperkit.scale import shuffled

from .data import load_tsv
from .data import split_facts
from .model import DRUM
from .train import _loss
from .train import _queries

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "paper_scale", "write_fb15k237_like"]


@dataclass(frozen=True)
class PaperScaleConfig:
    """DRUM's reference flags on FB15k-237's size (train/valid/test 272,115 / 17,535 / 20,466 triples)."""

    n_entities: int = 14_541
    n_relations: int = 237
    n_train: int = 272_115
    n_valid: int = 17_535
    n_test: int = 20_466
    fact_fraction: float = 0.75  # load_dataset: training triples split 3:1 into facts and queries
    rank: int = 3
    steps: int = 2  # T = num_step - 1
    embed_dim: int = 128
    hidden_dim: int = 128
    batch_size: int = 64  # queries; doubled by the inverse queries
    lr: float = 1e-3
    epochs: int = 10  # max_epoch (early stopping may end sooner, after min_epoch 5)
    micro_batch: int = 8  # rows (of the 128 a step has): 8 x 16, about 18 s of CPU a micro-step

    @property
    def rows_per_step(self) -> int:
        return 2 * self.batch_size

    @property
    def n_queries(self) -> int:
        return 2 * (self.n_train - int(round(self.fact_fraction * self.n_train)))  # with inverse queries

    @property
    def paper_steps(self) -> int:
        return self.epochs * math.ceil(self.n_queries / self.rows_per_step)


PAPER_SCALE = PaperScaleConfig()


def write_fb15k237_like(folder: Path, cfg: PaperScaleConfig = PAPER_SCALE, seed: int = 0) -> Path:
    """``train.txt``, ``valid.txt``, ``test.txt`` of tab-separated ``head relation tail`` lines with Freebase-style
    names (``/m/0...`` entities, ``/domain/type/property`` relations), FB15k-237's counts, heavy-tailed degrees."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    ents = np.array([f"/m/0{i:05x}" for i in range(cfg.n_entities)])
    rels = np.array([f"/domain{i % 17}/type{i}/property" for i in range(cfg.n_relations)])
    p = 1.0 / np.arange(1, cfg.n_entities + 1) ** 0.6  # a few hub entities, as in Freebase
    p /= p.sum()
    for split, n in (("train", cfg.n_train), ("valid", cfg.n_valid), ("test", cfg.n_test)):
        h = rng.choice(cfg.n_entities, n, p=p)
        t = rng.integers(0, cfg.n_entities, n)
        r = rng.integers(0, cfg.n_relations, n)
        lines = "\n".join(f"{a}\t{b}\t{c}" for a, b, c in zip(ents[h], rels[r], ents[t], strict=True))
        (folder / f"{split}.txt").write_text(lines + "\n")
    return folder


def paper_scale(device: str = "cpu", *, cfg: PaperScaleConfig | None = None) -> PaperScale:
    """One micro-step (``cfg.micro_batch`` query rows) of DRUM training on the FB15k-237-sized stand-in.
    ``cfg``: a smaller :class:`PaperScaleConfig` (tests). CPU only, as the reference code."""
    if device != "cpu":
        raise InputError(f"drum-rules runs on the CPU only (as the reference code), got device {device!r}")
    cfg = cfg or PAPER_SCALE
    run = ScaleRun(
        device, batch=cfg.rows_per_step, micro_batch=cfg.micro_batch, of="the {batch} rows of a step"
    )
    all_train = load_tsv(write_fb15k237_like(run.folder / "fb15k-237", cfg) / "train.txt", name="fb15k-237")
    facts, train_q = split_facts(all_train.facts, (cfg.fact_fraction, 1 - cfg.fact_fraction), seed=0)
    kg = all_train.with_facts(facts, name="fb15k-237/facts")
    queries = _queries(train_q, kg.n_relations, inverse=True)
    model = DRUM(
        kg.n_relations,
        rank=cfg.rank,
        steps=cfg.steps,
        embed_dim=cfg.embed_dim,
        hidden_dim=cfg.hidden_dim,
        seed=33,
    )
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    # train()'s epochs: a new shuffle each, the last partial minibatch dropped
    order = shuffled(len(queries), cfg.micro_batch, torch.Generator().manual_seed(33))
    batches = (torch.as_tensor(queries[i.numpy()]) for i in order)

    def loss(b):
        scores = model(b[:, 0], b[:, 1], kg, normalize=True)  # trained with L1 normalisation, as train()
        return _loss(scores, b[:, 2], "ce", model.thr)

    return run.paper_scale(
        run.train_step(batches, loss, opt),
        config=(
            f"DRUM rank {cfg.rank}, num_step {cfg.steps + 1}, LSTM {cfg.hidden_dim}, batch {cfg.batch_size} "
            f"(+inverse = {cfg.rows_per_step} rows), Adam {cfg.lr:g}, {cfg.epochs} epochs"
        ),
        paper_steps=cfg.paper_steps,
        dataset=(
            f"synthetic FB15k-237-sized TSVs: {kg.n_entities:,} entities, {kg.n_relations} relations, "
            f"{len(all_train):,} training triples ({len(facts):,} facts, {len(train_q):,} queries)"
        ),
        notes=[
            "stand-in: random Freebase-named triples at FB15k-237's counts, tab-separated train/valid/test.txt "
            "in a temporary folder, read by load_tsv; the paper's own runs use the smaller GraIL FB15k-237 v1-v4 "
            "inductive splits (at most 4,707 entities)",
            f"micro-batch {cfg.micro_batch} rows x {run.accumulation}: sized for the earlier "
            f"sum step, which kept M_k v for all {2 * kg.n_relations} operators for backward ((2|R|, E, B) floats "
            "per step and rank, about 21 GB at 128 rows); the present gather/scatter step keeps only v",
            "paper steps: 10 epochs (max_epoch; early stopping may end after 5), CPU only as the reference code",
            "FLOPs: torch's FlopCounterMode counts the LSTM and the dense products only, not the operators' "
            "gather / scatter-add (index_add_): the FLOPs and H200 hours are a "
            "lower bound (the row recorded at a16f730, with the earlier dense sum step, counted 7.7e13 a paper step)",
        ],
    )
