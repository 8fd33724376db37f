"""Benchmarks behind the ``bench`` subcommand: ours against the baseline in one run, ratios of medians.

- one training step of the official configuration (rank 3, num_step 3, embedding and LSTM 128, batch 64 +
  inverses, L1 normalisation, cross-entropy) on a random KG of 2,000 entities, 12 relations and 10,000 facts: our
  DRUM step (one gather and scatter-add over the operators' entries, :func:`.model.sum_step`) against the
  official layout (one CSR matrix per operator, one product each, :func:`per_relation_csr_step`) and against
  this package's earlier step (one product with the stacked COO operators, :func:`stacked_coo_step`); CPU time,
  rotating order, medians; the three give the same scores and gradients to float rounding (``test_model.py``);
- one training step (forward + backward, batch 64 queries + inverses) with sparse operators vs dense ``(2|R|, E, E)``
  operators, at ~600 and ~3,000 entities (dense at 3,000 only in ``--full``: 0.9 GB of operators);
- extraction time of MM and SM vs exact DRUM (budgeted: 2,000 rules or 10k search nodes per head) for rank 1-3 and
  T = 2 (T = 3 too in ``--full``), trained-like random attention;
- the faithfulness checker on the synthetic family KG.
"""

from __future__ import annotations

import numpy as np
import torch

from iclr24.paperkit import BenchReport
from iclr24.paperkit import BenchResult
from iclr24.paperkit import benchmark
from iclr24.paperkit import benchmark_many
from iclr24.paperkit import pinned_threads
from iclr24.paperkit.errors import InputError

from . import synthetic
from .check import check_faithfulness
from .extract import faithful_rules
from .kg import KG
from .model import DRUM
from .model import propagate
from .model import sum_step

__all__ = ["run_benchmarks", "per_relation_csr_step", "stacked_coo_step", "random_kg", "official_train_step"]

BENCH_BETA = 0.3


def _dense_scores(
    model: DRUM, M: torch.Tensor, q: torch.Tensor, t: torch.Tensor, normalize: bool
) -> torch.Tensor:
    attn = model.attention(q)
    B, L, T, K = attn.shape
    start = torch.zeros(B, M.shape[1])
    start[torch.arange(B), t] = 1
    out = 0
    for j in range(L):
        v = start
        for i in range(T):
            v = torch.einsum("kef,bf,bk->be", M, v, attn[:, j, i, :-1]) + attn[:, j, i, -1:] * v
            if normalize:
                v = v / v.sum(1, keepdim=True).clamp_min(1e-20)
        out = out + v
    return out


def per_relation_csr_step(v: torch.Tensor, attn: torch.Tensor, kg: KG) -> torch.Tensor:
    """The DRUM step in the official code's layout: one sparse CSR ``(E, E)`` matrix per operator, one product
    ``M_k v^T`` each, weighted by its attention and summed (written from the formula; the baseline of the bench)."""
    n_ops = kg.n_operators
    key = ("csr_ops", v.dtype)
    if key not in kg._cache:
        op, dst, src = kg.torch_edges()
        E = kg.n_entities
        kg._cache[key] = [
            torch.sparse_coo_tensor(
                torch.stack([dst[op == k], src[op == k]]),
                torch.ones(int((op == k).sum()), dtype=v.dtype),
                (E, E),
            )
            .coalesce()
            .to_sparse_csr()
            for k in range(n_ops)
        ]
    vt = v.t()
    out = attn[:, n_ops:] * v
    for k, M in enumerate(kg._cache[key]):
        out = out + torch.sparse.mm(M, vt).t() * attn[:, k : k + 1]
    return out


def stacked_coo_step(v: torch.Tensor, attn: torch.Tensor, kg: KG) -> torch.Tensor:
    """This package's earlier DRUM step: one sparse product with all operators stacked row-wise as a COO matrix
    ``(2|R| E, E)``, then the attention-weighted sum over operators."""
    n_ops, E = kg.n_operators, kg.n_entities
    P = torch.sparse.mm(kg.stacked_operators(v.dtype), v.t().contiguous()).view(n_ops, E, -1)
    return torch.einsum("keb,bk->be", P, attn[:, :n_ops]) + attn[:, n_ops:] * v


