"""Rule extraction: the path-based baseline and the faithful extractors for DRUM, SMDRUM and MMDRUM.

Weights of a reduced path ``s`` (identity steps deleted) for a query relation ``q``:

    w_s        = sum_j sum_{k : reduce(k) = s} prod_i a_{j,i,k_i}     (DRUM: score = sum_s w_s N_s)
    w^max_{j,s} = max_{k : reduce(k) = s} prod_i a_{j,i,k_i}           (max-product within rank j)

- MMDRUM: ``score = max_j max_{s : N_s >= 1} w^max_{j,s}``, so ``{q <- body(s) : max_j w^max_{j,s} >= beta}`` is
  faithful (plain Datalog chain rules).
- SMDRUM: ``score = sum_j max_{s : N_s >= 1} w^max_{j,s}``: minimal conjunctions ``AND_{j in J} body(s_j)`` with
  ``sum_j w^max_{j,s_j} >= beta``.
- DRUM: minimal count vectors ``m`` (``m_s <= 1`` when ``|s| <= 1``) with ``sum_s m_s w_s >= beta`` as multipath
  rules with inequalities; exponential in general, so extraction has a rule budget and reports ``complete=False``
  when it is exceeded. Per-fact explanations (:func:`explain`) are always exact.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

from ._checks import check_attention
from ._checks import check_beta
from ._checks import check_heads
from ._checks import check_kg
from ._checks import check_kgs
from .check import model_consequences
from .datalog import walk_counts
from .kg import KG
from .kg import decode_facts
from .model import DRUM
from .rules import Path
from .rules import Rule
from .rules import RuleProgram
from .rules import format_rule

__all__ = [
    "reduced_paths",
    "path_weights",
    "rank_max_weights",
    "path_rules",
    "faithful_rules",
    "extract_mm_bruteforce",
    "Explanation",
    "explain",
    "explanation_program",
    "parse_fact",
]

VARIANT_OF = {"sum": "drum", "sm": "sm", "mm": "mm"}


@functools.lru_cache(maxsize=32)
def reduced_paths(n_ops: int, steps: int) -> tuple[list[Path], np.ndarray]:
    """All ``(n_ops + 1)^steps`` operator sequences (row-major, identity = ``n_ops``) reduced by deleting identity
    steps: returns the distinct reduced paths and, per sequence, the index of its reduced path."""
    paths: dict[Path, int] = {}
    idx = []
    for seq in itertools.product(range(n_ops + 1), repeat=steps):
        p = tuple(k for k in seq if k != n_ops)
        idx.append(paths.setdefault(p, len(paths)))
    return list(paths), np.asarray(idx)


def _sequence_products(attn_rank: np.ndarray) -> np.ndarray:
    """``prod_i a_{i,k_i}`` for every sequence, flattened row-major: ``(T, K) -> (K^T,)``."""
    out = attn_rank[0]
    for i in range(1, attn_rank.shape[0]):
        out = np.multiply.outer(out, attn_rank[i]).reshape(-1)
    return out


def path_weights(attn: np.ndarray) -> dict[Path, float]:
    """DRUM's path-expansion weights ``w_s`` from attention ``(L, T, K)``."""
    attn = check_attention(attn)
    L, T, K = attn.shape
    paths, idx = reduced_paths(K - 1, T)
    w = np.zeros(len(paths))
    # Eq. (path expansion): w_s = sum_j sum_{k : reduce(k) = s} prod_i a_{j,i,k_i}
    for j in range(L):
        w += np.bincount(idx, weights=_sequence_products(attn[j]), minlength=len(paths))
    return {p: float(w[i]) for i, p in enumerate(paths)}


def rank_max_weights(attn: np.ndarray) -> list[dict[Path, float]]:
    """Per rank ``j``: ``w^max_{j,s}`` for every reduced path (max over sequences reducing to ``s``)."""
    attn = check_attention(attn)
    L, T, K = attn.shape
    paths, idx = reduced_paths(K - 1, T)
    out = []
    for j in range(L):
        w = np.zeros(len(paths))
        # Eq. (rank max weight): w^max_{j,s} = max_{k : reduce(k) = s} prod_i a_{j,i,k_i}
        np.maximum.at(w, idx, _sequence_products(attn[j]))
        out.append({p: float(w[i]) for i, p in enumerate(paths)})
    return out


