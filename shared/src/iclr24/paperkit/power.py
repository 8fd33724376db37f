"""Seeds from a power rule, fixed before the run.

A paired claim (:mod:`.paired`) is decided by the 95 % t-interval of its per-seed quantity ``d`` (the slack in the
rule's own form). With ``n`` seeds the interval's half width is ``t_{0.975, n-1} * sd / sqrt(n)``, so three seeds
(t = 4.30) decide only effects of more than 2.5 standard deviations. :func:`power_plan` sizes ``n`` from
*calibration* seeds, disjoint from the evaluated ones and measured before the run: with the calibrated mean
``mu`` and standard deviation ``sd`` of ``d``, it returns the smallest ``n >= min_seeds`` with

    (t_{0.975, n-1} + t_{power, n-1}) * sd / sqrt(n) <= |mu|                          (paired-t sample size)

so that if the effect is as calibrated the interval excludes zero (a holds when ``mu > 0``, a fails when
``mu < 0``) with probability about ``power``. ``n`` is capped by the claim's CPU budget
(``budget_seconds / seconds_per_seed``); a claim whose calibration needs more seeds than the budget allows is
**undecidable at this budget**: it is not run to a foregone inconclusive, and the plan says how many seeds and CPU
seconds it would need.

A claim decided by the exact sign test (``test="sign"``, :mod:`.paired`) is sized by that test's own exact power
instead: with ``p_win``/``p_loss`` the fractions of calibration seeds whose slack is above/below zero, the number of
discordant seeds among ``n`` is Binomial(n, p_win + p_loss) and the wins among them Binomial(d, p_win / (p_win +
p_loss)); :func:`sign_seeds_needed` returns the smallest ``n`` whose probability of the calibrated verdict (holds
when ``p_win > p_loss``, fails otherwise) is at least ``power``. No discordant calibration seed, or as many wins as
losses, means no ``n`` decides it.

The calibration (seeds, per-seed values, where and when they were measured) travels into the claim's record.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from importlib.resources import files
from pathlib import Path
from typing import Any

from .io import atomic_write_text
from .io import fields_dict
from .paired import CONFIDENCE
from .paired import TESTS
from .paired import binomial_half_tail
from .paired import t_quantile_975

__all__ = [
    "CALIBRATION_FILE",
    "Calibration",
    "PowerPlan",
    "calibration_path",
    "calibration_table",
    "merge_by_seed",
    "power_plan",
    "sign_seeds_needed",
    "slacks",
    "t_quantile",
    "update_calibration_table",
    "write_calibration_table",
]

# The data file in which a package keeps the per-seed numbers its calibrate script measured (package data, next to
# its reproduce.py), so that no table is copied by hand from a script's output into code.
CALIBRATION_FILE = "calibration.json"

_MAX_SEEDS = 1000  # beyond this a plan is called undecidable whatever the budget


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def _t_cdf(t: float, df: int) -> float:
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (the CDF by the incomplete beta function,
    inverted by bisection to 1e-10)."""
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"degrees of freedom must be a positive int, got {df!r}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    if p == 0.975:
        return t_quantile_975(df)
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10:
            break
    return 0.5 * (lo + hi)


def slacks(
    ours: Sequence[float],
    baseline: Sequence[float],
    *,
    better: str,
    margin: float | None = None,
    factor: float | None = None,
) -> list[float]:
    """The per-seed quantity of a paired rule (the same form :func:`.paired.paired_verdict` decides)."""
    from .paired import paired_verdict

    return paired_verdict(ours, baseline, better=better, margin=margin, factor=factor).per_seed


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """Per-seed measurements of a claim on calibration seeds, taken before the evaluated run and never reused as
    evaluated seeds. ``ours``/``baseline``: one value per calibration seed, in the claim's metric (the power rule
    turns them into the rule's slack); ``seconds_per_seed``: CPU seconds one evaluated seed costs (both arms), on an
    idle machine; ``measured``: when, where and at which commit (also in the package's docs/calibration.md)."""

    seeds: tuple[int, ...]
    ours: tuple[float, ...]
    baseline: tuple[float, ...]
    seconds_per_seed: float
    measured: str
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        object.__setattr__(self, "ours", tuple(float(x) for x in self.ours))
        object.__setattr__(self, "baseline", tuple(float(x) for x in self.baseline))
        if len(self.seeds) < 2 or not len(self.seeds) == len(self.ours) == len(self.baseline):
            raise ValueError(
                f"a calibration needs at least 2 seeds with one ours and one baseline value each, got "
                f"{len(self.seeds)} seeds, {len(self.ours)} ours, {len(self.baseline)} baseline"
            )
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"calibration seeds must be distinct, got {self.seeds}")
        if not (isinstance(self.seconds_per_seed, int | float) and self.seconds_per_seed > 0):
            raise ValueError(f"seconds_per_seed must be a positive number, got {self.seconds_per_seed!r}")
        if not isinstance(self.measured, str) or not self.measured.strip():
            raise ValueError("a calibration must say when and where it was measured (measured='...')")

    def to_dict(self) -> dict:
        return fields_dict(self)


