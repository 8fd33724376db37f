"""Boundary checks shared by the public functions: attention arrays, thresholds, rule sets and graph lists."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import describe


def check_attention(attn: object) -> np.ndarray:
    """Attention ``(L, T, K)`` of non-negative finite weights (L ranks, T steps, K = 2|R| + 1 operators)."""
    a = check_array(attn, "attn", ndim=3)
    if min(a.shape) < 1 or a.shape[2] < 2:
        raise InputError(f"attn must be (L, T, K) with L, T >= 1 and K >= 2 operators, got {describe(attn)}")
    if (a < 0).any():
        raise InputError("attn must hold non-negative weights (a softmax over operators)")
    return a


def check_beta(beta: object, name: str = "beta") -> float:
    """A finite threshold >= 0."""
    return check_float(beta, name, minimum=0.0)


def check_rules(rules: object) -> list:
    """A RuleProgram's rules, or an iterable of Rules, as a list."""
    from .rules import Rule
    from .rules import RuleProgram

    if isinstance(rules, RuleProgram):
        return list(rules.rules)
    if isinstance(rules, str | bytes) or not isinstance(rules, Iterable):
        raise InputError(f"rules must be a RuleProgram or an iterable of Rules, got {describe(rules)}")
    out = list(rules)
    if not all(isinstance(r, Rule) for r in out):
        raise InputError(f"rules must be Rules, got {describe(out)}")
    return out


def check_kgs(datasets: object, name: str = "datasets") -> list:
    """A non-empty list of KGs (one KG is a list of one)."""
    from .kg import KG

    if isinstance(datasets, KG):
        return [datasets]
    if isinstance(datasets, str | bytes) or not isinstance(datasets, Iterable):
        raise InputError(f"{name} must be a KG or a list of KGs, got {describe(datasets)}")
    out = list(datasets)
    if not out or not all(isinstance(k, KG) for k in out):
        raise InputError(f"{name} must be a non-empty list of KGs, got {describe(out)}")
    return out


def check_kg(kg: object, name: str = "kg"):
    from .kg import KG

    if not isinstance(kg, KG):
        raise InputError(f"{name} must be a KG, got {describe(kg)}")
    return kg


def check_heads(model: object, heads: Iterable[int] | None) -> list[int]:
    """The head relations to work on: ``heads`` (relation indices of ``model``), or the model's own heads."""
    from .model import DRUM

    if not isinstance(model, DRUM):
        raise InputError(f"model must be a DRUM, got {describe(model)}")
    if heads is not None and (isinstance(heads, str | bytes) or not isinstance(heads, Iterable)):
        raise InputError(f"heads must be relation indices, got {describe(heads)}")
    hs = list(model.head_relations if heads is None else heads)
    for h in hs:
        if isinstance(h, bool) or not isinstance(h, int | np.integer) or not 0 <= int(h) < model.n_relations:
            raise InputError(f"head relation {h} out of range [0, {model.n_relations})")
    return [int(h) for h in hs]
