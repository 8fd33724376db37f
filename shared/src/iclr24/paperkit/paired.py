"""Paired verdicts: a claim compared with its baseline over seeds, decided by a 95 % interval, not by one seed.

Each seed gives one pair (ours_i, baseline_i) on the same data and initialisation. The per-seed quantity is the
claim's own form:

- **difference** (``margin=m``): the rule is ``ours >= baseline - m`` (``better="higher"``) or
  ``ours <= baseline + m`` (``better="lower"``); the per-seed quantity is the slack ``d_i = ours_i - baseline_i + m``
  (``baseline_i - ours_i + m`` for "lower"), and the rule holds on a seed when ``d_i >= 0``. ``m = 0`` asks for no
  loss, a negative ``m`` for a win by at least ``|m|``.
- **log-ratio** (``factor=k``): the rule is ``ours >= k * baseline`` (``better="higher"``) or ``ours <= k * baseline``
  (``better="lower"``); the per-seed quantity is ``d_i = log(ours_i / baseline_i) - log(k)`` (its negative for
  "lower"). Values must be positive.

The interval is the two-sided 95 % Student-t interval of the mean of ``d`` over the n seeds,
``mean(d) +- t_{0.975, n-1} * sd(d) / sqrt(n)`` (sd with n - 1 in the denominator). The claim **holds** when the rule
holds at the interval's conservative end (``low >= 0``), **fails** when it fails at the other end (``high < 0``), and
is **inconclusive** otherwise. One seed gives no interval, so it is always inconclusive.

``test="sign"`` decides the same per-seed quantity by the **exact sign test** instead, for per-seed outcomes whose
distribution a t-interval does not fit (bimodal slacks, 0/1 events such as "this seed collapsed"): the seeds with
``d_i > 0`` (wins) and ``d_i < 0`` (losses) are counted, ties (``d_i = 0``) dropped; under "no difference" the wins
are Binomial(wins + losses, 1/2). The claim **holds** when ``P(X >= wins) <= 0.025`` (the one-sided tail of the same
95 % two-sided level), **fails** when ``P(X >= losses) <= 0.025``, and is **inconclusive** otherwise. On paired 0/1
indicators this is the exact McNemar test: ties are the concordant seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass

__all__ = ["CONFIDENCE", "TESTS", "PairedResult", "binomial_half_tail", "paired_verdict", "t_quantile_975"]

CONFIDENCE = 0.95
TESTS = ("t", "sign")  # the 95 % Student-t interval of the mean slack, or the exact sign test on its signs

# t_{0.975, df} for df = 1..30 (standard tables, 4 decimals).
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (table to 30, then the Cornish-Fisher
    expansion around the normal quantile, accurate to 1e-4 there)."""
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"degrees of freedom must be a positive int, got {df!r}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963984540054
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def binomial_half_tail(k: int, n: int) -> float:
    """``P(X >= k)`` for ``X ~ Binomial(n, 1/2)``, exact (integer arithmetic); 1 for ``k <= 0``, 0 for ``k > n``."""
    if (
        isinstance(n, bool)
        or not isinstance(n, int)
        or n < 0
        or isinstance(k, bool)
        or not isinstance(k, int)
    ):
        raise ValueError(f"need ints n >= 0 and k, got k={k!r}, n={n!r}")
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return sum(math.comb(n, j) for j in range(k, n + 1)) / 2**n


@dataclass(frozen=True)
class PairedResult:
    """What :func:`paired_verdict` returns: the verdict, the per-seed quantity and its interval."""

    verdict: str  # "holds" | "fails" | "inconclusive"
    form: str  # "difference" | "log_ratio"
    better: str
    margin: float | None
    factor: float | None
    seeds: list[int]
    ours: list[float]
    baseline: list[float]
    per_seed: list[float]
    mean: float
    low: float
    high: float
    n: int
    confidence: float = CONFIDENCE
    test: str = "t"
    wins: int | None = (
        None  # sign test only: seeds with d > 0, d < 0, d == 0, and the one-sided exact p-values
    )
    losses: int | None = None
    ties: int | None = None
    p_holds: float | None = None
    p_fails: float | None = None

    @property
    def rule(self) -> str:
        """The rule in words, as reports show it."""
        op = ">=" if self.better == "higher" else "<="
        if self.form == "log_ratio":
            core = f"ours {op} {self.factor:g} * baseline"
        elif not self.margin:
            core = f"ours {op} baseline"
        else:
            sign = "-" if (self.better == "higher") == (self.margin > 0) else "+"
            core = f"ours {op} baseline {sign} {abs(self.margin):g}"
        how = "exact sign test" if self.test == "sign" else "95 % t-interval"
        return f"{core} (paired over {self.n} seeds, {how})"

    def to_dict(self) -> dict:
        return {**asdict(self), "rule": self.rule}


