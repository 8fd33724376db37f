"""Claims, facts and papers: what a package's ``reproduce.py`` builds and what the reports show.

- ``Claim``: one experiment whose outcome was not known when its ``rule`` was written. Its verdict is never typed
  in: ``holds``/``fails`` is computed from ``rule``, a small arithmetic/boolean expression over ``ours``,
  ``baseline``, ``paper_value`` and any extra numbers in ``variables`` (``"ours <= 0.5 * baseline"``). In smoke mode
  a claim carries no verdict (``smoke``: pipeline only); ``skipped`` (real data missing) and ``error`` (its
  measurement raised) carry no numbers.
- ``Fact``: a closed form, a tabulated formula, a property that holds by construction, a set-up precondition. Shown
  apart from claims, never counted as reproduced.
- ``ClaimSet``: the builder ``run(config)`` returns: ``with claims.timed("name"): ... claims.add(...)``.
- ``ClaimSpec``: one row of a package's claims table (``CLAIMS`` at the top of its ``reproduce.py``): kind, rule,
  baseline, data, seeds and how they were chosen, budget; ``run_claims`` (:mod:`.paper`) executes a table.
- ``Paper`` (:mod:`.paper`): what a package registers under the ``iclr24.papers`` entry point. The rule
  language is in :mod:`.rules`, the tables and verdict counts in :mod:`.summary`.

Claim kinds (:data:`KINDS`): ``headline`` (the paper's central result as its abstract states it, one to three per
paper), ``supporting`` (another result the paper reports), ``check`` (a pipeline check on planted or synthetic data
whose answer is known, or a control against a deliberately weak model). Only headline and supporting claims count
as reproduced; checks are listed apart. What holds by construction is a ``Fact``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
import traceback
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from .rules import evaluate_rule

__all__ = [
    "BUDGETS",
    "KINDS",
    "MODES",
    "VERDICTS",
    "Claim",
    "ClaimSet",
    "ClaimSpec",
    "Fact",
    "RunConfig",
]

MODES = ("smoke", "quick", "full")
VERDICTS = ("holds", "fails", "inconclusive", "undecidable", "smoke", "skipped", "error")
KINDS = ("headline", "supporting", "check")
# CPU seconds a paper's whole run may take on an idle core, imports included (``Paper.budgets`` overrides per paper;
# a recorded run over its cap by more than 25 % fails the tests)
BUDGETS = {"smoke": 30.0, "quick": 60.0, "full": 600.0}
# verdicts that carry no numbers (a message says why)
_NO_NUMBERS = ("skipped", "error", "undecidable")


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
    the same-numbers-on-every-run guarantee does not cover.

    ``kind``: one of :data:`KINDS` (``""`` only in records written before claim kinds existed). ``undecidable``:
    the claim's power rule (:mod:`.power`) says its calibrated effect cannot be decided within the mode's budget;
    ``message`` says what it would need, ``details["power"]`` holds the plan."""

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
    kind: str = ""
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
        if self.kind not in ("", *KINDS):
            raise ValueError(f"Claim.kind must be one of {KINDS}, got {self.kind!r}")
        if self.paired is not None and self.status not in _NO_NUMBERS:
            self._init_paired()
            return
        if self.status in _NO_NUMBERS:
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
            test=p.get("test", "t"),
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
        if res.test == "sign":  # only then: records of t-interval claims keep their shape
            stored.update(test="sign", wins=res.wins, losses=res.losses, ties=res.ties, p_holds=res.p_holds,
                          p_fails=res.p_fails)  # fmt: skip
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
            "kind": self.kind,
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
            status=stored if stored in ("smoke", *_NO_NUMBERS) else "auto",
            message=d.get("message", ""),
            timing=bool(d.get("timing", False)),
            paired=d.get("paired"),
            kind=d.get("kind", ""),
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
        keys = ("paper", "name", "value", "description", "paper_value", "details", "timing")
        return cls(**{k: d[k] for k in keys if k in d})


@dataclass(frozen=True)
class RunConfig:
    """What ``Paper.run`` receives. ``out`` is the folder the paper writes into; artefact paths are recorded
    relative to ``root`` (default: ``out``). ``data_dir``: where real datasets live (None: paperkit's default).
    ``from_scratch``: retrain the shipped checkpoints with their recorded commands (:func:`.shipped.model_folder`)."""

    mode: str = "quick"
    seed: int = 0
    out: Path = Path("results")
    device: str = "cpu"
    progress: bool = True
    root: Path | None = None
    data_dir: Path | None = None
    from_scratch: bool = False

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


_EVAL_MODES = ("quick", "full")


def _mode_map(owner: str, name: str, value: Any, kind: Callable[[Any], Any]) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{owner}.{name} must map a mode ({MODES}) to its value, got {type(value).__name__}")
    bad = [m for m in value if m not in MODES]
    if bad:
        raise ValueError(f"{owner}.{name}: unknown mode(s) {bad}; modes are {MODES}")
    return {m: kind(v) for m, v in value.items()}


