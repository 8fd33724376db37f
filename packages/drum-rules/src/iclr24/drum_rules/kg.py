"""Knowledge graphs as sparse relation operators (with inverses), and the splits a rule learner trains on.

Conventions (those of DRUM / Neural-LP and the FaithfulRE code): a fact ``r(h, t)`` is stored as the index triple
``(h, r, t)``. Operator ``k < R`` is ``M_r[h, t] = 1`` iff ``r(h, t)``; operator ``k = R + r`` is its inverse
``M_{r^-1} = M_r^T``. A query ``(q, ?, t)`` starts from ``e_t`` and each step computes ``v <- M_k v``, so after the
steps the vector is indexed by candidate heads ``h``.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

import numpy as np
import scipy.sparse as sp
import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import describe

__all__ = ["INVERSE_PREFIX", "KG", "KGData", "encode_facts", "decode_facts"]

INVERSE_PREFIX = "inv_"


def encode_facts(h: np.ndarray, r: np.ndarray, t: np.ndarray, n_entities: int) -> np.ndarray:
    """One int64 id per fact, ``(r * E + h) * E + t``: sets of facts become sorted id arrays."""
    E = int(n_entities)
    return (np.asarray(r, dtype=np.int64) * E + np.asarray(h, dtype=np.int64)) * E + np.asarray(
        t, dtype=np.int64
    )


def decode_facts(ids: np.ndarray, n_entities: int) -> np.ndarray:
    """Inverse of :func:`encode_facts`: ``(n, 3)`` index triples ``(h, r, t)``."""
    ids = np.asarray(ids, dtype=np.int64)
    E = int(n_entities)
    t = ids % E
    h = (ids // E) % E
    r = ids // (E * E)
    return np.stack([h, r, t], axis=1) if len(ids) else np.zeros((0, 3), dtype=np.int64)


def _check_names(kind: str, names: Sequence[str]) -> tuple[str, ...]:
    names = tuple(str(n) for n in names)
    if len(set(names)) != len(names):
        seen: set[str] = set()
        dup = next(n for n in names if n in seen or seen.add(n))
        raise InputError(f"{kind} names must be unique, {dup!r} appears twice")
    for n in names:
        if not n or any(c.isspace() for c in n):
            raise InputError(
                f"{kind} name {n!r} is empty or contains whitespace; names must be single tokens"
            )
    return names


def as_triples(a: object, name: str, width: int = 3) -> np.ndarray:
    """``a`` as an ``(n, width)`` int64 array of index rows (``(h, r, t)``, or with a 0/1 label for ``width=4``); a
    flat array of ``n * width`` values is accepted. InputError naming ``name`` otherwise."""
    arr = check_array(a, name, kind="int", allow_empty=True)
    if arr.size == 0:
        return np.zeros((0, width), np.int64)
    if not ((arr.ndim == 2 and arr.shape[1] == width) or (arr.ndim == 1 and arr.size % width == 0)):
        raise InputError(f"{name} must be ({'n'}, {width}) index rows, got {describe(a)}")
    return arr.reshape(-1, width)


@dataclass(eq=False)
class KG:
    """A knowledge graph: entity and relation vocabularies and a set of facts ``(h, r, t)`` (index triples).

    Build one with :meth:`from_triples` (names) or directly from an ``(n, 3)`` int array. Duplicate facts are an
    error (pass ``duplicates="drop"`` to :meth:`from_triples` to drop them)."""

    entities: tuple[str, ...]
    relations: tuple[str, ...]
    facts: np.ndarray
    name: str = "kg"
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.entities = _check_names("entity", self.entities)
        self.relations = _check_names("relation", self.relations)
        rel = set(self.relations)
        for r in self.relations:
            if r.startswith(INVERSE_PREFIX) and r[len(INVERSE_PREFIX) :] in rel:
                raise InputError(
                    f"relation {r!r} collides with the inverse of relation {r[len(INVERSE_PREFIX) :]!r} "
                    f"(inverses are named {INVERSE_PREFIX}<relation>); rename it"
                )
        f = as_triples(self.facts, "facts")
        E, R = len(self.entities), len(self.relations)
        if len(f) and (
            f[:, [0, 2]].min() < 0 or f[:, [0, 2]].max() >= E or f[:, 1].min() < 0 or f[:, 1].max() >= R
        ):
            raise InputError(
                f"fact indices out of range: expected entities in [0, {E}) and relations in [0, {R})"
            )
        ids = encode_facts(f[:, 0], f[:, 1], f[:, 2], E)
        uniq = np.unique(ids)
        if len(uniq) != len(ids):
            raise InputError(
                f"{len(ids) - len(uniq)} duplicate facts in {self.name!r}; every fact must appear once "
                "(use KG.from_triples(..., duplicates='drop') to drop repeats)"
            )
        self.facts = decode_facts(uniq, E)[:, :] if len(uniq) else np.zeros((0, 3), np.int64)
        self._ids = uniq
        self._cache = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_triples(
        cls,
        triples: Iterable[tuple[str, str, str]],
        entities: Sequence[str] | None = None,
        relations: Sequence[str] | None = None,
        duplicates: str = "error",
        name: str = "kg",
    ) -> KG:
        """A KG from ``(head, relation, tail)`` name triples. Unknown names extend the vocabularies unless these
        are given, in which case an unknown name is an error."""
        if duplicates not in ("error", "drop"):
            raise InputError(f"duplicates must be 'error' or 'drop', got {duplicates!r}")
        triples = [tuple(x) for x in triples]
        ents = list(entities) if entities is not None else []
        rels = list(relations) if relations is not None else []
        e_idx = {e: i for i, e in enumerate(ents)}
        r_idx = {r: i for i, r in enumerate(rels)}
        out = []
        for n, tr in enumerate(triples):
            if len(tr) != 3:
                raise InputError(f"triple {n} has {len(tr)} fields, expected (head, relation, tail): {tr!r}")
            h, r, t = (str(x) for x in tr)
            for e in (h, t):
                if e not in e_idx:
                    if entities is not None:
                        raise InputError(f"triple {n} {tr!r}: entity {e!r} is not in the given entity list")
                    e_idx[e] = len(ents)
                    ents.append(e)
            if r not in r_idx:
                if relations is not None:
                    raise InputError(f"triple {n} {tr!r}: relation {r!r} is not in the given relation list")
                r_idx[r] = len(rels)
                rels.append(r)
            out.append((e_idx[h], r_idx[r], e_idx[t]))
        arr = np.asarray(out, dtype=np.int64).reshape(-1, 3)
        if duplicates == "drop" and len(arr):
            arr = decode_facts(np.unique(encode_facts(arr[:, 0], arr[:, 1], arr[:, 2], len(ents))), len(ents))
        return cls(tuple(ents), tuple(rels), arr, name=name)

    def with_facts(self, facts: np.ndarray, name: str | None = None) -> KG:
        """A KG over the same vocabularies with other facts (``(n, 3)`` index triples)."""
        return KG(
            self.entities,
            self.relations,
            as_triples(facts, "facts"),
            name=name or self.name,
        )

    # ------------------------------------------------------------------ sizes and names
    @property
    def n_entities(self) -> int:
        return len(self.entities)

    @property
    def n_relations(self) -> int:
        return len(self.relations)

    @property
    def n_operators(self) -> int:
        """``2 |R|``: each relation and its inverse (the identity is handled by the model, not stored)."""
        return 2 * len(self.relations)

    @property
    def operator_names(self) -> list[str]:
        return list(self.relations) + [INVERSE_PREFIX + r for r in self.relations]

    def __len__(self) -> int:
        return len(self.facts)

    def __repr__(self) -> str:
        return (
            f"KG({self.name!r}: {self.n_entities} entities, {self.n_relations} relations, {len(self)} facts)"
        )

    def entity_index(self, name: str) -> int:
        try:
            return self.entities.index(name)
        except ValueError:
            raise InputError(f"unknown entity {name!r} in {self.name!r}") from None

    def relation_index(self, name: str) -> int:
        try:
            return self.relations.index(name)
        except ValueError:
            raise InputError(f"unknown relation {name!r}; known: {', '.join(self.relations)}") from None

    @property
    def fact_ids(self) -> np.ndarray:
        """Sorted ids of the facts (see :func:`encode_facts`)."""
        return self._ids

    def contains(self, h: int, r: int, t: int) -> bool:
        i = encode_facts(np.array([h]), np.array([r]), np.array([t]), self.n_entities)[0]
        j = np.searchsorted(self._ids, i)
        return bool(j < len(self._ids) and self._ids[j] == i)

    # ------------------------------------------------------------------ operators
    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All operator entries ``(op, dst, src)`` with ``M_op[dst, src] = 1`` over the 2|R| operators."""
        if "edges" not in self._cache:
            h, r, t = self.facts[:, 0], self.facts[:, 1], self.facts[:, 2]
            R = self.n_relations
            op = np.concatenate([r, r + R])
            dst = np.concatenate([h, t])  # M_r[h, t] = 1  and  M_{r^-1}[t, h] = 1
            src = np.concatenate([t, h])
            self._cache["edges"] = (op, dst, src)
        return self._cache["edges"]

    def operator(self, k: int) -> sp.csr_matrix:
        """Operator ``k`` as a SciPy CSR matrix ``(E, E)`` of int64 (``k >= R`` is the inverse of ``k - R``)."""
        if not 0 <= k < self.n_operators:
            raise InputError(f"operator index must be in [0, {self.n_operators}), got {k}")
        key = ("op", k)
        if key not in self._cache:
            op, dst, src = self.edges()
            m = op == k
            E = self.n_entities
            self._cache[key] = sp.csr_matrix(
                (np.ones(int(m.sum()), dtype=np.int64), (dst[m], src[m])), shape=(E, E)
            )
        return self._cache[key]

    def stacked_operators(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """All 2|R| operators stacked row-wise as one sparse COO tensor ``(2|R| * E, E)``: row ``k * E + dst``."""
        key = ("stacked", dtype)
        if key not in self._cache:
            op, dst, src = self.edges()
            E = self.n_entities
            idx = torch.as_tensor(np.stack([op * E + dst, src]), dtype=torch.long)
            vals = torch.ones(idx.shape[1], dtype=dtype)
            self._cache[key] = torch.sparse_coo_tensor(
                idx, vals, (self.n_operators * E, E), check_invariants=False
            ).coalesce()
        return self._cache[key]

    def torch_edges(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`edges` as long tensors, sorted by destination entity (stable), so that the DRUM step's
        scatter-add writes rows in order; every use is independent of the order (sums and maxima over entries)."""
        if "tedges" not in self._cache:
            op, dst, src = self.edges()
            order = np.argsort(dst, kind="stable")
            self._cache["tedges"] = tuple(torch.as_tensor(a[order], dtype=torch.long) for a in (op, dst, src))
        return self._cache["tedges"]

    def dense_operators(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Dense ``(2|R|, E, E)`` operators: only for small graphs and for the sparse-vs-dense benchmark."""
        op, dst, src = self.edges()
        M = torch.zeros(self.n_operators, self.n_entities, self.n_entities, dtype=dtype)
        M[torch.as_tensor(op), torch.as_tensor(dst), torch.as_tensor(src)] = 1
        return M


@dataclass(eq=False)
class KGData:
    """What a rule learner trains and is tested on.

    ``kg``: the background facts the model reasons over (DRUM's ``facts.txt`` / FaithfulRE's ``train_facts``).
    ``train``/``valid``/``test``: query triples ``(h, r, t)`` (index arrays), never part of ``kg``.
    ``valid_labelled``/``test_labelled``: ``(h, r, t, label)`` rows with negatives, used to choose beta by F1.
    ``test_kg``: the facts to reason over at test time (inductive splits); defaults to ``kg``."""

    kg: KG
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    valid_labelled: np.ndarray | None = None
    test_labelled: np.ndarray | None = None
    test_kg: KG | None = None
    name: str = "data"

    def __post_init__(self) -> None:
        if not isinstance(self.kg, KG):
            raise InputError(f"kg must be a KG, got {describe(self.kg)}")
        for split in ("train", "valid", "test"):
            setattr(self, split, as_triples(getattr(self, split), split))
        for split in ("valid_labelled", "test_labelled"):
            a = getattr(self, split)
            if a is not None:
                setattr(self, split, as_triples(a, split, width=4))
        if len(self.train) == 0:
            raise InputError(
                f"{self.name}: the training split is empty; a rule learner needs training queries"
            )

    @property
    def eval_kg(self) -> KG:
        return self.test_kg if self.test_kg is not None else self.kg

    @property
    def query_relations(self) -> list[int]:
        """Relations that occur as queries in train/valid/test: the heads worth extracting rules for."""
        rs = set(self.train[:, 1].tolist()) | set(self.valid[:, 1].tolist()) | set(self.test[:, 1].tolist())
        return sorted(rs)

    def __repr__(self) -> str:
        return (
            f"KGData({self.name!r}: {self.kg!r}, train={len(self.train)}, valid={len(self.valid)}, "
            f"test={len(self.test)})"
        )