def _names(model: DRUM, relations: list[str] | None) -> list[str]:
    if relations is None:
        return [f"r{i}" for i in range(model.n_relations)]
    if len(relations) != model.n_relations:
        raise InputError(
            f"got {len(relations)} relation names for a model with {model.n_relations} relations"
        )
    return list(relations)


# ---------------------------------------------------------------------------------------------------- baseline
def path_rules(
    model: DRUM,
    threshold: float,
    heads: Iterable[int] | None = None,
    relations: list[str] | None = None,
    rescale: bool = False,
) -> RuleProgram:
    """Neural-LP/DRUM-style extraction: one chain rule per reduced path with confidence ``w_s >= threshold``
    (``rescale=True``: confidence divided by the head's largest one, as DRUM's rule printout). No guarantee of
    soundness or completeness: the program is marked ``complete=False``."""
    check_beta(threshold, "threshold")
    t0 = time.perf_counter()
    rules = []
    for q in check_heads(model, heads):
        w = path_weights(model.attention_for(q))
        top = max(w.values()) if rescale else 1.0
        rules += [Rule(q, ((p, 1),), v / top) for p, v in w.items() if v / top >= threshold]
    return RuleProgram(
        rules,
        _names(model, relations),
        "path",
        float(threshold),
        complete=False,
        heads=check_heads(model, heads),
        seconds=time.perf_counter() - t0,
        note="path-based baseline: no soundness/completeness guarantee",
    )


# ---------------------------------------------------------------------------------------------------- MM / SM
def _rank_paths_above(attn_rank: np.ndarray, floor: float) -> dict[Path, float]:
    """Depth-first over steps with products pruned once below ``floor`` (exact, as products only shrink):
    ``w^max`` of every reduced path whose best sequence reaches ``floor``."""
    T, K = attn_rank.shape
    n_ops = K - 1
    out: dict[Path, float] = {}
    frontier = {(): 1.0}  # reduced prefix -> best product so far
    for i in range(T):
        nxt: dict[Path, float] = {}
        for p, v in frontier.items():
            for k in range(K):
                val = v * attn_rank[i, k]
                if val < floor:
                    continue
                pk = p if k == n_ops else p + (k,)
                if val > nxt.get(pk, -1.0):
                    nxt[pk] = val
        frontier = nxt
    for p, v in frontier.items():
        out[p] = max(out.get(p, 0.0), v)
    return out


def _mm_rules(attn: np.ndarray, beta: float, q: int) -> list[Rule]:
    best: dict[Path, float] = {}
    for j in range(attn.shape[0]):
        for p, v in _rank_paths_above(attn[j], beta).items():
            best[p] = max(best.get(p, 0.0), v)
    # Eq. (MMDRUM): Pi_q = {q <- body(s) : max_j w^max_{j,s} >= beta}
    return [Rule(q, ((p, 1),), v) for p, v in best.items() if v >= beta]


def extract_mm_bruteforce(attn: np.ndarray, beta: float, q: int = 0) -> set[Path]:
    """Reference for tests: every ``|ops|^T`` sequence of every rank, kept when its product reaches beta."""
    attn = check_attention(attn)
    check_beta(beta)
    L, T, K = attn.shape
    if K**T > 10**7:
        raise InputError(f"brute force over {K}^{T} sequences is too many; use faithful_rules")
    out = set()
    for j in range(L):
        for seq in itertools.product(range(K), repeat=T):
            if math.prod(attn[j, i, k] for i, k in enumerate(seq)) >= beta:
                out.add(tuple(k for k in seq if k != K - 1))
    return out


