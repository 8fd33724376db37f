"""DRUM and its max-product variants SMDRUM and MMDRUM, scored with sparse operators.

For a query ``(q, ?, t)``, rank ``j`` and step ``i = 1..T`` (FaithfulRE's ``num_step = T + 1``):

    v_0 = e_t,   v_i = sum_k a_{j,i,k}(q) M_k v_{i-1} + a_{j,i,I}(q) v_{i-1}          (DRUM)
    v_i[e] = max( max_k max_e' a_{j,i,k} M_k[e,e'] v_{i-1}[e'],  a_{j,i,I} v_{i-1}[e] )  (max-product, SM/MM)
    optional L1 normalisation  v_i /= max(thr, sum v_i)
    score(q, h, t) = sum_j v_T^{(j)}[h]   (DRUM, SMDRUM)     or   max_j v_T^{(j)}[h]   (MMDRUM)

The attention ``a_{j,i}(q)`` over the 2|R| operators and the identity comes from one BiLSTM per rank run over
``[e_q] * T + [e_END]`` and a shared linear layer + softmax.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.pretrained import PretrainedMixin

from .kg import KG

__all__ = ["AGGREGATIONS", "DRUM", "sum_step", "max_step", "normalize_l1", "propagate"]

AGGREGATIONS = ("sum", "sm", "mm")


def normalize_l1(v: torch.Tensor, thr: float = 1e-20) -> torch.Tensor:
    """``v / max(thr, sum_e v[e])`` row-wise, ``(B, E) -> (B, E)`` (DRUM's optional normalisation)."""
    # Eq. (DRUM L1 normalisation): v_i <- v_i / max(thr, ||v_i||_1)
    return v / v.sum(dim=1, keepdim=True).clamp_min(thr)


class _OperatorMix(torch.autograd.Function):
    """``out[:, b] = sum_k a[k, b] M_k v[:, b]`` over the operator entries ``M_op[dst, src] = 1``: ``vt (E, B)``,
    ``at (2|R|, B)`` -> ``(E, B)``, one gather and one scatter-add over the entries (every query of the batch has
    its own mix of operators). The backward pass is written out so that nothing of size (entries x batch) is kept
    between the passes: ``grad_v[src] += a[op] * g[dst]`` and ``grad_a[op] += g[dst] * v[src]``."""

    @staticmethod
    def forward(ctx, vt, at, op, dst, src):  # noqa: D102 - see the class docstring
        ctx.save_for_backward(vt, at, op, dst, src)
        return torch.zeros_like(vt).index_add_(0, dst, vt[src] * at[op])

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):  # noqa: D102
        vt, at, op, dst, src = ctx.saved_tensors
        gd = g[dst]  # (entries, B)
        gv = torch.zeros_like(vt).index_add_(0, src, gd * at[op]) if ctx.needs_input_grad[0] else None
        ga = torch.zeros_like(at).index_add_(0, op, gd * vt[src]) if ctx.needs_input_grad[1] else None
        return gv, ga, None, None, None


def sum_step(v: torch.Tensor, attn: torch.Tensor, kg: KG) -> torch.Tensor:
    """One DRUM step, ``v (B, E)``, ``attn (B, 2|R|+1)`` -> ``(B, E)``: ``sum_k a_k M_k v + a_I v``, as one
    gather and scatter-add over the operators' entries (:class:`_OperatorMix`); the same sum as one product with
    the stacked operators ``(2|R| E, E)`` (:meth:`KG.stacked_operators`) or one product per operator, in another
    order (equal to float rounding; ``test_model.py`` pins it)."""
    op, dst, src = kg.torch_edges()
    n_ops = kg.n_operators
    mixed = _OperatorMix.apply(v.t().contiguous(), attn[:, :n_ops].t().contiguous(), op, dst, src)
    # Eq. (DRUM step): v_i = sum_k a_{i,k} M_k v_{i-1} + a_{i,I} v_{i-1}
    return mixed.t() + attn[:, n_ops:] * v


