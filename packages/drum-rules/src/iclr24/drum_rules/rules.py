"""Rules and rule programs: one representation for chain rules, conjunctions and multipath (counting) rules.

A *path* is a tuple of operator indices in application order (the first operator is applied to ``e_t`` first);
operator ``k < R`` is relation ``k``, ``k >= R`` the inverse of relation ``k - R``. The body of a path
``(k_1, ..., k_m)`` is the chain ``op_{k_m}(x, z_{m-1}), ..., op_{k_1}(z_1, y)``; the empty path is ``x = y``.

A :class:`Rule` ``q(x, y) <- {(path_s, m_s)}`` fires on ``(h, t)`` iff for every atom the number of distinct
groundings of the path's intermediate variables, i.e. the walk count ``N_s(h, t)``, is at least ``m_s``. In Datalog
with inequalities that is ``m_s`` copies of the chain with pairwise different intermediate tuples.

- MMDRUM: chain rules (one path, count 1).
- SMDRUM: conjunctions of chains (several paths, count 1).
- DRUM: multipath rules (counts ``m_s >= 1``; ``m_s <= 1`` for paths of length <= 1).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from iclr24.paperkit import atomic_write_text
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

__all__ = ["Path", "Rule", "RuleProgram", "format_rule", "rule_literals"]

Path = tuple[int, ...]


@dataclass(frozen=True)
class Rule:
    """``head(x, y) <- AND_s [N_s(x, y) >= m_s]``; ``atoms`` is a sorted tuple of ``(path, count)``."""

    head: int
    atoms: tuple[tuple[Path, int], ...]
    weight: float = 0.0

    def __post_init__(self) -> None:
        check_int(self.head, "head", minimum=0, maximum=2**31)
        if isinstance(self.atoms, str | bytes) or not isinstance(self.atoms, tuple | list) or not self.atoms:
            raise InputError(
                f"atoms must be a non-empty tuple of (path, count) pairs, got {describe(self.atoms)}"
            )
        merged: dict[Path, int] = {}
        for atom in self.atoms:
            if not isinstance(atom, tuple | list) or len(atom) != 2 or not isinstance(atom[0], tuple | list):
                raise InputError(
                    f"each atom must be a (path, count) pair, path a tuple of operators, got {atom!r}"
                )
            path, m = atom
            path = tuple(check_int(k, "a path's operator", minimum=0) for k in path)
            check_int(m, "an atom's count")
            if int(m) < 1:
                raise InputError(f"atom counts must be >= 1, got {m} for path {path}")
            merged[path] = max(merged.get(path, 0), int(m))
        object.__setattr__(self, "atoms", tuple(sorted(merged.items())))

    @property
    def kind(self) -> str:
        if len(self.atoms) == 1 and self.atoms[0][1] == 1:
            return "chain"
        if all(m == 1 for _, m in self.atoms):
            return "conjunction"
        return "multipath"

    @property
    def key(self) -> tuple:
        return (self.head, self.atoms)

    def to_dict(self) -> dict:
        return {"head": self.head, "atoms": [[list(p), m] for p, m in self.atoms], "weight": self.weight}

    @classmethod
    def from_dict(cls, d: dict) -> Rule:
        return cls(
            int(d["head"]), tuple((tuple(p), int(m)) for p, m in d["atoms"]), float(d.get("weight", 0.0))
        )


def _op_atom(k: int, dst: str, src: str, relations: list[str]) -> tuple[str, str, str]:
    """``M_k[dst, src] = 1`` as a relational atom: ``r(dst, src)`` or, for an inverse, ``r(src, dst)``."""
    R = len(relations)
    return (relations[k], dst, src) if k < R else (relations[k - R], src, dst)


def rule_literals(rule: Rule, relations: list[str]) -> tuple[list[tuple[str, str, str]], list[tuple], list]:
    """The Datalog body: relational atoms ``(pred, a, b)``, equalities ``(a, b)`` and inequalities between the
    intermediate-variable tuples of different copies of the same path (``(tuple_1, tuple_2)``)."""
    atoms, eqs, neqs = [], [], []
    counter = 0
    for path, m in rule.atoms:
        copies = []
        for _ in range(m):
            if len(path) == 0:
                eqs.append(("x", "y"))
                copies.append(())
                continue
            zs = []
            for _ in range(len(path) - 1):
                counter += 1
                zs.append(f"z{counter}")
            chain = ["y", *zs, "x"]  # v_0 at y, v_m at x
            for i, k in enumerate(path):
                atoms.append(_op_atom(k, chain[i + 1], chain[i], relations))
            copies.append(tuple(zs))
        for a in range(len(copies)):
            for b in range(a + 1, len(copies)):
                neqs.append((copies[a], copies[b]))
    return atoms, eqs, neqs


def format_rule(rule: Rule, relations: list[str], arrow: str = "<-", weight: bool = False) -> str:
    """``uncle(x,y) <- brother(x,z1), father(z1,y)``; inequalities as ``z1 != z2`` (or tuple ``!=``)."""
    if not isinstance(rule, Rule):
        raise InputError(f"rule must be a Rule, got {describe(rule)}")
    max_op = max((k for p, _ in rule.atoms for k in p), default=-1)
    if isinstance(relations, str) or len(relations) <= rule.head or 2 * len(relations) <= max_op:
        raise InputError(f"relations must name every relation the rule uses, got {len(relations)} names")
    atoms, eqs, neqs = rule_literals(rule, relations)
    single = sum(len(p) - 1 for p, m in rule.atoms for _ in range(m) if len(p) > 1) == 1
    ren = (lambda v: "z" if v == "z1" else v) if single else (lambda v: v)
    lits, rest = [], list(atoms)  # each chain left to right: x ... y
    for path, m in rule.atoms:
        for _ in range(m):
            chunk, rest = rest[: len(path)], rest[len(path) :]
            lits.extend(f"{p}({ren(a)},{ren(b)})" for p, a, b in reversed(chunk))
    lits += [f"{a} = {b}" for a, b in dict.fromkeys(eqs)]
    for u, v in neqs:
        if len(u) == 1:
            lits.append(f"{u[0]} != {v[0]}")
        elif len(u) > 1:
            lits.append(f"({','.join(u)}) != ({','.join(v)})")
    body = ", ".join(lits) if lits else "true"
    head = (
        relations[rule.head] if rule.head < len(relations) else f"{relations[rule.head - len(relations)]}_inv"
    )
    s = f"{head}(x,y) {arrow} {body}"
    if weight:
        s += f"    # w = {rule.weight:.6g}"
    return s


@dataclass
class RuleProgram:
    """A set of rules extracted from a model, with what is needed to read and check them.

    ``complete`` is False whenever extraction stopped early (rule budget) or the method gives no completeness
    guarantee (the path baseline): such a program must never be reported as faithful."""

    rules: list[Rule]
    relations: list[str]
    variant: str
    beta: float
    complete: bool
    heads: list[int] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.rules, str | bytes) or not all(isinstance(r, Rule) for r in self.rules):
            raise InputError(f"rules must be a list of Rules, got {describe(self.rules)}")
        if isinstance(self.relations, str) or not all(isinstance(r, str) for r in self.relations):
            raise InputError(f"relations must be a list of names, got {describe(self.relations)}")
        check_float(self.beta, "beta", minimum=0)

    def __len__(self) -> int:
        return len(self.rules)

    def __iter__(self):
        return iter(self.rules)

    def for_head(self, q: int | str) -> list[Rule]:
        qi = self.relations.index(q) if isinstance(q, str) else int(q)
        return [r for r in self.rules if r.head == qi]

    def top(self, n: int = 10, head: int | str | None = None) -> list[Rule]:
        rs = self.rules if head is None else self.for_head(head)
        return sorted(rs, key=lambda r: -r.weight)[:n]

    def format(self, n: int | None = None, weights: bool = True) -> str:
        rs = sorted(self.rules, key=lambda r: (r.head, -r.weight))
        if n is not None:
            rs = rs[:n]
        return "\n".join(format_rule(r, self.relations, weight=weights) for r in rs)

    def __str__(self) -> str:
        status = "complete" if self.complete else "INCOMPLETE (not faithful)"
        head = f"% {self.variant} program: {len(self.rules)} rules, beta = {self.beta:.6g}, {status}" + (
            f"; {self.note}" if self.note else ""
        )
        return head + "\n" + self.format(n=50) + ("\n% ..." if len(self.rules) > 50 else "")

    def to_datalog(self) -> str:
        """Datalog text (``:-``); inverse atoms are written with swapped arguments, inequalities as ``!=``."""
        status = "complete" if self.complete else "INCOMPLETE: budget exceeded or no guarantee"
        lines = [f"% {self.variant} rules, beta = {self.beta!r}, {len(self.rules)} rules, {status}"]
        if self.note:
            lines.append(f"% {self.note}")
        lines += [format_rule(r, self.relations, arrow=":-") + "." for r in self.rules]
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "beta": self.beta,
            "complete": self.complete,
            "relations": self.relations,
            "heads": self.heads,
            "seconds": self.seconds,
            "note": self.note,
            "rules": [dict(r.to_dict(), text=format_rule(r, self.relations)) for r in self.rules],
        }

    @classmethod
    def from_json(cls, d: dict) -> RuleProgram:
        try:
            return cls(
                [Rule.from_dict(r) for r in d["rules"]],
                list(d["relations"]),
                d["variant"],
                float(d["beta"]),
                bool(d["complete"]),
                list(d.get("heads", [])),
                float(d.get("seconds", 0.0)),
                d.get("note", ""),
            )
        except (KeyError, TypeError) as e:
            raise InputError(f"not a rule-program JSON (missing or bad field {e})") from None

    def save(self, path: str | os.PathLike) -> None:
        """``.json`` (reloadable) or ``.dl`` / anything else (Datalog text)."""
        p = str(path)
        if p.endswith(".json"):
            atomic_write_text(p, json.dumps(self.to_json(), indent=1) + "\n")
        else:
            atomic_write_text(p, self.to_datalog())

    @classmethod
    def load(cls, path: str | os.PathLike) -> RuleProgram:
        if not os.path.exists(path):
            raise InputFileError(
                f"{path} does not exist; expected a rules JSON written by `drum-rules extract`"
            )
        from iclr24.paperkit.io import read_text

        try:
            d = json.loads(read_text(path, "rules JSON"))
        except json.JSONDecodeError as e:
            raise InputFileError(
                f"{path} is not JSON ({e}); load the .json export, not the Datalog text", path
            ) from None
        try:
            return cls.from_json(d)
        except (KeyError, TypeError, AttributeError, IndexError) as e:
            raise InputFileError(
                f"{path} is JSON but not a rules file written by `drum-rules extract` ({type(e).__name__}: {e})",
                path,
            ) from None