def _values(name: str, xs: Sequence[float]) -> list[float]:
    if isinstance(xs, str | bytes) or not hasattr(xs, "__len__"):
        raise ValueError(f"{name} must be a sequence of per-seed numbers, got {type(xs).__name__}")
    out = []
    for x in xs:
        if isinstance(x, bool):
            raise ValueError(f"{name} must hold numbers, got bool {x!r}")
        try:
            f = float(x)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must hold numbers, got {x!r}") from None
        if not math.isfinite(f):
            raise ValueError(f"{name} must hold finite numbers, got {f!r}")
        out.append(f)
    return out


def paired_verdict(
    ours: Sequence[float],
    baseline: Sequence[float],
    *,
    better: str,
    margin: float | None = None,
    factor: float | None = None,
    seeds: Sequence[int] | None = None,
    test: str = "t",
) -> PairedResult:
    """Decide ``ours`` against ``baseline`` over paired seeds (see the module docstring for the rule).

    Give either ``margin`` (difference form; default 0) or ``factor`` (log-ratio form), not both. ``test``: ``"t"``
    (the 95 % t-interval of the mean slack) or ``"sign"`` (the exact sign test on the slacks' signs)."""
    a, b = _values("ours", ours), _values("baseline", baseline)
    if len(a) != len(b) or not a:
        raise ValueError(f"ours and baseline need one value per seed each, got {len(a)} and {len(b)}")
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', got {better!r}")
    if margin is not None and factor is not None:
        raise ValueError("give either margin (difference form) or factor (ratio form), not both")
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    seeds_ = list(range(len(a))) if seeds is None else [int(s) for s in seeds]
    if len(seeds_) != len(a) or len(set(seeds_)) != len(seeds_):
        raise ValueError(f"seeds must be {len(a)} distinct ints (one per pair), got {list(seeds or [])!r}")
    sign = 1.0 if better == "higher" else -1.0
    if factor is not None:
        k = _values("factor", [factor])[0]
        if k <= 0 or any(x <= 0 for x in a + b):
            raise ValueError("the ratio form needs a positive factor and positive values on both sides")
        form, m = "log_ratio", None
        d = [sign * (math.log(x / y) - math.log(k)) for x, y in zip(a, b)]
    else:
        m = 0.0 if margin is None else _values("margin", [margin])[0]
        form, k = "difference", None
        d = [sign * (x - y) + m for x, y in zip(a, b)]
    n = len(d)
    mean = sum(d) / n
    if n < 2:
        low, high = -math.inf, math.inf
    else:
        sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
        half = t_quantile_975(n - 1) * sd / math.sqrt(n)
        low, high = mean - half, mean + half
    verdict = "holds" if low >= 0 else "fails" if high < 0 else "inconclusive"
    sign: dict = {}
    if test == "sign":
        wins, losses = sum(x > 0 for x in d), sum(x < 0 for x in d)
        p_holds, p_fails = binomial_half_tail(wins, wins + losses), binomial_half_tail(losses, wins + losses)
        alpha = (1 - CONFIDENCE) / 2
        verdict = "holds" if p_holds <= alpha else "fails" if p_fails <= alpha else "inconclusive"
        low, high = -math.inf, math.inf  # no interval: the verdict is the test's
        sign = dict(wins=wins, losses=losses, ties=n - wins - losses, p_holds=p_holds, p_fails=p_fails)
    return PairedResult(
        verdict=verdict,
        form=form,
        better=better,
        margin=m,
        factor=k,
        seeds=seeds_,
        ours=a,
        baseline=b,
        per_seed=d,
        mean=mean,
        low=low,
        high=high,
        n=n,
        test=test,
        **sign,
    )