def max_step(v: torch.Tensor, attn: torch.Tensor, kg: KG) -> torch.Tensor:
    """One max-product step, ``(B, E) -> (B, E)``:
    ``v'[e] = max(max_k max_e' a_k M_k[e,e'] v[e'], a_I v[e])`` as a scatter-max over the operators' entries."""
    op, dst, src = kg.torch_edges()
    n_ops = kg.n_operators
    # Eq. (max-product): v_i[e] = max_k max_e' a_{i,k} M_k[e,e'] v_{i-1}[e'], identity: a_{i,I} v_{i-1}[e]
    vals = attn[:, op] * v[:, src]  # (B, nnz): a_k * v[e'] for every entry M_k[e, e'] = 1
    out = torch.zeros_like(v).scatter_reduce(1, dst.expand(v.shape[0], -1), vals, "amax", include_self=False)
    return torch.maximum(out, attn[:, n_ops:] * v)


def propagate(
    attn: torch.Tensor,
    tails: torch.Tensor,
    kg: KG,
    aggregation: str = "sum",
    normalize: bool = False,
    thr: float = 1e-20,
    *,
    step: Callable[[torch.Tensor, torch.Tensor, KG], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Scores of all heads for a batch of queries: ``attn (B, L, T, 2|R|+1)``, ``tails (B,)`` -> ``(B, E)``.
    ``step``: another implementation of one step ``(v, attn_i, kg) -> v'`` (the benchmarks compare the layouts)."""
    if aggregation not in AGGREGATIONS:
        raise InputError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    B, L, T, K = attn.shape
    if K != kg.n_operators + 1:
        raise InputError(
            f"attention has {K} operators but the KG has 2*{kg.n_relations}+1 = {kg.n_operators + 1}"
        )
    if step is None:
        step = sum_step if aggregation == "sum" else max_step
    start = torch.zeros(B, kg.n_entities, dtype=attn.dtype)
    start[torch.arange(B), tails] = 1.0
    per_rank = []
    for j in range(L):
        v = start
        for i in range(T):
            v = step(v, attn[:, j, i], kg)
            if normalize:
                v = normalize_l1(v, thr)
        per_rank.append(v)
    stacked = torch.stack(per_rank)
    # Eq. (DRUM score): score(q,h,t) = sum_j v_T^(j)[h] (DRUM, SMDRUM)  or  max_j v_T^(j)[h] (MMDRUM)
    return stacked.max(dim=0).values if aggregation == "mm" else stacked.sum(dim=0)


def _shared_sum_scores(
    attn: torch.Tensor, tails: torch.Tensor, kg: KG, normalize: bool = False, thr: float = 1e-20
) -> torch.Tensor:
    """DRUM (sum) scores ``(E, len(tails))`` (``[h, b]``) of one query whose attention ``attn (L, T, 2|R|+1)`` is
    shared by every tail: each step is then one sparse ``(E, E)`` matrix ``sum_k a_k M_k`` applied to all tails at
    once, plus ``a_I`` times the identity (the same sum as :func:`sum_step`, taken in another order)."""
    op, dst, src = kg.torch_edges()
    E, n_ops = kg.n_entities, kg.n_operators
    idx = torch.stack([dst, src])
    start = torch.zeros(E, len(tails), dtype=attn.dtype)
    start[tails, torch.arange(len(tails))] = 1.0
    total = None
    for j in range(attn.shape[0]):
        v = start
        for i in range(attn.shape[1]):
            a = attn[j, i]
            W = torch.sparse_coo_tensor(idx, a[op], (E, E), check_invariants=False).coalesce()
            # Eq. (DRUM step): v_i = sum_k a_{i,k} M_k v_{i-1} + a_{i,I} v_{i-1}, for every tail (column) at once
            v = torch.sparse.mm(W, v) + a[n_ops] * v
            if normalize:  # Eq. (DRUM L1 normalisation), per tail
                v = v / v.sum(dim=0, keepdim=True).clamp_min(thr)
        total = v if total is None else total + v  # Eq. (DRUM score): sum over ranks
    return total


def _shared_max_scores(
    attn: np.ndarray, tails: np.ndarray, kg: KG, aggregation: str, normalize: bool = False, thr: float = 1e-20
) -> np.ndarray:
    """SMDRUM / MMDRUM scores ``(E, len(tails))`` (``[h, b]``) of one query whose attention ``attn (L, T, 2|R|+1)``
    is shared by every tail: the max-product step of :func:`max_step` for all tails at once, the operator entries
    sorted by their row so that the max over them is one ``maximum.reduceat`` (max and a product with a
    non-negative number are exact, so the values are those of :func:`max_step`)."""
    op, dst, src = kg.edges()
    E, n_ops, nb = kg.n_entities, kg.n_operators, len(tails)
    order = np.argsort(dst, kind="stable")
    op, dst, src = op[order], dst[order], src[order]
    starts = np.flatnonzero(np.r_[True, dst[1:] != dst[:-1]]) if len(dst) else np.zeros(0, dtype=np.int64)
    start = np.zeros((E, nb))
    start[tails, np.arange(nb)] = 1.0
    per_rank = []
    for j in range(attn.shape[0]):
        v = start
        for i in range(attn.shape[1]):
            a = attn[j, i]
            out = np.zeros((E, nb))
            if i == 0:  # v_0 = e_t: the step reads the operator entries of column t only
                W = np.zeros((E, E))
                np.maximum.at(W, (dst, src), a[op])
                out = W[:, tails]
            elif len(dst):
                # Eq. (max-product): v_i[e] = max_k max_e' a_{i,k} M_k[e,e'] v_{i-1}[e'], identity: a_{i,I} v_{i-1}[e]
                out[dst[starts]] = np.maximum.reduceat(a[op][:, None] * v[src], starts, axis=0)
            v = np.maximum(out, a[n_ops] * v)
            if normalize:  # Eq. (DRUM L1 normalisation), per tail
                v = v / np.maximum(v.sum(axis=0, keepdims=True), thr)
        per_rank.append(v)
    # Eq. (DRUM score): sum over ranks (SMDRUM) or max over ranks (MMDRUM)
    return np.max(per_rank, axis=0) if aggregation == "mm" else np.sum(per_rank, axis=0)


class DRUM(PretrainedMixin, nn.Module):
    """DRUM (``aggregation="sum"``), SMDRUM (``"sm"``: max-product within a rank, sum over ranks) and MMDRUM
    (``"mm"``: max within and across ranks).

    ``steps`` is T, the number of operator applications (FaithfulRE's ``num_step`` is T + 1). ``normalize`` is the
    scoring semantics used by :meth:`scores` and everything downstream (extraction, faithfulness); training may use
    normalisation independently (``TrainConfig.normalize``), as the reference code trains with it and analyses
    without it. Queries ``q >= n_relations`` are inverse queries. ``head_relations``: the relations rules are
    extracted for (default all; :func:`~iclr24.drum_rules.train` sets the ones queried in training).

    ``save_pretrained(dir)`` / ``DRUM.from_pretrained(dir)`` write and read a model folder (model.safetensors,
    config.json, provenance.json); a model with fixed attention keeps it."""

    def __init__(
        self,
        n_relations: int,
        rank: int = 3,
        steps: int = 2,
        aggregation: str = "sum",
        normalize: bool = False,
        embed_dim: int = 128,
        hidden_dim: int = 128,
        thr: float = 1e-20,
        seed: int | None = 33,
        head_relations: list[int] | None = None,
    ) -> None:
        super().__init__()
        for name, v in (
            ("n_relations", n_relations),
            ("rank", rank),
            ("steps", steps),
            ("embed_dim", embed_dim),
            ("hidden_dim", hidden_dim),
        ):
            check_int(v, name, minimum=1, maximum=2**14 if name in ("embed_dim", "hidden_dim") else 1024)
        check_float(thr, "thr", minimum=0)
        if aggregation not in AGGREGATIONS:
            raise InputError(
                f"aggregation must be one of {AGGREGATIONS} (DRUM, SMDRUM, MMDRUM), got {aggregation!r}"
            )
        self.n_relations, self.rank, self.steps = n_relations, rank, steps
        self.aggregation, self.normalize, self.thr = aggregation, bool(normalize), float(thr)
        self.n_operators = 2 * n_relations
        self.head_relations: list[int] = list(range(n_relations))
        if head_relations is not None:
            heads = [int(h) for h in head_relations]
            if any(not 0 <= h < n_relations for h in heads):
                raise InputError(f"head_relations must be relations in [0, {n_relations}), got {heads[:5]}")
            self.head_relations = sorted(set(heads))
        if seed is not None:
            torch.manual_seed(seed)
        self.query_embedding = nn.Embedding(self.n_operators + 1, embed_dim)  # 2|R| queries + END
        self.lstms = nn.ModuleList(
            nn.LSTM(embed_dim, hidden_dim, batch_first=True, bidirectional=True) for _ in range(rank)
        )
        self.linear = nn.Linear(2 * hidden_dim, self.n_operators + 1)  # shared across ranks
        self.register_buffer("fixed_attention", torch.zeros(0), persistent=True)
        self.register_buffer("fixed_mask", torch.zeros(0, dtype=torch.bool), persistent=True)

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    def with_fixed_attention(
        cls,
        attention: Mapping[int, torch.Tensor | np.ndarray],
        n_relations: int,
        aggregation: str = "sum",
        normalize: bool = False,
        thr: float = 1e-20,
    ) -> DRUM:
        """A model whose attention per query relation is given: ``{q: tensor[rank, steps, 2|R|+1]}`` (rows are
        distributions over the operators and the identity, last column). Queries not given raise an error."""
        if not attention:
            raise InputError(
                "attention must map at least one query relation to a [rank, steps, 2|R|+1] tensor"
            )
        shapes = {tuple(np.shape(a)) for a in attention.values()}
        if len(shapes) != 1 or len(next(iter(shapes))) != 3:
            raise InputError(
                f"every attention tensor must have the same shape [rank, steps, 2|R|+1], got {shapes}"
            )
        L, T, K = next(iter(shapes))
        if K != 2 * n_relations + 1:
            raise InputError(
                f"attention has {K} operator columns, expected 2*{n_relations}+1 = {2 * n_relations + 1}"
            )
        m = cls(
            n_relations,
            rank=L,
            steps=T,
            aggregation=aggregation,
            normalize=normalize,
            embed_dim=1,
            hidden_dim=1,
            thr=thr,
            seed=None,
        )
        fixed = torch.zeros(2 * n_relations, L, T, K, dtype=torch.float64)
        mask = torch.zeros(2 * n_relations, dtype=torch.bool)
        for q, a in attention.items():
            if not 0 <= int(q) < 2 * n_relations:
                raise InputError(f"query relation {q} out of range [0, {2 * n_relations})")
            a = torch.as_tensor(np.asarray(a), dtype=torch.float64)
            if (a < 0).any() or not torch.allclose(
                a.sum(-1), torch.ones(L, T, dtype=torch.float64), atol=1e-6
            ):
                raise InputError(f"attention for query {q} must be non-negative with rows summing to 1")
            fixed[int(q)] = a
            mask[int(q)] = True
        m.fixed_attention = fixed
        m.fixed_mask = mask
        m.head_relations = sorted(int(q) for q in attention if int(q) < n_relations)
        return m

    @property
    def has_fixed_attention(self) -> bool:
        return self.fixed_attention.numel() > 0

    def copy_with(self, **changes) -> DRUM:
        """A copy with other scoring settings (``normalize=...``, ``aggregation=...``), same parameters."""
        import copy

        m = copy.deepcopy(self)
        for k, v in changes.items():
            if k not in ("normalize", "aggregation", "thr"):
                raise InputError(f"copy_with accepts normalize/aggregation/thr, got {k!r}")
            setattr(m, k, v)
        return m

    # ------------------------------------------------------------------ attention and scores
    def attention(self, queries: torch.Tensor) -> torch.Tensor:
        """Attention ``(B, rank, steps, 2|R|+1)`` for query relations ``(B,)``; rows sum to 1."""
        queries = torch.as_tensor(queries, dtype=torch.long).reshape(-1)
        if len(queries) and (queries.min() < 0 or queries.max() >= self.n_operators):
            raise InputError(
                f"query relations must be in [0, {self.n_operators}), got {queries.tolist()[:5]}..."
            )
        if self.has_fixed_attention:
            if not bool(self.fixed_mask[queries].all()):
                missing = sorted(set(queries[~self.fixed_mask[queries]].tolist()))
                raise InputError(f"no fixed attention was given for query relation(s) {missing}")
            return self.fixed_attention[queries]
        T = self.steps
        seq = torch.cat(
            [queries[:, None].expand(-1, T), torch.full((len(queries), 1), self.n_operators)], dim=1
        )
        x = self.query_embedding(seq)  # (B, T+1, d): [e_q]*T + [e_END]
        per_rank = []
        for lstm in self.lstms:
            out, _ = lstm(x)  # (B, T+1, 2h)
            # Eq. (DRUM attention): a_{j,i}(q) = softmax(W [h->_i ; h<-_i] + b), W and b shared over ranks
            per_rank.append(torch.softmax(self.linear(out[:, :T]), dim=-1))
        return torch.stack(per_rank, dim=1)

    def attention_for(self, q: int) -> np.ndarray:
        """Attention of one query relation as float64 numpy ``(rank, steps, 2|R|+1)`` (what extraction reads)."""
        with torch.no_grad():
            return self.attention(torch.tensor([int(q)]))[0].double().numpy()

    def forward(
        self,
        queries: torch.Tensor,
        tails: torch.Tensor,
        kg: KG,
        normalize: bool | None = None,
        dtype: torch.dtype | None = None,
    ) -> torch.Tensor:
        """Scores ``(B, E)`` of every candidate head for queries ``(q, ?, t)``."""
        self._check_kg(kg)
        tails = torch.as_tensor(tails, dtype=torch.long).reshape(-1)
        if len(tails) and (tails.min() < 0 or tails.max() >= kg.n_entities):
            raise InputError(f"tail entities must be in [0, {kg.n_entities})")
        attn = self.attention(queries)
        if dtype is not None:
            attn = attn.to(dtype)
        return propagate(
            attn, tails, kg, self.aggregation, self.normalize if normalize is None else normalize, self.thr
        )

    def _check_kg(self, kg: KG) -> None:
        if not isinstance(kg, KG):
            raise InputError(f"kg must be an iclr24.drum_rules.KG, got {type(kg).__name__}")
        if kg.n_relations != self.n_relations:
            raise InputError(f"the model has {self.n_relations} relations but the KG has {kg.n_relations}")

    @torch.no_grad()
    def score_matrix(self, q: int, kg: KG, batch_size: int = 512) -> np.ndarray:
        """float64 ``(E, E)`` scores ``S[h, t]`` of query relation ``q`` for all pairs (the model's semantics)."""
        self._check_kg(kg)
        E = kg.n_entities
        attn = torch.as_tensor(self.attention_for(q))[None]
        out = np.zeros((E, E))
        for s in range(0, E, batch_size):
            tails = torch.arange(s, min(E, s + batch_size))
            # one attention for all tails: the steps act on all of them at once
            if self.aggregation == "sum":
                sc = _shared_sum_scores(attn[0], tails, kg, self.normalize, self.thr).numpy()
            else:
                sc = _shared_max_scores(
                    attn[0].numpy(), tails.numpy(), kg, self.aggregation, self.normalize, self.thr
                )
            out[:, s : s + len(tails)] = sc
        return out

    @torch.no_grad()
    def score_triples(self, triples: np.ndarray, kg: KG, batch_size: int = 256) -> np.ndarray:
        """float64 scores of ``(h, r, t)`` rows (the model's semantics)."""
        triples = np.asarray(triples, dtype=np.int64).reshape(-1, 3)
        out = np.zeros(len(triples))
        for s in range(0, len(triples), batch_size):
            b = triples[s : s + batch_size]
            sc = self.forward(torch.as_tensor(b[:, 1]), torch.as_tensor(b[:, 2]), kg, dtype=torch.float64)
            out[s : s + len(b)] = sc[torch.arange(len(b)), torch.as_tensor(b[:, 0])].numpy()
        return out

    def pretrained_config(self) -> dict:
        """The constructor arguments that rebuild this model as it is now (``config.json`` of
        :meth:`save_pretrained`): its sizes, scoring settings and head relations; ``seed=None`` (the weights are
        loaded, nothing is drawn)."""
        return {**self.config(), "seed": None}

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):  # noqa: D401 - torch's hook
        # the fixed attention (with_fixed_attention) has the shape of the model it came from: take it as given
        for name in ("fixed_attention", "fixed_mask"):
            t, mine = state_dict.get(prefix + name), getattr(self, name)
            if isinstance(t, torch.Tensor) and (t.shape, t.dtype) != (mine.shape, mine.dtype):
                setattr(self, name, torch.empty_like(t))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def config(self) -> dict:
        return {
            "n_relations": self.n_relations,
            "rank": self.rank,
            "steps": self.steps,
            "aggregation": self.aggregation,
            "normalize": self.normalize,
            "thr": self.thr,
            "embed_dim": self.query_embedding.embedding_dim,
            "hidden_dim": self.lstms[0].hidden_size,
            "head_relations": list(self.head_relations),
        }