def random_kg(n_entities: int = 2000, n_relations: int = 12, n_facts: int = 10_000, seed: int = 0) -> KG:
    """A KG of ``n_facts`` distinct uniformly random facts (the step-time benchmark's graph)."""
    rng = np.random.default_rng(seed)
    E, R = n_entities, n_relations
    ids = np.unique(rng.integers(0, E * R * E, 2 * n_facts))
    ids = rng.permutation(ids)[:n_facts]
    facts = np.stack([ids // (R * E), (ids // E) % R, ids % E], axis=1)
    return KG(tuple(f"e{i}" for i in range(E)), tuple(f"r{i}" for i in range(R)), facts, name="random")


def official_train_step(kg: KG, batch: int = 64, dim: int = 128, seed: int = 0):
    """``step(fn)``: one training step (forward, cross-entropy, backward) of the official configuration on ``kg``
    with the DRUM step ``fn``; a batch of ``batch`` facts plus their inverse queries. Returns the scores and the
    parameters' gradients (what the tests compare between step implementations)."""
    rng = np.random.default_rng(seed)
    R = kg.n_relations
    m = DRUM(R, rank=3, steps=2, embed_dim=dim, hidden_dim=dim, seed=33)
    f = kg.facts[rng.integers(0, len(kg.facts), batch)]
    q = torch.as_tensor(np.concatenate([f[:, 1], f[:, 1] + R]))
    t = torch.as_tensor(np.concatenate([f[:, 2], f[:, 0]]))
    h = torch.as_tensor(np.concatenate([f[:, 0], f[:, 2]]))

    def step(fn=sum_step):
        m.zero_grad()
        scores = propagate(m.attention(q), t, kg, "sum", normalize=True, thr=m.thr, step=fn)
        torch.nn.functional.cross_entropy(scores, h).backward()
        return scores.detach(), [p.grad.clone() for p in m.parameters() if p.grad is not None]

    return step


def _official_step_bench(repeats: int, n_entities: int = 2000, n_facts: int = 10_000) -> list[BenchResult]:
    kg = random_kg(n_entities, 12, n_facts)
    step = official_train_step(kg)
    cases = {
        f"train step (official config, E={n_entities}, {n_facts} facts): ours, gather/scatter over entries": (
            lambda: step(sum_step)
        ),
        "per-relation CSR products (official layout)": lambda: step(per_relation_csr_step),
        "stacked COO product (this package before)": lambda: step(stacked_coo_step),
    }
    return benchmark_many(
        cases, baseline="per-relation CSR products (official layout)", repeats=repeats, warmup=1, clock="cpu"
    )


def _train_step_bench(n_families: int, dense: bool, repeats: int) -> BenchResult:
    data = synthetic.family(n_families, seed=0)
    kg = data.kg
    m = DRUM(kg.n_relations, rank=3, steps=2, embed_dim=32, hidden_dim=32)
    b = torch.as_tensor(np.concatenate([data.train[:64], data.train[:64]]))
    q = torch.cat([b[:64, 1], b[64:, 1] + kg.n_relations])
    t = torch.cat([b[:64, 2], b[64:, 0]])
    h = torch.cat([b[:64, 0], b[64:, 2]])

    def sparse_step():
        m.zero_grad()
        torch.nn.functional.cross_entropy(m(q, t, kg, normalize=True), h).backward()

    M = kg.dense_operators() if dense else None

    def dense_step():
        m.zero_grad()
        torch.nn.functional.cross_entropy(_dense_scores(m, M, q, t, True), h).backward()

    return benchmark(
        sparse_step,
        baseline=dense_step if dense else None,
        repeats=repeats,
        warmup=1,
        name=f"train step, sparse operators, E={kg.n_entities}",
        baseline_name="dense operators",
    )


def _attention(rng: np.random.Generator, rank: int, steps: int, n_rel: int) -> np.ndarray:
    """Trained-like attention: one or two dominant operators per step, a small softmax floor elsewhere."""
    logits = rng.normal(0, 1, size=(rank, steps, 2 * n_rel + 1))
    for j in range(rank):
        for i in range(steps):
            logits[j, i, rng.choice(2 * n_rel + 1, size=2, replace=False)] += 6.0
    a = np.exp(logits)
    return a / a.sum(-1, keepdims=True)


def run_benchmarks(mode: str = "quick") -> BenchReport:
    """Training step (sparse vs dense), MM/SM extraction vs exact budgeted DRUM extraction, and the faithfulness
    check; one thread, interleaved medians. ``mode``: smoke (one tiny case each), quick or full."""
    if mode not in ("smoke", "quick", "full"):
        raise InputError(f"mode must be smoke, quick or full, got {mode!r}")
    with pinned_threads(1):
        res = _run(mode)
    notes = [
        "torch threads pinned to 1; interleaved repeats, medians; speedup = baseline median / ours median",
        "exact DRUM extraction runs under a node budget (the exact program is exponential), so its time is a "
        "lower bound",
    ]
    return BenchReport(results=res, notes=notes)


def _run(mode: str) -> list[BenchResult]:
    quick = mode != "full"
    if mode == "smoke":
        return [
            *_official_step_bench(1, n_entities=200, n_facts=600),
            _train_step_bench(8, dense=True, repeats=1),
        ]
    reps = 3 if quick else 7
    nodes = 10_000 if quick else 100_000  # search budget of the exact DRUM extraction (per head)
    res = [
        *_official_step_bench(5 if quick else 15),
        _train_step_bench(48, dense=True, repeats=reps),
        _train_step_bench(240, dense=not quick, repeats=2 if quick else reps),
    ]
    rng = np.random.default_rng(0)
    n_rel = 12
    for rank, steps in [(1, 2), (2, 2), (3, 2)] if quick else [(r, s) for r in (1, 2, 3) for s in (2, 3)]:
        att = {q: _attention(rng, rank, steps, n_rel) for q in range(4)}
        mods = {a: DRUM.with_fixed_attention(att, n_rel, aggregation=a) for a in ("sum", "sm", "mm")}
        counts = {a: len(faithful_rules(mods[a], BENCH_BETA, max_rules=2000, max_nodes=nodes)) for a in mods}
        for a in ("mm", "sm"):
            r = benchmark(
                lambda a=a, mods=mods: faithful_rules(mods[a], BENCH_BETA, max_rules=2000),
                baseline=lambda mods=mods: faithful_rules(
                    mods["sum"], BENCH_BETA, max_rules=2000, max_nodes=nodes
                ),
                repeats=reps,
                warmup=1,
                name=f"extract {a.upper()} L={rank} T={steps} ({counts[a]} rules)",
                baseline_name=f"exact DRUM, budgeted ({counts['sum']} rules)",
            )
            res.append(r)
    data = synthetic.family(20, seed=0)
    att = {q: _attention(rng, 3, 2, n_rel) for q in data.query_relations}
    m = DRUM.with_fixed_attention(att, n_rel, aggregation="mm")
    prog = faithful_rules(m, 0.3)
    res.append(
        benchmark(
            lambda: check_faithfulness(m, prog, [data.kg]),
            repeats=reps,
            warmup=1,
            name=f"faithfulness check, 1 dataset, E={data.kg.n_entities}, {len(prog)} MM rules",
        )
    )
    return res
