"""The pass-rule language of a claim: a small arithmetic/boolean expression over its numbers
(``"ours <= 0.5 * baseline"``), evaluated safely (an AST walk, no ``eval``)."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping
from typing import Any

__all__ = ["evaluate_rule"]

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_CMPOPS = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_FUNCS = {"abs": abs, "min": min, "max": max, "sqrt": math.sqrt, "log": math.log, "exp": math.exp}


def evaluate_rule(rule: str, variables: Mapping[str, float | None]) -> bool:
    """Evaluate a pass rule safely (no ``eval``): numbers, names from ``variables``, + - * / **, comparisons
    (chained too), ``and``/``or``/``not``, and abs/min/max/sqrt/log/exp. A name bound to ``None`` is an error."""
    if not isinstance(rule, str) or not rule.strip():
        raise ValueError(f"rule must be a non-empty expression string, got {rule!r}")
    try:
        tree = ast.parse(rule.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"rule {rule!r} is not a valid expression: {e.msg}") from None

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)
        ):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in variables:
                raise ValueError(f"rule {rule!r} uses unknown name {node.id!r}; known: {sorted(variables)}")
            v = variables[node.id]
            if v is None:
                raise ValueError(f"rule {rule!r} uses {node.id!r}, which is null for this claim")
            return v
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not ev(node.operand)
        if isinstance(node, ast.BoolOp):
            vals = [bool(ev(v)) for v in node.values]
            return all(vals) if isinstance(node.op, ast.And) else any(vals)
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, comp in zip(node.ops, node.comparators):
                if type(op) not in _CMPOPS:
                    raise ValueError(f"rule {rule!r}: comparison {type(op).__name__} is not allowed")
                right = ev(comp)
                if not _CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS
            and not node.keywords
        ):
            return _FUNCS[node.func.id](*[ev(a) for a in node.args])
        raise ValueError(f"rule {rule!r}: {ast.dump(node)[:60]} is not allowed in a rule")

    return bool(ev(tree))
