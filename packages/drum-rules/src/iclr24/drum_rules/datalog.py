"""A Datalog evaluator for extracted rules with counting / inequality semantics (one non-recursive step).

``consequences(rules, kg)`` computes ``T_Pi(D)``: rule ``q <- {(path_s, m_s)}`` derives ``q(h, t)`` iff every walk
count ``N_s(h, t) >= m_s``, where ``N_s`` is the product of the path's operators (sparse integer matrices; the
number of distinct groundings of the chain's intermediate variables). ``evaluate_naive`` grounds the Datalog text
literally (atoms, ``x = y``, tuple inequalities) for tiny graphs: the tests check both agree.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import numpy as np
import scipy.sparse as sp

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import describe

from ._checks import check_kg
from ._checks import check_rules
from .kg import KG
from .kg import encode_facts
from .rules import Path
from .rules import Rule
from .rules import RuleProgram
from .rules import rule_literals

__all__ = ["walk_counts", "rule_matches", "consequences", "evaluate_naive"]


def walk_counts(kg: KG, path: Path, cache: dict | None = None) -> sp.csr_matrix:
    """``N_s = M_{k_m} ... M_{k_1}`` as int64 CSR ``(E, E)``: ``N_s[h, t]`` = walks from ``t`` to ``h`` along ``s``.
    The empty path is the identity (``x = y``)."""
    cache = {} if cache is None else cache
    if not isinstance(kg, KG):
        raise InputError(f"kg must be a KG, got {describe(kg)}")
    if isinstance(path, str | bytes) or not isinstance(path, Iterable):
        raise InputError(f"path must be a sequence of operator indices, got {describe(path)}")
    path = tuple(path)
    bad = [k for k in path if isinstance(k, bool) or not isinstance(k, int | np.integer)]
    if bad:
        raise InputError(f"path must hold operator indices (ints in [0, {kg.n_operators})), got {path!r}")
    if path in cache:
        return cache[path]
    if not path:
        out = sp.identity(kg.n_entities, dtype=np.int64, format="csr")
    else:
        out = (kg.operator(path[-1]) @ walk_counts(kg, path[:-1], cache)).tocsr()
    cache[path] = out
    return out


def rule_matches(rule: Rule, kg: KG, cache: dict | None = None) -> sp.csr_matrix:
    """Boolean CSR ``(E, E)``: the pairs ``(h, t)`` on which ``rule``'s body holds in ``kg``."""
    cache = {} if cache is None else cache
    out = None
    for path, m in rule.atoms:
        ok = (walk_counts(kg, path, cache) >= m).astype(bool)
        out = ok if out is None else out.multiply(ok).astype(bool)
    if out is None:
        return sp.csr_matrix((kg.n_entities, kg.n_entities), dtype=bool)
    return out.tocsr()


def consequences(
    rules: RuleProgram | Iterable[Rule], kg: KG, heads: Iterable[int] | None = None, dense_below: int = 1500
) -> np.ndarray:
    """``T_Pi(D)`` as sorted unique fact ids (see :func:`iclr24.drum_rules.kg.encode_facts`). Graphs with fewer
    than ``dense_below`` entities evaluate rule bodies on dense boolean matrices (faster for many small rules)."""
    rules = check_rules(rules)
    check_kg(kg)
    keep = None if heads is None else set(int(h) for h in heads)
    cache: dict = kg._cache.setdefault(
        "walk_counts", {}
    )  # N_s of this KG, shared by every program checked on it
    dense: dict = {}
    per_head: dict[int, np.ndarray] = {}  # dense graphs: OR of the rule bodies of each head
    parts = []
    for r in rules:
        if keep is not None and r.head not in keep:
            continue
        if kg.n_entities < dense_below:
            acc = None
            for path, c in r.atoms:
                if (path, c) not in dense:
                    dense[(path, c)] = walk_counts(kg, path, cache).toarray() >= c
                acc = dense[(path, c)] if acc is None else acc & dense[(path, c)]
            if r.head in per_head:
                per_head[r.head] |= acc
            else:
                per_head[r.head] = acc.copy()
            continue
        m = rule_matches(r, kg, cache).tocoo()
        if m.nnz:
            parts.append(encode_facts(m.row, np.full(m.nnz, r.head), m.col, kg.n_entities))
    for q, acc in per_head.items():
        rows, cols = np.nonzero(acc)
        if len(rows):
            parts.append(encode_facts(rows, np.full(len(rows), q), cols, kg.n_entities))
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def evaluate_naive(rules: Iterable[Rule], kg: KG) -> set[tuple[int, int, int]]:
    """Ground every rule's Datalog body literally over all variable assignments (exponential: tiny KGs only).
    Returns the derived facts ``(h, q, t)``."""
    rules = check_rules(rules)
    E = check_kg(kg).n_entities
    if E > 12:
        raise InputError(
            f"evaluate_naive grounds every variable over all entities; use it on <= 12 entities, got {E}"
        )
    rel = {r: i for i, r in enumerate(kg.relations)}
    facts = {tuple(f) for f in kg.facts.tolist()}
    out = set()
    for rule in rules:
        atoms, eqs, neqs = rule_literals(rule, list(kg.relations))
        zs = sorted({v for _, a, b in atoms for v in (a, b) if v not in ("x", "y")}, key=lambda v: int(v[1:]))
        for x, y in itertools.product(range(E), repeat=2):
            if any((x if a == "x" else y) != (x if b == "x" else y) for a, b in eqs):
                continue
            for vals in itertools.product(range(E), repeat=len(zs)):
                env = {"x": x, "y": y, **dict(zip(zs, vals))}
                if not all((env[a], rel[p], env[b]) in facts for p, a, b in atoms):
                    continue
                if all(tuple(env[v] for v in u) != tuple(env[v] for v in w) for u, w in neqs):
                    out.add((x, rule.head, y))
                    break
    return out