def _sm_rules(attn: np.ndarray, beta: float, q: int, budget: int) -> tuple[list[Rule], bool]:
    L = attn.shape[0]
    rank_max = [float(np.prod(attn[j].max(axis=1))) for j in range(L)]
    cands = []
    for j in range(L):
        floor = max(beta - (sum(rank_max) - rank_max[j]), 1e-300)
        c = _rank_paths_above(attn[j], floor)
        cands.append(sorted(c.items(), key=lambda kv: -kv[1]))
    best_rest = [sum(cands[i][0][1] if cands[i] else 0.0 for i in range(j, L)) for j in range(L + 1)]
    found: dict[tuple[Path, ...], float] = {}
    complete = True

    def rec(j: int, cur: float, chosen: list[tuple[Path, float]]) -> None:
        nonlocal complete
        if not complete:
            return
        if cur >= beta:
            # Eq. (SMDRUM): minimal J with sum_{j in J} w^max_{j,s_j} >= beta
            if all(cur - w < beta for _, w in chosen):  # minimal: dropping any conjunct falls below beta
                key = tuple(sorted({p for p, _ in chosen}))
                found[key] = max(found.get(key, 0.0), cur)
                if len(found) > budget:
                    complete = False
            return
        if j == L or cur + best_rest[j] < beta:
            return
        for p, w in cands[j]:
            if cur + w + best_rest[j + 1] < beta:
                break  # sorted descending: no later candidate can reach beta either
            rec(j + 1, cur + w, chosen + [(p, w)])
        rec(j + 1, cur, chosen)  # rank j contributes nothing

    rec(0, 0.0, [])
    # drop conjunctions whose body strictly contains another rule's body (subsumed)
    keys = sorted(found, key=len)
    kept: list[tuple[Path, ...]] = []
    for k in keys:
        ks = set(k)
        if not any(set(o) < ks for o in kept if len(o) < len(k)):
            kept.append(k)
    return [Rule(q, tuple((p, 1) for p in k), found[k]) for k in kept], complete


# ---------------------------------------------------------------------------------------------------- DRUM (sum)
def _drum_rules(
    attn: np.ndarray, beta: float, q: int, budget: int, max_nodes: int, deadline: float = math.inf
) -> tuple[list[Rule], bool]:
    w = {p: v for p, v in path_weights(attn).items() if v > 0}
    types = sorted(w.items(), key=lambda kv: -kv[1])
    caps = [1 if len(p) <= 1 else max(1, math.ceil(beta / v - 1e-12)) for p, v in types]
    # the most the remaining types can add (infinite once an unbounded type is left)
    rest = [0.0] * (len(types) + 1)
    for i in range(len(types) - 1, -1, -1):
        p, v = types[i]
        rest[i] = math.inf if len(p) > 1 else rest[i + 1] + v
    rules: list[Rule] = []
    nodes = 0
    complete = True

    def rec(start: int, cur: float, chosen: list[tuple[Path, int, float]]) -> None:
        # choose the next type (index >= start) to take copies of; types in between get count 0
        nonlocal nodes, complete
        for i in range(start, len(types)):
            if not complete or cur + rest[i] < beta:
                return  # rest[] only shrinks with i
            nodes += 1
            if nodes > max_nodes or (nodes % 1024 == 0 and time.perf_counter() > deadline):
                complete = False
                return
            p, v = types[i]
            for c in range(1, caps[i] + 1):
                nodes += 1
                if nodes > max_nodes or (nodes % 1024 == 0 and time.perf_counter() > deadline):
                    complete = False
                    return
                tot = cur + c * v
                # Eq. (DRUM multipath rules): minimal m with sum_s m_s w_s >= beta
                if tot >= beta:
                    # minimal: dropping one copy of any chosen type (all heavier than v) falls below beta
                    if tot - v < beta:
                        rules.append(Rule(q, tuple((pp, cc) for pp, cc, _ in chosen) + ((p, c),), tot))
                        if len(rules) > budget:
                            complete = False
                    break
                rec(i + 1, tot, chosen + [(p, c, v)])
                if not complete:
                    return

    rec(0, 0.0, [])
    return rules, complete