@dataclass(frozen=True, kw_only=True)
class ClaimSpec:
    """One row of a paper's claims table (``CLAIMS`` at the top of its ``reproduce.py``), fixed before any run.

    - ``id``: a short key (``run_claims`` finds the row's measurement under it); ``kind``: one of :data:`KINDS`;
      ``claim``, ``metric``, ``baseline``: the words the reports show; ``data``: what the claim runs on.
    - The rule: ``rule="ours <= 0.5 * baseline"`` (one measurement), or a paired rule ``better="higher"|"lower"``
      with ``margin`` or ``factor`` (:meth:`ClaimSet.paired`), decided by ``test="t"`` (the 95 % t-interval, the
      default) or ``test="sign"`` (the exact sign test, :mod:`.paired`; its power rule is the exact binomial one).
    - ``modes``: where the claim is decided (a claim not in a mode is not in that mode's report at all; smoke runs
      every claim of quick, pipeline only).
    - ``seeds``: per mode, the evaluated seeds (offsets added to the run's ``--seed``). With a ``calibration`` for
      that mode the power rule (:func:`.power.power_plan`) takes the first ``n`` of them, within ``budget[mode]``
      CPU seconds; a calibration that cannot be decided makes the claim ``undecidable``. Calibration seeds must
      not be evaluated seeds. ``seeds_why``: how the seeds (or the single deterministic run) were chosen.
    - ``budget``: per mode, the CPU seconds this claim may use (its share of the paper's budget).
    - ``min_seeds``: the power rule's floor, one int or per mode (``{"quick": 8, "full": 10}``).
    """

    id: str
    kind: str
    claim: str
    metric: str
    baseline: str
    data: str
    rule: str = ""
    better: str | None = None
    margin: float | None = None
    factor: float | None = None
    modes: tuple[str, ...] = _EVAL_MODES
    seeds: Mapping[str, tuple[int, ...]] | None = None
    calibration: Mapping[str, Any] | None = None
    budget: Mapping[str, float] | None = None
    seeds_why: str = ""
    paper_value: float | None = None
    power: float = 0.8
    min_seeds: int | Mapping[str, int] = 3
    timing: bool = False
    test: str = "t"

    def __post_init__(self) -> None:
        from .paired import TESTS
        from .power import Calibration

        for n in ("id", "claim", "metric", "baseline", "data"):
            _text("ClaimSpec", n, getattr(self, n))
        owner = f"ClaimSpec {self.id!r}"
        if self.kind not in KINDS:
            raise ValueError(f"ClaimSpec {self.id!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if bool(self.rule) == (self.better is not None):
            raise ValueError(f"{owner}: give either rule= or a paired better= (with margin/factor)")
        if self.better is not None:
            if self.better not in ("higher", "lower"):
                raise ValueError(f"{owner}: better must be 'higher' or 'lower', got {self.better!r}")
            if self.margin is not None and self.factor is not None:
                raise ValueError(f"ClaimSpec {self.id!r}: give margin or factor, not both")
        if self.test not in TESTS or (self.test != "t" and self.better is None):
            raise ValueError(
                f"ClaimSpec {self.id!r}: test must be one of {TESTS}, and only with a paired better="
            )
        if isinstance(self.modes, str) or not self.modes or any(m not in _EVAL_MODES for m in self.modes):
            raise ValueError(f"ClaimSpec {self.id!r}: modes must be a non-empty tuple of {_EVAL_MODES}")
        object.__setattr__(self, "modes", tuple(self.modes))
        object.__setattr__(
            self, "seeds", _mode_map(owner, "seeds", self.seeds, lambda v: tuple(int(s) for s in v))
        )
        cal = _mode_map(owner, "calibration", self.calibration, lambda v: v)
        for m, c in cal.items():
            if not isinstance(c, Calibration):
                raise ValueError(f"{owner}: calibration[{m!r}] must be a paperkit.power.Calibration")
            if self.better is None:
                raise ValueError(f"{owner}: a calibration sizes paired seeds; this claim has no paired rule")
            if m not in self.seeds:
                raise ValueError(
                    f"{owner}: calibration[{m!r}] needs seeds[{m!r}], the pool of evaluated seeds"
                )
            shared = set(c.seeds) & set(self.seeds[m])
            if shared:
                raise ValueError(
                    f"{owner}: calibration seeds {sorted(shared)} are also evaluated seeds in {m}"
                )
        object.__setattr__(self, "calibration", cal)
        object.__setattr__(self, "budget", _mode_map(owner, "budget", self.budget, float))
        ms = self.min_seeds
        floors = _mode_map(owner, "min_seeds", ms, lambda v: v) if isinstance(ms, Mapping) else {"": ms}
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 2 for n in floors.values()):
            raise ValueError(f"{owner}: min_seeds must be an int >= 2 (or map a mode to one), got {ms!r}")
        for m in cal:
            if m not in self.budget:
                raise ValueError(
                    f"{owner}: calibration[{m!r}] needs budget[{m!r}] (CPU seconds) to size the seeds"
                )

    def in_mode(self, mode: str) -> bool:
        return (mode == "smoke" and "quick" in self.modes) or mode in self.modes

    def min_seeds_in(self, mode: str) -> int:
        """The power rule's floor in ``mode`` (smoke uses quick's)."""
        ms = self.min_seeds
        return ms.get("quick" if mode == "smoke" else mode, 3) if isinstance(ms, Mapping) else ms

    def plan(self, mode: str) -> Any:
        """The power plan for ``mode`` (``None`` for a claim without a calibration there; smoke uses quick's)."""
        from .power import power_plan

        m = "quick" if mode == "smoke" else mode
        cal = (self.calibration or {}).get(m)
        if cal is None:
            return None
        return power_plan(
            cal,
            better=self.better,
            margin=self.margin,
            factor=self.factor,
            budget_seconds=self.budget[m],
            power=self.power,
            min_seeds=self.min_seeds_in(m),
            max_seeds=len(self.seeds[m]),
            test=self.test,
        )

    def evaluated_seeds(self, mode: str, base: int = 0) -> list[int]:
        """The seeds this claim evaluates in ``mode`` (``base``: the run's ``--seed``, added to each): the first
        ``plan.seeds`` of the pool when calibrated, else the whole pool; smoke takes quick's first two."""
        if mode == "smoke":
            pool = (self.seeds or {}).get("smoke") or (self.seeds or {}).get("quick", ())[:2]
            return [base + s for s in pool]
        pool = (self.seeds or {}).get(mode, ())
        plan = self.plan(mode)
        if plan is not None:
            if not plan.decidable:
                raise ValueError(f"claim {self.id!r} is undecidable in {mode}: {plan.reason}")
            pool = pool[: plan.seeds]
        return [base + s for s in pool]

    def record(self, mode: str) -> dict:
        """What a claim's ``details["spec"]`` records of its row."""
        m = "quick" if mode == "smoke" else mode
        return {
            "id": self.id,
            "data": self.data,
            "seeds_why": self.seeds_why,
            "budget_seconds": (self.budget or {}).get(m),
            "modes": list(self.modes),
        }

    def claim_kwargs(self, mode: str, kwargs: Mapping[str, Any], paired: bool = False) -> dict:
        """``kwargs`` for :class:`Claim` with the row's fields filled in (an explicit keyword wins for the numbers
        and details only; the words, kind and rule are the row's)."""
        fixed = {"kind", "claim", "metric", "baseline_name"} | ({"rule"} if not paired else set())
        clash = fixed & set(kwargs)
        if clash:
            raise ValueError(f"claim {self.id!r}: {sorted(clash)} come from its ClaimSpec; do not pass them")
        if not self.in_mode(mode):
            raise ValueError(f"claim {self.id!r} is not a {mode} claim (its modes: {self.modes})")
        if not paired and self.better is not None:
            raise ValueError(f"claim {self.id!r} is a paired claim: add it with ClaimSet.paired(spec=...)")
        out = dict(kwargs)
        out.update(kind=self.kind, claim=self.claim, metric=self.metric, baseline_name=self.baseline)
        if not paired:
            out["rule"] = self.rule
        out.setdefault("paper_value", self.paper_value)
        if self.timing:
            out["timing"] = True
        out["details"] = {**dict(out.get("details") or {}), "spec": self.record(mode)}
        return out


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
    dataset (``errors.DataMissing``, raised by the data folder) records a ``skipped`` claim naming the command that fetches it. In smoke mode
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

    def add(self, spec: ClaimSpec | None = None, **kwargs: Any) -> Claim:
        """Add a claim (``Claim``'s keyword arguments without ``paper``); returns it. With ``spec`` (a row of the
        package's claims table) the claim's kind, words, metric, baseline name, rule and paper value come from the
        row, and the row's data, seeds, reason and budget are recorded in ``details["spec"]``."""
        if spec is not None:
            kwargs = spec.claim_kwargs(self.mode, kwargs)
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
        spec: ClaimSpec | None = None,
        *,
        ours: Any,
        baseline: Any,
        better: str | None = None,
        margin: float | None = None,
        factor: float | None = None,
        seeds: Any = None,
        test: str | None = None,
        **kwargs: Any,
    ) -> Claim:
        """Add a claim decided over paired seeds (:mod:`.paired`): ``ours``/``baseline`` hold one value per seed
        (same data and initialisation within a pair); the rule is ``ours >= baseline - margin`` (``better="higher"``)
        or ``ours <= baseline + margin`` (``"lower"``), or with ``factor`` ``ours >=/<= factor * baseline``. The
        verdict is ``holds``/``fails``/``inconclusive`` from the 95 % t-interval of the per-seed quantity
        (``test="t"``) or from the exact sign test on its signs (``test="sign"``).

        With ``spec`` (a paired row of the claims table) ``better``/``margin``/``factor`` come from the row, and its
        power plan (the seed count and why) is recorded in ``details["power"]``; the number of pairs given must be
        the plan's."""
        if spec is not None:
            if better is not None or margin is not None or factor is not None or test is not None:
                raise ValueError(
                    f"claim {spec.id!r}: its rule comes from its ClaimSpec; do not pass better/margin/factor/test"
                )
            if spec.better is None:
                raise ValueError(f"claim {spec.id!r} is not a paired claim in its ClaimSpec (no better=)")
            better, margin, factor, test = spec.better, spec.margin, spec.factor, spec.test
            plan = spec.plan(self.mode)
            if plan is not None and self.mode != "smoke":
                n = len(list(ours))
                if n != plan.seeds:
                    raise ValueError(
                        f"claim {spec.id!r}: the power plan asks for {plan.seeds} paired seeds, got {n}"
                    )
                details = dict(kwargs.pop("details", {}) or {})
                details["power"] = plan.to_dict()
                kwargs["details"] = details
            kwargs = spec.claim_kwargs(self.mode, kwargs, paired=True)
        if better is None:
            raise ValueError("a paired claim needs better='higher' or 'lower'")
        if "rule" in kwargs:
            raise ValueError("a paired claim's rule is made from better/margin/factor; do not pass rule=")
        paired = {"ours": list(ours), "baseline": list(baseline), "better": better, "seeds": seeds}
        if test not in (None, "t"):
            paired["test"] = test
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

    def skip(
        self, claim: str, reason: str, seconds: float = 0.0, *, data: str | None = None, **kwargs: Any
    ) -> Claim:
        """Record a claim whose data is absent here (``skipped`` means that and nothing else): ``data`` names the
        missing dataset or checkpoint (required for a paper with a claims table); ``reason`` says how to get it."""
        details = dict(kwargs.pop("details", {}) or {})
        if data is not None:
            details["missing_data"] = _text("ClaimSet.skip", "data", data)
        return self.add(
            claim=claim, status="skipped", message=reason, seconds=seconds, details=details, **kwargs
        )

    def undecidable(self, spec: ClaimSpec, plan: Any = None, seconds: float = 0.0) -> Claim:
        """Record a claim its own calibration says cannot be decided within this mode's budget (:mod:`.power`):
        not run; the message says the seeds and CPU seconds it would need."""
        plan = plan if plan is not None else spec.plan(self.mode)
        if plan is None or plan.decidable:
            raise ValueError(f"claim {spec.id!r} is decidable at this budget; run it")
        kw = spec.claim_kwargs(self.mode, {}, paired=True)
        details = {**kw.pop("details"), "power": plan.to_dict()}
        keep = {k: kw[k] for k in ("claim", "kind", "metric", "baseline_name", "paper_value") if k in kw}
        return self.add(
            status="undecidable", message=f"undecidable at this budget: {plan.reason}", seconds=seconds,
            details=details, **keep,
        )  # fmt: skip

    def error(
        self, claim: str, message: str, seconds: float = 0.0, details: dict | None = None, kind: str = ""
    ) -> Claim:
        return self.add(
            claim=claim, status="error", message=message, seconds=seconds, details=details or {}, kind=kind
        )

    @contextmanager
    def timed(self, name: str, spec: ClaimSpec | None = None) -> Iterator[None]:
        """Time a measurement; claims added inside record its seconds. Exceptions become ``error``/``skipped``
        (of ``spec``'s kind, when the block measures one row of the claims table)."""
        from .errors import DataMissing

        _text("ClaimSet.timed", "name", name)
        if self._open is not None:
            raise RuntimeError("ClaimSet.timed blocks cannot be nested")
        self._open = []
        t0 = time.perf_counter()
        try:
            yield
        except DataMissing as e:
            self._close(time.perf_counter() - t0)
            self.skip(
                name, f"real data missing: {e}", seconds=time.perf_counter() - t0, data=str(getattr(e, "name", "") or e)[:200],
                kind=spec.kind if spec else "",
            )  # fmt: skip
        except Exception as e:  # noqa: BLE001 - one failing measurement must not stop the other claims
            self._close(time.perf_counter() - t0)
            tb = traceback.format_exc(limit=6)
            self.error(
                name, _one_line(e), seconds=time.perf_counter() - t0, details={"traceback": tb[-3000:]},
                kind=spec.kind if spec else "",
            )  # fmt: skip
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
