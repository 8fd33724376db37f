"""Claims, facts and papers: what a package's ``reproduce.py`` builds and what the reports show.

- ``Claim``: one experiment whose outcome was not known when its ``rule`` was written. Its verdict is never typed
  in: ``holds``/``fails`` is computed from ``rule``, a small arithmetic/boolean expression over ``ours``,
  ``baseline``, ``paper_value`` and any extra numbers in ``variables`` (``"ours <= 0.5 * baseline"``). In smoke mode
  a claim carries no verdict (``smoke``: pipeline only); ``skipped`` (real data missing) and ``error`` (its
  measurement raised) carry no numbers.
- ``Fact``: a closed form, a tabulated formula, a property that holds by construction, a set-up precondition. Shown
  apart from claims, never counted as reproduced.
- ``ClaimSet``: the builder ``run(config)`` returns: ``with claims.timed("name"): ... claims.add(...)``.
- ``Paper``: what a package registers under the ``iclr24.papers`` entry point.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import operator
import os
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .io import atomic_write_json, atomic_write_text

__all__ = [
    "MODES",
    "VERDICTS",
    "Claim",
    "ClaimSet",
    "Fact",
    "Paper",
    "RunConfig",
    "evaluate_rule",
    "claims_to_markdown",
    "facts_to_markdown",
    "write_claims_json",
    "write_claims_markdown",
]

MODES = ("smoke", "quick", "full")
VERDICTS = ("holds", "fails", "inconclusive", "smoke", "skipped", "error")

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


def _text(owner: str, name: str, v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"{owner}.{name} must be a non-empty string, got {v!r}")
    return v


def _artifacts(owner: str, arts: Any) -> list[str]:
    if isinstance(arts, str | os.PathLike):
        raise ValueError(f"{owner}.artifacts must be a list of paths, got the single path {arts!r}")
    out = []
    for a in arts:
        if not isinstance(a, str) or not a or os.path.isabs(a):
            raise ValueError(f"{owner}.artifacts must be paths relative to the paper's out folder, got {a!r}")
        out.append(a)
    return out


@dataclass(frozen=True, kw_only=True)
class Claim:
    """One checked claim of a paper (keyword arguments only).

    ``status`` is ``"auto"`` (the default: the verdict is ``holds`` or ``fails`` as the rule says), ``"smoke"``
    (the rule is checked to be evaluable but no verdict is kept), ``"skipped"`` or ``"error"`` (no numbers needed;
    ``message`` says why). After construction ``status`` is one of :data:`VERDICTS` and ``holds`` is ``True``,
    ``False`` or ``None`` (no verdict). ``rule_value`` is the rule evaluated on the numbers whatever the mode
    (``None`` for skipped/error records).

    ``paired``: a claim decided over paired seeds (:mod:`.paired`; build it with :meth:`ClaimSet.paired`): the dict
    holds the per-seed values and the form of the rule, and the verdict (``holds``, ``fails`` or ``inconclusive``)
    is recomputed from them; ``ours``/``baseline`` are the means. ``timing``: the claim's numbers are timings, which
    the same-numbers-on-every-run guarantee does not cover."""

    paper: str
    claim: str
    metric: str = ""
    ours: float | None = None
    baseline_name: str = ""
    baseline: float | None = None
    rule: str = ""
    paper_value: float | None = None
    seconds: float = 0.0
    details: dict = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)
    variables: dict = field(default_factory=dict)
    status: str = "auto"
    message: str = ""
    timing: bool = False
    paired: dict | None = None
    holds: bool | None = field(init=False)
    rule_value: bool | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _text("Claim", "paper", self.paper)
        _text("Claim", "claim", self.claim)
        if self.status not in ("auto", *VERDICTS):
            raise ValueError(f"Claim.status must be 'auto' or one of {VERDICTS}, got {self.status!r}")
        object.__setattr__(self, "seconds", _finite("seconds", self.seconds, False))
        if not isinstance(self.details, dict):
            raise ValueError(f"Claim.details must be a dict, got {type(self.details).__name__}")
        _check_json("details", self.details)
        object.__setattr__(self, "artifacts", _artifacts("Claim", self.artifacts))
        if not isinstance(self.message, str):
            raise ValueError(f"Claim.message must be a string, got {type(self.message).__name__}")
        if not isinstance(self.timing, bool):
            raise ValueError(f"Claim.timing must be a bool, got {self.timing!r}")
        if self.paired is not None and self.status not in ("skipped", "error"):
            self._init_paired()
            return
        if self.status in ("skipped", "error"):
            if not self.message.strip():
                raise ValueError(f"a {self.status} claim needs a message saying why")
            for name in ("ours", "baseline", "paper_value"):
                object.__setattr__(self, name, _finite(name, getattr(self, name), True))
            object.__setattr__(self, "holds", None)
            object.__setattr__(self, "rule_value", None)
            return
        for name in ("metric", "baseline_name"):
            _text("Claim", name, getattr(self, name))
        if not isinstance(self.rule, str) or not self.rule.strip():
            raise ValueError(
                f"Claim {self.claim!r} has no rule: give rule='ours >= baseline' or similar, fixed before the run"
            )
        object.__setattr__(self, "ours", _finite("ours", self.ours, False))
        object.__setattr__(self, "baseline", _finite("baseline", self.baseline, True))
        object.__setattr__(self, "paper_value", _finite("paper_value", self.paper_value, True))
        vars_ = {k: _finite(f"variables[{k!r}]", v, False) for k, v in dict(self.variables).items()}
        object.__setattr__(self, "variables", vars_)
        env = {"ours": self.ours, "baseline": self.baseline, "paper_value": self.paper_value, **vars_}
        value = evaluate_rule(self.rule, env)
        object.__setattr__(self, "rule_value", value)
        if self.status == "smoke":
            object.__setattr__(self, "holds", None)
        else:
            object.__setattr__(self, "status", "holds" if value else "fails")
            object.__setattr__(self, "holds", value)

    def _init_paired(self) -> None:
        from .paired import paired_verdict

        p = self.paired
        if not isinstance(p, dict) or not {"ours", "baseline", "better"} <= set(p):
            raise ValueError("Claim.paired must be a dict with per-seed 'ours', 'baseline' and 'better'")
        if self.status not in ("auto", "smoke", "holds", "fails", "inconclusive"):
            raise ValueError(f"a paired claim cannot have status {self.status!r}")
        for name in ("metric", "baseline_name"):
            _text("Claim", name, getattr(self, name))
        res = paired_verdict(
            p["ours"],
            p["baseline"],
            better=p["better"],
            margin=p.get("margin") if p.get("form", "difference") == "difference" else None,
            factor=p.get("factor") if p.get("form") == "log_ratio" else None,
            seeds=p.get("seeds"),
        )
        stored = {
            "form": res.form,
            "better": res.better,
            "margin": res.margin,
            "factor": res.factor,
            "seeds": res.seeds,
            "ours": res.ours,
            "baseline": res.baseline,
            "per_seed": res.per_seed,
            "mean": res.mean,
            "low": res.low if math.isfinite(res.low) else None,
            "high": res.high if math.isfinite(res.high) else None,
            "n": res.n,
            "confidence": res.confidence,
        }
        object.__setattr__(self, "paired", stored)
        object.__setattr__(self, "ours", sum(res.ours) / res.n)
        object.__setattr__(self, "baseline", sum(res.baseline) / res.n)
        object.__setattr__(self, "paper_value", _finite("paper_value", self.paper_value, True))
        object.__setattr__(self, "rule", res.rule)
        object.__setattr__(self, "variables", {})
        object.__setattr__(self, "rule_value", res.verdict == "holds")
        if self.status == "smoke":
            object.__setattr__(self, "holds", None)
        else:
            object.__setattr__(self, "status", res.verdict)
            object.__setattr__(self, "holds", {"holds": True, "fails": False}.get(res.verdict))

    @property
    def verdict(self) -> str:
        """One of :data:`VERDICTS`."""
        return self.status

    def to_dict(self) -> dict:
        """The serialised form (one entry of claims.json ``claims``); rule variables travel inside ``details``."""
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
            "verdict": self.status,
            "holds": self.holds,
            "message": self.message,
            "seconds": self.seconds,
            "timing": self.timing,
            "paired": self.paired,
            "details": details,
            "artifacts": list(self.artifacts),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Claim:
        """Rebuild a claim; a stored ``holds``/``fails`` verdict is recomputed from the rule and must agree."""
        details = dict(d.get("details", {}))
        variables = details.pop("rule_variables", {})
        stored = d.get("verdict")
        if stored is None:  # claims.json version 1: only `holds`
            stored = "holds" if d.get("holds") else "fails"
        if stored not in VERDICTS:
            raise ValueError(f"unknown verdict {stored!r}; expected one of {VERDICTS}")
        c = cls(
            paper=d["paper"],
            claim=d["claim"],
            metric=d.get("metric", ""),
            ours=d.get("ours"),
            baseline_name=d.get("baseline_name", ""),
            baseline=d.get("baseline"),
            rule=d.get("rule", ""),
            paper_value=d.get("paper_value"),
            seconds=d.get("seconds", 0.0),
            details=details,
            artifacts=list(d.get("artifacts", [])),
            variables=variables,
            status=stored if stored in ("smoke", "skipped", "error") else "auto",
            message=d.get("message", ""),
            timing=bool(d.get("timing", False)),
            paired=d.get("paired"),
        )
        if stored in ("holds", "fails", "inconclusive") and c.status != stored:
            raise ValueError(
                f"stored verdict {stored!r} disagrees with its rule {c.rule!r} (recomputed {c.status})"
            )
        return c


@dataclass(frozen=True, kw_only=True)
class Fact:
    """A number or statement that holds by construction: a closed form, a tabulated formula (a MAC or parameter
    count), a set-up precondition. Reported apart from claims and never counted as reproduced."""

    paper: str
    name: str
    value: float | int | str | bool
    description: str = ""
    paper_value: float | int | str | None = None
    details: dict = field(default_factory=dict)
    timing: bool = False

    def __post_init__(self) -> None:
        _text("Fact", "paper", self.paper)
        _text("Fact", "name", self.name)
        for n in ("value", "paper_value"):
            v = getattr(self, n)
            if v is None and n == "paper_value":
                continue
            if isinstance(v, bool | str):
                continue
            object.__setattr__(self, n, _finite(n, v, False) if not isinstance(v, int) else v)
        if not isinstance(self.details, dict):
            raise ValueError(f"Fact.details must be a dict, got {type(self.details).__name__}")
        _check_json("details", self.details)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Fact:
        return cls(
            **{
                k: d[k]
                for k in ("paper", "name", "value", "description", "paper_value", "details", "timing")
                if k in d
            }
        )


@dataclass(frozen=True)
class RunConfig:
    """What ``Paper.run`` receives. ``out`` is the folder the paper writes into; artefact paths are recorded
    relative to ``root`` (default: ``out``). ``data_dir``: where real datasets live (None: paperkit's default)."""

    mode: str = "quick"
    seed: int = 0
    out: Path = Path("results")
    device: str = "cpu"
    progress: bool = True
    root: Path | None = None
    data_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")
        object.__setattr__(self, "out", Path(self.out))
        object.__setattr__(self, "root", Path(self.root) if self.root is not None else Path(self.out))
        if self.data_dir is not None:
            object.__setattr__(self, "data_dir", Path(self.data_dir))

    def artifact(self, path: str | os.PathLike) -> str:
        """The path to record in ``Claim.artifacts`` for a file written under ``out``: relative to ``root``."""
        p = Path(path)
        if not p.is_absolute():
            p = self.out / p
        return os.path.relpath(p.resolve(), Path(self.root).resolve())

    def pick(self, smoke: Any, quick: Any, full: Any) -> Any:
        """Choose a value by mode: ``cfg.pick(smoke=SMOKE, quick=QUICK, full=FULL)``."""
        return {"smoke": smoke, "quick": quick, "full": full}[self.mode]


def _one_line(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg}"[:500]


class ClaimSet:
    """The claims, facts and artefacts of one run of a paper, built as the run measures::

        claims = ClaimSet("rdmc", cfg)
        with claims.timed("GMM, 3 seeds"):        # claims added inside record this block's seconds
            res = measure(...)
            claims.add(claim="...", metric="...", ours=res.a, baseline_name="ULA", baseline=res.b,
                       rule="ours <= baseline", artifacts=[claims.figure(fig, "gmm.png")])
        claims.fact("MACs per point", value=123, description="closed form of the architecture")
        return claims

    A ``timed`` block that raises records one ``error`` claim (one-line message) and the run goes on; a missing real
    dataset (``datadir.DataMissing``) records a ``skipped`` claim naming the command that fetches it. In smoke mode
    every added claim's verdict is ``smoke``.
    """

    def __init__(self, paper: str, config: RunConfig | None = None) -> None:
        self.paper = _text("ClaimSet", "paper", paper)
        self.config = config if config is not None else RunConfig(mode="quick")
        self.claims: list[Claim] = []
        self.facts: list[Fact] = []
        self.artifacts: list[str] = []
        self._t0 = time.perf_counter()
        self._open: list[int] | None = None  # indices of claims added in the open timed block

    # -- building --------------------------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return self.config.mode

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self._t0

    @property
    def partial(self) -> bool:
        """True when a measurement raised (some claims are ``error`` records)."""
        return any(c.status == "error" for c in self.claims)

    def add(self, **kwargs: Any) -> Claim:
        """Add a claim (``Claim``'s keyword arguments without ``paper``); returns it."""
        if "paper" in kwargs and kwargs["paper"] != self.paper:
            raise ValueError(f"claim of paper {kwargs['paper']!r} added to the claim set of {self.paper!r}")
        kwargs["paper"] = self.paper
        if self.mode == "smoke" and kwargs.get("status", "auto") == "auto":
            kwargs["status"] = "smoke"
        c = Claim(**kwargs)
        if self._open is not None:
            self._open.append(len(self.claims))
        self.claims.append(c)
        return c

    def paired(
        self,
        *,
        ours: Any,
        baseline: Any,
        better: str,
        margin: float | None = None,
        factor: float | None = None,
        seeds: Any = None,
        **kwargs: Any,
    ) -> Claim:
        """Add a claim decided over paired seeds (:mod:`.paired`): ``ours``/``baseline`` hold one value per seed
        (same data and initialisation within a pair); the rule is ``ours >= baseline - margin`` (``better="higher"``)
        or ``ours <= baseline + margin`` (``"lower"``), or with ``factor`` ``ours >=/<= factor * baseline``. The
        verdict is ``holds``/``fails``/``inconclusive`` from the 95 % t-interval of the per-seed quantity."""
        if "rule" in kwargs:
            raise ValueError("a paired claim's rule is made from better/margin/factor; do not pass rule=")
        paired = {"ours": list(ours), "baseline": list(baseline), "better": better, "seeds": seeds}
        if factor is not None:
            paired.update(form="log_ratio", factor=factor)
        else:
            paired.update(form="difference", margin=margin)
        return self.add(paired=paired, **kwargs)

    def fact(self, name: str, value: Any, description: str = "", **kwargs: Any) -> Fact:
        """Record a fact (holds by construction; never counted as a reproduced claim)."""
        f = Fact(paper=self.paper, name=name, value=value, description=description, **kwargs)
        self.facts.append(f)
        return f

    def skip(self, claim: str, reason: str, seconds: float = 0.0) -> Claim:
        """Record a claim that could not be checked here (e.g. its real dataset is missing)."""
        return self.add(claim=claim, status="skipped", message=reason, seconds=seconds)

    def error(self, claim: str, message: str, seconds: float = 0.0, details: dict | None = None) -> Claim:
        return self.add(claim=claim, status="error", message=message, seconds=seconds, details=details or {})

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Time a measurement; claims added inside record its seconds. Exceptions become ``error``/``skipped``."""
        try:
            from .datadir import DataMissing
        except ImportError:  # pragma: no cover - datadir ships with paperkit

            class DataMissing(FileNotFoundError):  # type: ignore[no-redef]
                pass

        _text("ClaimSet.timed", "name", name)
        if self._open is not None:
            raise RuntimeError("ClaimSet.timed blocks cannot be nested")
        self._open = []
        t0 = time.perf_counter()
        try:
            yield
        except DataMissing as e:
            self._close(time.perf_counter() - t0)
            self.skip(name, f"real data missing: {e}", seconds=time.perf_counter() - t0)
        except Exception as e:  # noqa: BLE001 - one failing measurement must not stop the other claims
            self._close(time.perf_counter() - t0)
            tb = traceback.format_exc(limit=6)
            self.error(
                name, _one_line(e), seconds=time.perf_counter() - t0, details={"traceback": tb[-3000:]}
            )
        else:
            self._close(time.perf_counter() - t0)

    def _close(self, seconds: float) -> None:
        for i in self._open or []:
            self.claims[i] = dataclasses.replace(self.claims[i], seconds=seconds)
        self._open = None

    def artifact(self, path: str | os.PathLike) -> str:
        """Register a file written under the config's ``out``; returns the path to put in ``artifacts=``."""
        a = self.config.artifact(path)
        if a not in self.artifacts:
            self.artifacts.append(a)
        return a

    def figure(self, fig: Any, filename: str) -> str:
        """Save a matplotlib figure atomically into ``out/filename`` (closed afterwards); returns its artefact path."""
        from .plots import save_figure

        return self.artifact(save_figure(fig, self.config.out / filename))

    # -- reading ---------------------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Claim]:
        return iter(self.claims)

    def __len__(self) -> int:
        return len(self.claims)

    def __getitem__(self, i: int) -> Claim:
        return self.claims[i]

    def counts(self) -> dict[str, int]:
        return {v: sum(c.status == v for c in self.claims) for v in VERDICTS}

    def to_dict(self) -> dict:
        arts = list(self.artifacts)
        for c in self.claims:
            arts += [a for a in c.artifacts if a not in arts]
        return {
            "claims": [c.to_dict() for c in self.claims],
            "facts": [f.to_dict() for f in self.facts],
            "artifacts": arts,
        }

    @classmethod
    def from_claims(cls, paper: str, config: RunConfig, claims: list[Claim]) -> ClaimSet:
        """Wrap a plain list of claims (the version-1 shape of ``run``); in smoke mode verdicts become ``smoke``."""
        cs = cls(paper, config)
        for c in claims:
            if config.mode == "smoke" and c.status in ("holds", "fails"):
                c = dataclasses.replace(c, status="smoke")
            cs.claims.append(c)
        return cs


@dataclass(frozen=True)
class Paper:
    """What a paper package registers under the ``iclr24.papers`` entry-point group. ``data``: the names of the
    real datasets (``iclr24 data list``) its ``--full`` run uses. ``threads``: the torch intra-op and BLAS/OpenMP
    thread count its claims run with, pinned by paperkit around every run whatever the machine's core count (1 by
    default; declare more only where the speed-up was measured: the pin is what keeps the numbers the same on every
    machine). ``paper_scale``: optional ``paper_scale(device) -> dict``, a few steps of the paper's own configuration
    (``iclr24 bench --paper-scale``)."""

    name: str
    title: str
    summary: str
    run: Callable[[RunConfig], ClaimSet | list[Claim]]
    data: tuple[str, ...] = ()
    threads: int = 1
    paper_scale: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        for n in ("name", "title", "summary"):
            if not isinstance(getattr(self, n), str) or not getattr(self, n).strip():
                raise ValueError(f"Paper.{n} must be a non-empty string")
        if not callable(self.run):
            raise ValueError("Paper.run must be callable: run(config: RunConfig) -> ClaimSet")
        if isinstance(self.data, str) or not all(isinstance(d, str) and d for d in self.data):
            raise ValueError(f"Paper.data must be a tuple of data names, got {self.data!r}")
        object.__setattr__(self, "data", tuple(self.data))
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise ValueError(f"Paper.threads must be a positive int, got {self.threads!r}")
        if self.paper_scale is not None and not callable(self.paper_scale):
            raise ValueError("Paper.paper_scale must be callable or None")

    def check(self, config: RunConfig) -> ClaimSet:
        """Run the claim checks, with torch and BLAS pinned to ``threads``, and validate what came back (a
        ``ClaimSet``, or a list of ``Claim``)."""
        from .threads import pinned_threads

        with pinned_threads(self.threads):
            res = self.run(config)
        if isinstance(res, ClaimSet):
            if res.paper != self.name:
                raise TypeError(f"{self.name}: run() returned the claims of paper {res.paper!r}")
            return res
        if isinstance(res, list | tuple) and all(isinstance(c, Claim) for c in res):
            return ClaimSet.from_claims(self.name, config, list(res))
        raise TypeError(f"{self.name}: run() must return a ClaimSet, got {type(res).__name__}")


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    a = abs(v)
    if a != 0 and (a < 1e-3 or a >= 1e5):
        return f"{v:.3e}"
    return f"{v:.4g}"


_VERDICT_CELL = {
    "holds": "yes",
    "fails": "**no**",
    "inconclusive": "inconclusive",
    "smoke": "smoke: pipeline only",
    "skipped": "skipped",
    "error": "**error**",
}


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def claims_to_markdown(claims: list[Claim] | ClaimSet) -> str:
    """A Markdown table: paper, claim, ours, baseline, paper's number, rule, verdict, seconds."""
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
            f"`{c.rule}`" if c.rule else "-",
            _VERDICT_CELL[c.status] + (f": {c.message}" if c.message else ""),
            f"{c.seconds:.1f}",
        ]
        lines.append("| " + " | ".join(_cell(s) for s in cells) + " |")
    return "\n".join(lines) + "\n"


def facts_to_markdown(facts: list[Fact]) -> str:
    """A Markdown table of facts: paper, fact, value, paper's value, description."""
    lines = ["| paper | fact | value | paper's value | description |", "|---|---|---|---|---|"]
    for f in facts:

        def show(v: Any) -> str:
            return _fmt(v) if isinstance(v, float) else "-" if v is None else str(v)

        cells = [f.paper, f.name, show(f.value), show(f.paper_value), f.description or "-"]
        lines.append("| " + " | ".join(_cell(s) for s in cells) + " |")
    return "\n".join(lines) + "\n"


def write_claims_json(path: str | os.PathLike, claims: list[Claim], **extra: Any) -> Path:
    """Atomically write ``{**extra, "claims": [...]}`` as JSON."""
    return atomic_write_json(path, {**extra, "claims": [c.to_dict() for c in claims]})


def write_claims_markdown(path: str | os.PathLike, claims: list[Claim], title: str | None = None) -> Path:
    text = (f"# {title}\n\n" if title else "") + claims_to_markdown(claims)
    return atomic_write_text(path, text)