def faithful_rules(
    model: DRUM,
    beta: float,
    variant: str | None = None,
    heads: Iterable[int] | None = None,
    relations: list[str] | None = None,
    max_rules: int = 20_000,
    max_nodes: int = 2_000_000,
    max_seconds: float | None = None,
    show_progress: bool = False,
) -> RuleProgram:
    """A program ``Pi`` with ``T_Pi(D) = T_M(D)`` for every dataset ``D`` (score ``>= beta``), for the model's
    variant: ``"mm"`` chain rules, ``"sm"`` conjunctions, ``"drum"`` multipath rules with inequalities.

    Requires the no-normalisation semantics (normalised scores are not monotone, no such program exists). When the
    rule budget ``max_rules`` (per head) or search budget is exceeded the partial program is returned with
    ``complete=False``: it is still sound, but it is not faithful and must not be reported as such."""
    check_heads(model, heads)
    check_int(max_rules, "max_rules", minimum=1, maximum=10**9)
    check_int(max_nodes, "max_nodes", minimum=1, maximum=10**12)
    if max_seconds is not None:
        check_float(max_seconds, "max_seconds", minimum=0, open_min=True)
    if model.normalize:
        raise InputError(
            "faithful extraction needs the model's no-normalisation semantics (normalised DRUM is not "
            "monotone); use model.copy_with(normalize=False) and choose beta for it"
        )
    if isinstance(beta, bool) or not (isinstance(beta, int | float) and beta > 0 and math.isfinite(beta)):
        raise InputError(f"beta must be a positive finite threshold, got {beta!r}")
    own = VARIANT_OF[model.aggregation]
    variant = own if variant is None else variant
    if variant != own:
        raise InputError(
            f"variant {variant!r} does not match the model (aggregation {model.aggregation!r} -> "
            f"{own!r}); build the model with the aggregation you want to extract from"
        )
    t0 = time.perf_counter()
    deadline = t0 + max_seconds if max_seconds is not None else math.inf
    rules: list[Rule] = []
    complete = True
    hs = check_heads(model, heads)
    names = _names(model, relations)
    bar = progress(hs, desc=f"extract {variant}", disable=None if show_progress else True)
    for q in bar:
        if show_progress:
            bar.set_postfix_str(f"{names[q]}: {len(rules)} rules so far")
        attn = model.attention_for(q)
        if variant == "mm":
            rules += _mm_rules(attn, beta, q)
        elif variant == "sm":
            r, ok = _sm_rules(attn, beta, q, max_rules)
            rules += r
            complete &= ok
        else:
            r, ok = _drum_rules(attn, beta, q, max_rules, max_nodes, deadline)
            rules += r
            complete &= ok
    note = (
        ""
        if complete
        else f"rule budget ({max_rules} per head), search or time budget exceeded: partial, sound only"
    )
    return RuleProgram(
        rules,
        _names(model, relations),
        variant,
        float(beta),
        complete,
        heads=hs,
        seconds=time.perf_counter() - t0,
        note=note,
    )


# ---------------------------------------------------------------------------------------------------- explanations
@dataclass
class Explanation:
    """Why the model predicts (or not) ``q(h, t)``: its score, the number of walks ``t -> ... -> h`` of each path
    type (``counts``, exact), a few example walks per type (``walks``), and a minimal rule of the faithful program
    that fires on the fact (None when the score is below beta)."""

    fact: tuple[int, int, int]
    score: float
    beta: float
    walks: dict[Path, list[tuple[int, ...]]]
    rule: Rule | None
    counts: dict[Path, int] | None = None

    def format(self, kg: KG, examples: int = 3) -> str:
        """Relation and entity names: the rule, then per path type of the rule its walk count and grounded bodies
        such as ``brother(alice,carl), father(carl,dan)`` (an inverse step ``inv_r`` is written as ``r``
        with its arguments swapped)."""
        h, q, t = self.fact
        E, rels = kg.entities, list(kg.relations)
        ok = self.rule is not None
        lines = [
            f"{rels[q]}({E[h]},{E[t]}): score {self.score:.6g} {'>=' if ok else '<'} beta {self.beta:.6g}"
        ]
        if not ok:
            lines.append("  no rule fires: the model does not predict this fact")
            return "\n".join(lines)
        lines.append("  rule: " + format_rule(self.rule, rels, weight=True))
        counts = self.counts or {p: len(w) for p, w in self.walks.items()}
        for p, _ in self.rule.atoms:
            kind = ", ".join(kg.operator_names[k] for k in reversed(p)) if p else f"x = y ({E[h]})"
            lines.append(f"  {counts.get(p, 0)} walk(s) of type [{kind}]:")
            for w in self.walks.get(p, [])[:examples]:
                lines.append("    " + (_ground(p, w, kg) if p else f"{E[h]} = {E[t]}"))
        return "\n".join(lines)


def _ground(path: Path, nodes: tuple[int, ...], kg: KG) -> str:
    """A walk ``nodes[0] = t -> ... -> nodes[-1] = h`` along ``path`` as the body atoms, head side first."""
    R, E, rels = kg.n_relations, kg.entities, kg.relations
    atoms = []
    for k, a, b in zip(path, nodes[:-1], nodes[1:]):  # step a -> b with operator k: M_k[b, a] = 1
        atoms.append(f"{rels[k]}({E[b]},{E[a]})" if k < R else f"{rels[k - R]}({E[a]},{E[b]})")
    return ", ".join(reversed(atoms))


