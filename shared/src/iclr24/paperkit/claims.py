"""`Claim` (one checked claim of a paper), `Paper` (what a package registers), `RunConfig`, and the report writers.

A claim's ``holds`` is never typed in: it is computed from ``rule``, a small arithmetic/boolean expression over
``ours``, ``baseline``, ``paper_value`` and any extra named numbers given in ``variables``, e.g.
``"ours <= 0.5 * baseline"`` or ``"ours >= baseline and ours_std < 0.1"``.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .io import atomic_write_json, atomic_write_text

__all__ = [
    "MODES",
    "Claim",
    "Paper",
    "RunConfig",
    "evaluate_rule",
    "claims_to_markdown",
    "write_claims_json",
    "write_claims_markdown",
]

MODES = ("smoke", "quick", "full")

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


def _finite(name: str, value: Any, allow_none: bool) -> float | None:
    if value is None:
        if allow_none:
            return None
        raise ValueError(f"Claim.{name} must be a finite number, got None")
    if isinstance(value, bool):
        raise ValueError(f"Claim.{name} must be a number, got bool {value!r}")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"Claim.{name} must be a number, got {type(value).__name__} {value!r}") from None
    if not math.isfinite(f):
        raise ValueError(
            f"Claim.{name} must be finite, got {f!r} (a NaN/inf result is a failure to report, "
            "not a number to store)"
        )
    return f


def _check_json(name: str, obj: Any) -> None:
    try:
        json.dumps(obj, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"Claim.{name} must be JSON-serialisable with finite numbers: {e}") from None


@dataclass(frozen=True)
class Claim:
    """One checked claim of a paper. ``holds`` is computed from ``rule`` at construction."""

    paper: str
    claim: str
    metric: str
    ours: float
    baseline_name: str
    baseline: float | None
    rule: str
    paper_value: float | None = None
    seconds: float = 0.0
    details: dict = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)
    variables: dict = field(default_factory=dict)
    holds: bool = field(init=False)

    def __post_init__(self) -> None:
        for name in ("paper", "claim", "metric", "baseline_name", "rule"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"Claim.{name} must be a non-empty string, got {v!r}")
        object.__setattr__(self, "ours", _finite("ours", self.ours, False))
        object.__setattr__(self, "baseline", _finite("baseline", self.baseline, True))
        object.__setattr__(self, "paper_value", _finite("paper_value", self.paper_value, True))
        object.__setattr__(self, "seconds", _finite("seconds", self.seconds, False))
        if not isinstance(self.details, dict):
            raise ValueError(f"Claim.details must be a dict, got {type(self.details).__name__}")
        _check_json("details", self.details)
        arts = list(self.artifacts)
        for a in arts:
            if not isinstance(a, str) or os.path.isabs(a):
                raise ValueError(f"Claim.artifacts must be paths relative to --out, got {a!r}")
        object.__setattr__(self, "artifacts", arts)
        vars_ = {k: _finite(f"variables[{k!r}]", v, False) for k, v in dict(self.variables).items()}
        object.__setattr__(self, "variables", vars_)
        env = {"ours": self.ours, "baseline": self.baseline, "paper_value": self.paper_value, **vars_}
        object.__setattr__(self, "holds", evaluate_rule(self.rule, env))

    def to_dict(self) -> dict:
        """The serialised form (the schema of claims.json); extra rule variables travel inside ``details``."""
        details = dict(self.details)
        if self.variables:
            details["rule_variables"] = dict(self.variables)
        return {
            "paper": self.paper,
            "claim": self.claim,
            "metric": self.metric,
            "ours": self.ours,
            "baseline_name": self.baseline_name,
            "baseline": self.baseline,
            "paper_value": self.paper_value,
            "rule": self.rule,
            "holds": self.holds,
            "seconds": self.seconds,
            "details": details,
            "artifacts": list(self.artifacts),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Claim:
        """Rebuild a claim; ``holds`` is recomputed and must agree with the stored value."""
        details = dict(d.get("details", {}))
        variables = details.pop("rule_variables", {})
        c = cls(
            paper=d["paper"],
            claim=d["claim"],
            metric=d["metric"],
            ours=d["ours"],
            baseline_name=d["baseline_name"],
            baseline=d.get("baseline"),
            rule=d["rule"],
            paper_value=d.get("paper_value"),
            seconds=d.get("seconds", 0.0),
            details=details,
            artifacts=list(d.get("artifacts", [])),
            variables=variables,
        )
        if "holds" in d and bool(d["holds"]) != c.holds:
            raise ValueError(
                f"stored holds={d['holds']} disagrees with its rule {c.rule!r} (recomputed {c.holds})"
            )
        return c


@dataclass(frozen=True)
class RunConfig:
    """What ``Paper.run`` receives. ``out`` is the folder the paper may write into (``root/<paper name>`` under
    ``iclr24 reproduce``); ``root`` is the report folder that artifact paths are relative to."""

    mode: str = "quick"
    seed: int = 0
    out: Path = Path("results")
    device: str = "cpu"
    progress: bool = True
    root: Path | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")
        object.__setattr__(self, "out", Path(self.out))
        object.__setattr__(self, "root", Path(self.root) if self.root is not None else Path(self.out))

    def artifact(self, path: str | os.PathLike) -> str:
        """The path to record in ``Claim.artifacts`` for a file written under ``out``: relative to ``root``."""
        p = Path(path)
        if not p.is_absolute():
            p = self.out / p
        return os.path.relpath(p.resolve(), Path(self.root).resolve())

    def pick(self, smoke: Any, quick: Any, full: Any) -> Any:
        """Choose a value by mode: ``cfg.pick(smoke=SMOKE, quick=QUICK, full=FULL)``."""
        return {"smoke": smoke, "quick": quick, "full": full}[self.mode]


@dataclass(frozen=True)
class Paper:
    """What a paper package registers under the ``iclr24.papers`` entry-point group."""

    name: str
    title: str
    summary: str
    run: Callable[[RunConfig], list[Claim]]

    def __post_init__(self) -> None:
        for n in ("name", "title", "summary"):
            if not isinstance(getattr(self, n), str) or not getattr(self, n).strip():
                raise ValueError(f"Paper.{n} must be a non-empty string")
        if not callable(self.run):
            raise ValueError("Paper.run must be callable: run(config: RunConfig) -> list[Claim]")

    def check(self, config: RunConfig) -> list[Claim]:
        """Run the claim checks and validate what came back."""
        claims = self.run(config)
        if not isinstance(claims, list | tuple) or not all(isinstance(c, Claim) for c in claims):
            raise TypeError(f"{self.name}: run() must return a list of Claim, got {type(claims).__name__}")
        return list(claims)


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    a = abs(v)
    if a != 0 and (a < 1e-3 or a >= 1e5):
        return f"{v:.3e}"
    return f"{v:.4g}"


def claims_to_markdown(claims: list[Claim]) -> str:
    """A Markdown table: paper, claim, ours, baseline, paper's number, rule, holds, seconds."""
    lines = [
        "| paper | claim | metric | ours | baseline | paper's number | rule | holds | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in claims:
        base = (
            f"{_fmt(c.baseline)} ({c.baseline_name})" if c.baseline is not None else f"- ({c.baseline_name})"
        )
        cells = [
            c.paper,
            c.claim,
            c.metric,
            _fmt(c.ours),
            base,
            _fmt(c.paper_value),
            f"`{c.rule}`",
            "yes" if c.holds else "**no**",
            f"{c.seconds:.1f}",
        ]
        lines.append("| " + " | ".join(s.replace("|", "\\|").replace("\n", " ") for s in cells) + " |")
    return "\n".join(lines) + "\n"


def write_claims_json(path: str | os.PathLike, claims: list[Claim], **extra: Any) -> Path:
    """Atomically write ``{**extra, "claims": [...]}`` as JSON."""
    return atomic_write_json(path, {**extra, "claims": [c.to_dict() for c in claims]})


def write_claims_markdown(path: str | os.PathLike, claims: list[Claim], title: str | None = None) -> Path:
    text = (f"# {title}\n\n" if title else "") + claims_to_markdown(claims)
    return atomic_write_text(path, text)