def _frozen(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _frozen(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return tuple(_frozen(v) for v in obj)
    return obj


def calibration_table(package: str, name: str = CALIBRATION_FILE) -> dict:
    """The calibration numbers ``package`` ships as data (the JSON file ``name`` beside its modules, written by
    its ``scripts/calibrate.py --write`` through :func:`write_calibration_table`), with every JSON list read as a
    tuple: the same values and types as a table written in Python."""
    resource = files(package).joinpath(name)
    if not resource.is_file():
        raise FileNotFoundError(
            f"{package} ships no calibration file {name!r} (its package data is incomplete)"
        )
    return _frozen(json.loads(resource.read_text(encoding="utf-8")))


def calibration_path(package: str, name: str = CALIBRATION_FILE) -> Path:
    """Where :func:`calibration_table` reads ``package``'s file: in a source checkout (an editable install) the file
    a calibrate script's ``--write`` updates."""
    return Path(str(files(package).joinpath(name)))


def merge_by_seed(
    seeds: Sequence[int],
    columns: dict[str, Sequence],
    new_seeds: Sequence[int],
    new_columns: dict[str, Sequence],
    *,
    add: bool = True,
) -> tuple[list[int], dict[str, list], list[int]]:
    """Per-seed ``columns`` (name -> one value per seed of ``seeds``) with ``new_columns`` (one value per seed of
    ``new_seeds``) merged in: a seed measured again gets its new values, every other seed keeps its own. A seed not
    in ``seeds`` is added (the seeds sorted) when ``add``, else left out. Returns ``(seeds, columns, left_out)``;
    ``new_columns`` may name only some of the columns (the others keep their values) unless it adds a seed."""
    seeds, new_seeds = [int(s) for s in seeds], [int(s) for s in new_seeds]
    for table_seeds, table in ((seeds, columns), (new_seeds, new_columns)):
        for name, col in table.items():
            if len(col) != len(table_seeds):
                raise ValueError(f"column {name!r} has {len(col)} values for {len(table_seeds)} seeds")
    if unknown := set(new_columns) - set(columns):
        raise ValueError(f"no column {sorted(unknown)} in the table (it has {list(columns)})")
    per_seed = {s: {k: v[i] for k, v in columns.items()} for i, s in enumerate(seeds)}
    left_out = []
    for i, s in enumerate(new_seeds):
        if s not in per_seed:
            if not add:
                left_out.append(s)
                continue
            if missing := set(columns) - set(new_columns):
                raise ValueError(f"seed {s} is new, so it needs every column; {sorted(missing)} not given")
            per_seed[s] = {}
        per_seed[s].update({k: v[i] for k, v in new_columns.items()})
    order = seeds if len(per_seed) == len(seeds) else sorted(per_seed)
    return order, {k: [per_seed[s][k] for s in order] for k in columns}, left_out


def update_calibration_table(path: str | os.PathLike, merge: Callable[[dict], dict | None]) -> Path:
    """Read the calibration file at ``path`` (JSON lists as lists), let ``merge`` change it (in place, or return the
    new table) and write it back through :func:`write_calibration_table`. Nothing is written when ``merge`` raises
    or leaves the table as it was (a run none of whose numbers has a place in the file). Returns ``path``."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    table = json.loads(text)
    new = merge(table)
    new = table if new is None else new
    if new != json.loads(text):
        write_calibration_table(path, new)
    return path


def _table_json(obj: Any, indent: str = "") -> str:
    if isinstance(obj, dict) and obj:
        inner = indent + "  "
        rows = [f"{inner}{json.dumps(str(k))}: {_table_json(v, inner)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(rows) + "\n" + indent + "}"
    if isinstance(obj, list | tuple):
        return "[" + ", ".join(_table_json(v, indent) for v in obj) + "]"
    return json.dumps(obj, allow_nan=False)


def write_calibration_table(path: str | os.PathLike, table: dict) -> Path:
    """Write ``table`` atomically as the JSON :func:`calibration_table` reads back: nested objects indented, each
    list of numbers on one line (one row of per-seed values a line, easy to diff). Refuses NaN and infinities."""
    if not isinstance(table, dict):
        raise TypeError(f"a calibration table is a dict, got {type(table).__name__}")
    return atomic_write_text(path, _table_json(table) + "\n")


@dataclass(frozen=True)
class PowerPlan:
    """What :func:`power_plan` decides. ``seeds``: how many paired seeds to run (``None`` when undecidable);
    ``needed_seeds``/``needed_seconds``: what deciding the claim would take if the effect is as calibrated
    (``None`` when no number of seeds would); ``reason``: the plan in one sentence."""

    decidable: bool
    seeds: int | None
    needed_seeds: int | None
    needed_seconds: float | None
    reason: str
    mean: float
    sd: float
    power: float
    min_seeds: int
    max_seeds: int
    budget_seconds: float
    seconds_per_seed: float
    calibration: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return fields_dict(self, rename={"mean": "calibrated_mean", "sd": "calibrated_sd"})


def _positive(name: str, v: float) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {v!r}")
    return float(v)


def seeds_needed(mean: float, sd: float, *, power: float = 0.8, min_seeds: int = 3) -> int | None:
    """The smallest ``n >= min_seeds`` whose interval excludes zero with probability ``power`` when the per-seed
    quantity has this mean and sd (``None``: no n up to :data:`_MAX_SEEDS` does)."""
    if mean == 0.0:
        return None
    if sd == 0.0:
        return min_seeds
    for n in range(max(2, min_seeds), _MAX_SEEDS + 1):
        if (t_quantile_975(n - 1) + t_quantile(power, n - 1)) * sd / math.sqrt(n) <= abs(mean):
            return n
    return None


def _log_binom_pmf(k: int, n: int, p: float) -> float:
    if p <= 0.0:
        return 0.0 if k == 0 else -math.inf
    if p >= 1.0:
        return 0.0 if k == n else -math.inf
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p)
            + (n - k) * math.log1p(-p))  # fmt: skip


def sign_seeds_needed(p_win: float, p_loss: float, *, power: float = 0.8, min_seeds: int = 3) -> int | None:
    """The smallest ``n >= min_seeds`` at which the exact sign test (:func:`.paired.paired_verdict`,
    ``test="sign"``) reaches the verdict the calibration points to (holds if ``p_win > p_loss``, else fails) with
    probability ``power``, when each seed independently wins with ``p_win``, loses with ``p_loss`` and ties
    otherwise (``None``: no n up to :data:`_MAX_SEEDS` does, e.g. ``p_win == p_loss``)."""
    for name, v in (("p_win", p_win), ("p_loss", p_loss)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must be a probability, got {v!r}")
    if p_win + p_loss > 1.0 + 1e-12:
        raise ValueError(f"p_win + p_loss must be <= 1, got {p_win} + {p_loss}")
    disc = min(1.0, p_win + p_loss)
    if disc == 0.0 or p_win == p_loss:
        return None
    q = max(p_win, p_loss) / disc  # the chance that a discordant seed goes the calibrated way
    alpha = (1 - CONFIDENCE) / 2
    # for d discordant seeds: the fewest going the calibrated way that decide (k with P(X >= k | d) <= alpha),
    # and the chance of at least that many
    # (that fewest count never falls as d grows, so one walk finds it for every d)
    decide = [0.0]
    k = 1
    for d in range(1, _MAX_SEEDS + 1):
        while k <= d and binomial_half_tail(k, d) > alpha:
            k += 1
        decide.append(sum(math.exp(_log_binom_pmf(j, d, q)) for j in range(k, d + 1)) if k <= d else 0.0)
        if d >= max(2, min_seeds):
            n = d
            prob = sum(math.exp(_log_binom_pmf(j, n, disc)) * decide[j] for j in range(n + 1))
            if prob >= power:
                return n
    return None


def power_plan(
    calibration: Calibration,
    *,
    better: str,
    margin: float | None = None,
    factor: float | None = None,
    budget_seconds: float,
    power: float = 0.8,
    min_seeds: int = 3,
    max_seeds: int | None = None,
    test: str = "t",
) -> PowerPlan:
    """How many paired seeds decide this claim within ``budget_seconds`` if the effect is as calibrated.

    ``better``/``margin``/``factor`` are the claim's rule (as in :meth:`.claims.ClaimSet.paired`); ``max_seeds``
    caps the count further (e.g. the evaluated seeds available); ``test`` is the claim's test (``"t"`` or
    ``"sign"``, whose plan is the exact binomial one). See the module docstring for the rule."""
    if not isinstance(calibration, Calibration):
        raise ValueError(f"calibration must be a Calibration, got {type(calibration).__name__}")
    budget = _positive("budget_seconds", budget_seconds)
    if not 0.5 <= power < 1.0:
        raise ValueError(f"power must be in [0.5, 1), got {power!r}")
    if isinstance(min_seeds, bool) or not isinstance(min_seeds, int) or min_seeds < 2:
        raise ValueError(f"min_seeds must be an int >= 2, got {min_seeds!r}")
    d = slacks(calibration.ours, calibration.baseline, better=better, margin=margin, factor=factor)
    n_cal = len(d)
    mean = sum(d) / n_cal
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n_cal - 1))
    per_seed = float(calibration.seconds_per_seed)
    cap = int(budget // per_seed)
    if max_seeds is not None:
        cap = min(cap, int(max_seeds))
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    cal = {**calibration.to_dict(), "per_seed_slack": d}
    if test == "sign":
        wins, losses = sum(x > 0 for x in d), sum(x < 0 for x in d)
        needed = sign_seeds_needed(wins / n_cal, losses / n_cal, power=power, min_seeds=min_seeds)
        cal.update(test="sign", wins=wins, losses=losses, ties=n_cal - wins - losses)
        direction = "holds" if wins > losses else "fails"
    else:
        needed = seeds_needed(mean, sd, power=power, min_seeds=min_seeds)
        direction = "holds" if mean > 0 else "fails"
    common = dict(
        mean=mean,
        sd=sd,
        power=power,
        min_seeds=min_seeds,
        max_seeds=cap,
        budget_seconds=budget,
        seconds_per_seed=per_seed,
        calibration=cal,
    )
    stats = f"calibrated slack {mean:+.4g} (sd {sd:.3g}) over {n_cal} calibration seeds"
    if test == "sign":
        stats = (f"calibrated signs over {n_cal} calibration seeds: {cal['wins']} for, {cal['losses']} against, "
                 f"{cal['ties']} ties (exact sign test)")  # fmt: skip
    if needed is None:
        return PowerPlan(
            decidable=False,
            seeds=None,
            needed_seeds=None,
            needed_seconds=None,
            reason=f"{stats}: no number of seeds up to {_MAX_SEEDS} decides it (the calibrated effect is nil)",
            **common,
        )
    cost = needed * per_seed
    if needed > cap:
        return PowerPlan(
            decidable=False,
            seeds=None,
            needed_seeds=needed,
            needed_seconds=cost,
            reason=(
                f"{stats}: deciding it ({direction} expected) needs {needed} paired seeds, about {cost:.0f} CPU s, "
                f"over this mode's budget of {budget:.0f} CPU s ({cap} seeds at {per_seed:.3g} s each)"
            ),
            **common,
        )
    return PowerPlan(
        decidable=True,
        seeds=needed,
        needed_seeds=needed,
        needed_seconds=cost,
        reason=(
            f"{stats}: {needed} paired seeds decide it ({direction} expected) with power {power:.0%}, about "
            f"{cost:.0f} of the {budget:.0f} CPU s budget"
        ),
        **common,
    )