def _adjacency(kg: KG) -> dict[int, list[tuple[int, int]]]:
    if "adj" not in kg._cache:
        op, dst, src = kg.edges()
        adj: dict[int, list[tuple[int, int]]] = {}
        for k, d, s in zip(op.tolist(), dst.tolist(), src.tolist()):
            adj.setdefault(s, []).append((k, d))
        kg._cache["adj"] = adj
    return kg._cache["adj"]


def _walks(
    kg: KG, h: int, t: int, steps: int, keep: int = 5
) -> tuple[dict[Path, int], dict[Path, list[tuple[int, ...]]]]:
    """Exact walk counts ``N_s(h, t)`` for every path type ``s`` of length ``0..steps`` and up to ``keep``
    example walks per type. Dynamic programming over (type, node) states, pruned to nodes that can still reach
    ``h`` in the steps left, so the cost is bounded by types x entities, not by degree^steps."""
    adj = _adjacency(kg)
    # dist[e]: fewest steps from e to h (over the operators, i.e. edges src -> dst), up to `steps`
    radj: dict[int, list[int]] = {}
    for s_, outs in adj.items():
        for _, d in outs:
            radj.setdefault(d, []).append(s_)
    dist = {h: 0}
    front = [h]
    for m in range(1, steps + 1):
        nxt = []
        for e in front:
            for s_ in radj.get(e, ()):
                if s_ not in dist:
                    dist[s_] = m
                    nxt.append(s_)
        front = nxt
    counts: dict[Path, int] = {}
    examples: dict[Path, list[tuple[int, ...]]] = {}
    states: dict[tuple[Path, int], list] = {}
    if dist.get(t, steps + 1) <= steps:
        states[((), t)] = [1, [(t,)]]
    for m in range(steps + 1):
        for (p, node), (c, ex) in states.items():
            if node == h:
                counts[p] = counts.get(p, 0) + c
                examples.setdefault(p, []).extend(ex[: keep - len(examples.get(p, []))])
        if m == steps:
            break
        nxt_states: dict[tuple[Path, int], list] = {}
        left = steps - m - 1
        for (p, node), (c, ex) in states.items():
            for k, d in adj.get(node, ()):
                if dist.get(d, steps + 1) > left:
                    continue
                st = nxt_states.setdefault((p + (k,), d), [0, []])
                st[0] += c
                if len(st[1]) < keep:
                    st[1].extend(w + (d,) for w in ex[: keep - len(st[1])])
        states = nxt_states
    return counts, examples


def parse_fact(text: str, kg: KG) -> tuple[int, int, int]:
    """``"uncle(alice,bob)"`` -> ``(h, q, t)`` indices."""
    check_kg(kg)
    s = text.strip().replace(" ", "")
    if "(" not in s or not s.endswith(")") or s.count(",") != 1:
        raise InputError(f"expected a fact like 'uncle(alice,bob)', got {text!r}")
    rel, args = s[:-1].split("(", 1)
    a, b = args.split(",")
    return kg.entity_index(a), kg.relation_index(rel), kg.entity_index(b)


def explain(
    model: DRUM, fact: str | tuple[int, int, int], kg: KG, beta: float, _weights: dict | None = None
) -> Explanation:
    """Per-fact explanation (exact for every variant): the walks from ``t`` to ``h`` grouped by path type, and a
    minimal rule of the faithful program that derives the fact when ``score >= beta``."""
    if model.normalize:
        raise InputError(
            "explanations need the no-normalisation semantics; use model.copy_with(normalize=False)"
        )
    check_kg(kg)
    check_beta(beta)
    if isinstance(fact, str):
        h, q, t = parse_fact(fact, kg)
    else:
        if not isinstance(fact, tuple | list) or len(fact) != 3:
            raise InputError(
                f"fact must be 'rel(head,tail)' or an (h, q, t) index triple, got {describe(fact)}"
            )
        h, q, t = (check_int(x, "fact index", minimum=0) for x in fact)
        if max(h, t) >= kg.n_entities or q >= model.n_relations:
            raise InputError(
                f"fact {fact} is out of range for {kg!r} and a model of {model.n_relations} relations"
            )
    if _weights is not None and q in _weights:
        attn, w_sum, w_max = _weights[q]
    else:
        attn = model.attention_for(q)
        w_sum = path_weights(attn) if model.aggregation == "sum" else None
        w_max = rank_max_weights(attn) if model.aggregation != "sum" else None
    counts, walks = _walks(kg, h, t, model.steps)
    score, rule = _rule_for_counts(model.aggregation, q, counts, w_sum, w_max, beta)
    return Explanation((h, q, t), float(score), float(beta), walks, rule, counts)


def _rule_for_counts(
    aggregation: str, q: int, counts: dict[Path, int], w_sum: dict | None, w_max: list | None, beta: float
) -> tuple[float, Rule | None]:
    """The model's score from the walk counts ``N_s(h, t)`` and, when it reaches beta, a minimal rule of the
    faithful program that fires: DRUM takes walk units in descending weight until beta is reached; SMDRUM the best
    path of each rank in descending order; MMDRUM the single best path."""
    rule = None
    if aggregation == "sum":
        w = w_sum
        score = sum(w[p] * n for p, n in counts.items())
        if score >= beta:
            cur, chosen = 0.0, []
            for p in sorted(counts, key=lambda p: -w[p]):
                need = counts[p] if cur + counts[p] * w[p] < beta else math.ceil((beta - cur) / w[p] - 1e-12)
                need = max(1, min(need, counts[p]))
                cur += need * w[p]
                chosen.append((p, need))
                if cur >= beta:
                    break
            rule = Rule(q, tuple(chosen), cur)
        return float(score), rule
    best = [max(((wr[p], p) for p in counts), default=(0.0, ())) for wr in w_max]
    if aggregation == "mm":
        score = max(b[0] for b in best)
        if score >= beta:
            rule = Rule(q, ((max(best)[1], 1),), score)
        return float(score), rule
    score = sum(b[0] for b in best)
    if score >= beta:
        cur, chosen = 0.0, []
        for v, p in sorted(best, reverse=True):
            cur += v
            chosen.append(p)
            if cur >= beta:
                break
        rule = Rule(q, tuple((p, 1) for p in chosen), cur)
    return float(score), rule


def explanation_program(
    model: DRUM,
    beta: float,
    datasets: list[KG],
    heads: Iterable[int] | None = None,
    relations: list[str] | None = None,
    show_progress: bool = False,
) -> RuleProgram:
    """The union of the per-fact explanation rules of every fact the model predicts on ``datasets``. Each rule is a
    member of the faithful program's upward closure (sound on every dataset); the union is complete on the given
    datasets by construction, not in general (``complete=False``)."""
    check_beta(beta)
    datasets = check_kgs(datasets)
    t0 = time.perf_counter()
    hs = check_heads(model, heads)
    cache = {}
    for q in hs:
        a = model.attention_for(q)
        cache[q] = (
            a,
            path_weights(a) if model.aggregation == "sum" else None,
            rank_max_weights(a) if model.aggregation != "sum" else None,
        )
    rules: dict[tuple, Rule] = {}
    types, _ = reduced_paths(model.n_operators, model.steps)
    for i, kg in enumerate(datasets):
        ids = model_consequences(model, kg, beta, hs)
        facts = decode_facts(ids, kg.n_entities)
        wc: dict = {}
        mats = [walk_counts(kg, p, wc) for p in types]  # N_s for every path type, by sparse products
        bar = progress(
            total=len(facts),
            desc=f"explain {kg.name} ({i + 1}/{len(datasets)})",
            disable=None if show_progress else True,
        )
        for q in hs:
            sel = facts[facts[:, 1] == q]
            if not len(sel):
                continue
            H, T = sel[:, 0], sel[:, 2]
            C = np.stack([np.asarray(m[H, T]).ravel() for m in mats], axis=1)  # (facts of q, types)
            _, w_sum, w_max = cache[q]
            for row in C:
                nz = np.flatnonzero(row)
                counts = {types[j]: int(row[j]) for j in nz}
                r = _rule_for_counts(model.aggregation, q, counts, w_sum, w_max, beta)[1]
                if r is not None and r.key not in rules:
                    rules[r.key] = r
            bar.update(len(sel))
        bar.close()
    return RuleProgram(
        list(rules.values()),
        _names(model, relations or list(datasets[0].relations)),
        VARIANT_OF[model.aggregation] + "-explanations",
        float(beta),
        complete=False,
        heads=hs,
        seconds=time.perf_counter() - t0,
        note=f"union of per-fact explanations on {len(datasets)} datasets",
    )
