"""Statistics of the paper (``persona/utils/significance_testing.py``), without statsmodels.

All tests compare paired 0/1 correctness vectors of a control persona and a treatment persona on the same questions.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from iclr24.paperkit.errors import InputError

__all__ = [
    "McNemarResult",
    "BinomialResult",
    "EXACT_CELL_THRESHOLD",
    "contingency_table",
    "mcnemar",
    "mcnemar_pairs",
    "binomial_test",
    "binomial_test_pairs",
    "wilson_interval",
    "wilson_overlap_test",
    "relative_drop",
    "bootstrap_relative_drop_ci",
    "adjust_pvalues",
    "sign_test_power",
    "min_detectable_rate",
]

#: Official switch: the exact McNemar test when any cell of the 2x2 table is below 25, else chi^2.
EXACT_CELL_THRESHOLD = 25


@dataclass(frozen=True)
class McNemarResult:
    """``statistic`` is min(n10, n01) for the exact test and the continuity-corrected chi^2 otherwise."""

    statistic: float
    pvalue: float
    exact: bool
    table: tuple[tuple[int, int], tuple[int, int]]

    def significant(self, alpha: float = 0.05) -> bool:
        """Official decision: reject H0 iff ``pvalue <= alpha``."""
        return self.pvalue <= alpha


@dataclass(frozen=True)
class BinomialResult:
    statistic: float  # observed proportion k / n
    pvalue: float
    k: int
    n: int
    p0: float
    alternative: str

    def significant(self, alpha: float = 0.05) -> bool:
        return self.pvalue <= alpha

    def __float__(self) -> float:
        return self.pvalue


def _count(name: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
        raise InputError(f"{name} must be a non-negative integer count, got {v!r}")
    return int(v)


def _binary(name: str, v: Sequence[int] | np.ndarray) -> np.ndarray:
    a = np.asarray(v)
    if a.ndim != 1:
        raise InputError(f"{name} must be a 1-D sequence of 0/1 outcomes, got shape {a.shape}")
    if a.size and not np.isin(a, (0, 1, True, False)).all():
        raise InputError(f"{name} must contain only 0/1 (or booleans)")
    return a.astype(np.int64)


def contingency_table(control: Sequence[int], treatment: Sequence[int]) -> tuple[int, int, int, int]:
    """``(n11, n10, n01, n00)``: first index control correct, second treatment correct."""
    c, t = _binary("control", control), _binary("treatment", treatment)
    if c.shape != t.shape:
        raise InputError(f"control and treatment must be paired (same length), got {c.size} and {t.size}")
    return (
        int(((c == 1) & (t == 1)).sum()),
        int(((c == 1) & (t == 0)).sum()),
        int(((c == 0) & (t == 1)).sum()),
        int(((c == 0) & (t == 0)).sum()),
    )


def mcnemar(n11: int, n10: int, n01: int, n00: int, exact: bool | None = None) -> McNemarResult:
    """McNemar's test on the table ``[[n11, n10], [n01, n00]]``.

    ``exact=None`` applies the official switch: exact if any cell < 25, else chi^2 with continuity correction.
    Exact: ``p = min(1, 2 * BinomCDF(min(n10, n01); n10 + n01, 1/2))``.
    chi^2: ``X = (|n10 - n01| - 1)^2 / (n10 + n01)``, ``p = P(chi^2_1 > X)`` (as statsmodels computes both).
    With no discordant pairs (n10 = n01 = 0) the p-value is 1."""
    n11, n10, n01, n00 = (_count(k, v) for k, v in (("n11", n11), ("n10", n10), ("n01", n01), ("n00", n00)))
    table = ((n11, n10), (n01, n00))
    if exact is None:
        exact = min(n11, n10, n01, n00) < EXACT_CELL_THRESHOLD
    b = n10 + n01
    if exact:
        stat = min(n10, n01)
        p = 1.0 if b == 0 else min(1.0, 2.0 * float(_st.binom.cdf(stat, b, 0.5)))
        return McNemarResult(float(stat), p, True, table)
    if b == 0:
        return McNemarResult(0.0, 1.0, False, table)
    stat = (abs(n10 - n01) - 1.0) ** 2 / b
    return McNemarResult(float(stat), float(_st.chi2.sf(stat, 1)), False, table)


def mcnemar_pairs(
    control: Sequence[int], treatment: Sequence[int], exact: bool | None = None
) -> McNemarResult:
    """McNemar's test on paired 0/1 correctness vectors (official ``run_mcnemar_test``)."""
    return mcnemar(*contingency_table(control, treatment), exact=exact)


_ALTERNATIVES = {
    "two-sided": "two-sided",
    "smaller": "less",
    "less": "less",
    "larger": "greater",
    "greater": "greater",
}


def binomial_test(k: int, n: int, p0: float, alternative: str = "two-sided") -> BinomialResult:
    """Exact binomial test of ``k`` successes in ``n`` trials against success probability ``p0``.

    ``alternative``: ``two-sided``, ``smaller`` (= ``less``: H1 p < p0) or ``larger`` (= ``greater``), the
    official names. ``smaller``: ``p = BinomCDF(k; n, p0)``; ``larger``: ``p = 1 - BinomCDF(k - 1; n, p0)``;
    two-sided: the sum of probabilities of outcomes no more likely than ``k`` (scipy's ``binomtest``)."""
    k, n = _count("k", k), _count("n", n)
    if n == 0:
        raise InputError("n must be positive (no trials to test)")
    if k > n:
        raise InputError(f"k must be <= n, got k={k}, n={n}")
    if not (isinstance(p0, int | float) and 0.0 <= p0 <= 1.0):
        raise InputError(f"p0 must be a probability in [0, 1], got {p0!r}")
    if alternative not in _ALTERNATIVES:
        raise InputError(f"alternative must be one of {', '.join(_ALTERNATIVES)}, got {alternative!r}")
    p = float(_st.binomtest(k, n, float(p0), alternative=_ALTERNATIVES[alternative]).pvalue)
    return BinomialResult(k / n, min(1.0, p), k, n, float(p0), alternative)


def binomial_test_pairs(
    control: Sequence[int], treatment: Sequence[int], alternative: str = "two-sided"
) -> BinomialResult:
    """Official ``run_binom_test``: the treatment's correct count against p0 = the control's accuracy."""
    c, t = _binary("control", control), _binary("treatment", treatment)
    if c.size != t.size or c.size == 0:
        raise InputError(f"control and treatment must be non-empty and paired, got {c.size} and {t.size}")
    return binomial_test(int(t.sum()), int(t.size), float(c.mean()), alternative=alternative)


def wilson_interval(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval for a proportion ``k/n`` at level ``1 - alpha``:

    ``(k + z^2/2) / (n + z^2)  -/+  z / (n + z^2) * sqrt(k (n - k) / n + z^2 / 4)``, ``z = Phi^-1(1 - alpha/2)``."""
    k, n = _count("k", k), _count("n", n)
    if n == 0:
        raise InputError("n must be positive for a confidence interval")
    if k > n:
        raise InputError(f"k must be <= n, got k={k}, n={n}")
    if not (0.0 < alpha < 1.0):
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    z = float(_st.norm.ppf(1.0 - alpha / 2.0))
    z2 = z * z
    center = (k + z2 / 2.0) / (n + z2)
    half = z / (n + z2) * math.sqrt(k * (n - k) / n + z2 / 4.0)
    # the exact bounds at k = 0 and k = n are 0 and 1; rounding must not put k/n outside its own interval
    lo = 0.0 if k == 0 else max(0.0, center - half)
    hi = 1.0 if k == n else min(1.0, center + half)
    return lo, hi


def wilson_overlap_test(control: Sequence[int], treatment: Sequence[int], alpha: float = 0.05) -> bool:
    """Official ``run_conf_score_test``: significant iff the two Wilson intervals do not overlap."""
    c, t = _binary("control", control), _binary("treatment", treatment)
    cl, ch = wilson_interval(int(c.sum()), int(c.size), alpha)
    tl, th = wilson_interval(int(t.sum()), int(t.size), alpha)
    return cl > th or tl > ch


def relative_drop(acc_base: float, acc_persona: float) -> float:
    """Relative accuracy drop ``(acc_base - acc_persona) / acc_base`` (negative = the persona is better)."""
    if not (0.0 <= acc_base <= 1.0 and 0.0 <= acc_persona <= 1.0):
        raise InputError(f"accuracies must be in [0, 1], got {acc_base} and {acc_persona}")
    if acc_base == 0.0:
        raise InputError("relative drop is undefined when the baseline accuracy is 0")
    return (acc_base - acc_persona) / acc_base


def bootstrap_relative_drop_ci(
    control: Sequence[int], treatment: Sequence[int], alpha: float = 0.05, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile CI of the relative drop from a paired bootstrap over questions (resampling (control, treatment)
    pairs together). Resamples whose baseline accuracy is 0 are dropped."""
    c, t = _binary("control", control), _binary("treatment", treatment)
    if c.size != t.size or c.size == 0:
        raise InputError(f"control and treatment must be non-empty and paired, got {c.size} and {t.size}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, c.size, size=(n_boot, c.size))
    cb, tb = c[idx].mean(axis=1), t[idx].mean(axis=1)
    ok = cb > 0
    if not ok.any():
        raise InputError("baseline accuracy is 0 in every resample: relative drop undefined")
    drops = (cb[ok] - tb[ok]) / cb[ok]
    lo, hi = np.quantile(drops, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


def adjust_pvalues(pvalues: Sequence[float], method: str = "holm") -> list[float]:
    """Multiple-comparison correction: ``none``, ``bonferroni``, ``holm`` (step-down) or ``fdr_bh``
    (Benjamini-Hochberg). Returns adjusted p-values in the input order (capped at 1)."""
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1 or ((p < 0) | (p > 1) | ~np.isfinite(p)).any():
        raise InputError("pvalues must be a 1-D sequence of numbers in [0, 1]")
    m = p.size
    if m == 0 or method == "none":
        return p.tolist()
    if method == "bonferroni":
        return np.minimum(1.0, p * m).tolist()
    order = np.argsort(p, kind="stable")
    ps = p[order]
    if method == "holm":
        adj = np.maximum.accumulate((m - np.arange(m)) * ps)
    elif method == "fdr_bh":
        adj = np.minimum.accumulate(m / np.arange(m, 0, -1) * ps[::-1])[::-1]
    else:
        raise InputError(f"unknown correction {method!r}; choose none, bonferroni, holm or fdr_bh")
    out = np.empty(m)
    out[order] = np.minimum(1.0, adj)
    return out.tolist()


@functools.lru_cache(maxsize=64)
def _sign_thresholds(n: int, alpha: float) -> tuple[int | None, ...]:
    """For d = 0..n discordant pairs: the fewest that must go the claimed way for the exact one-sided sign test at
    ``alpha / 2`` (the two-sided exact McNemar test at ``alpha``); ``None`` when even all ``d`` do not suffice. The
    threshold never falls as d grows, so one walk finds it for every d."""
    from iclr24.paperkit.paired import binomial_half_tail

    out: list[int | None] = [None]
    k = 1
    for d in range(1, n + 1):
        while k <= d and binomial_half_tail(k, d) > alpha / 2.0:
            k += 1
        out.append(k if k <= d else None)
    return tuple(out)


def _log_pmf(k: int, n: int, p: float) -> float:
    if p <= 0.0:
        return 0.0 if k == 0 else -math.inf
    if p >= 1.0:
        return 0.0 if k == n else -math.inf
    return (
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )


def sign_test_power(n: int, effect: float, background: float = 0.0, alpha: float = 0.05) -> float:
    """Power of the exact sign test on ``n`` paired questions (the exact McNemar test, two-sided level ``alpha``,
    i.e. one-sided ``alpha / 2`` in the claimed direction): each question is independently discordant in the claimed
    direction with probability ``effect`` (e.g. the baseline right and the persona wrong), in the other direction
    with ``background``, and concordant otherwise. The number of discordant questions is Binomial(n, effect +
    background); among ``d`` of them the claimed-way count is Binomial(d, effect / (effect + background)); the test
    decides when that count reaches the threshold of ``d``."""
    n = _count("n", n)
    for name, v in (("effect", effect), ("background", background)):
        if not (isinstance(v, int | float) and 0.0 <= v <= 1.0):
            raise InputError(f"{name} must be a probability, got {v!r}")
    if effect + background > 1.0 + 1e-12:
        raise InputError(f"effect + background must be <= 1, got {effect} + {background}")
    disc = min(1.0, effect + background)
    if disc == 0.0:
        return 0.0
    q = effect / disc
    total = 0.0
    thresholds = _sign_thresholds(n, float(alpha))
    for d in range(1, n + 1):
        k = thresholds[d]
        if k is None:
            continue
        pd = math.exp(_log_pmf(d, n, disc))
        total += pd * sum(math.exp(_log_pmf(j, d, q)) for j in range(k, d + 1))
    return min(1.0, total)


def min_detectable_rate(n: int, power: float = 0.8, background: float = 0.0, alpha: float = 0.05) -> float:
    """The minimum detectable effect of the exact sign test on ``n`` paired questions: the smallest rate of
    questions discordant in the claimed direction (``effect`` of :func:`sign_test_power`) at which the test decides
    with probability ``power``, given ``background`` discordance the other way (bisection to 1e-7). For a drop in
    accuracy with ``background = 0`` this is the smallest absolute accuracy drop (as a fraction of questions) the
    test would detect; for abstentions that strike independently of correctness it is that rate divided by the
    baseline's accuracy. ``nan`` when no effect up to ``1 - background`` reaches ``power``."""
    if not (isinstance(power, int | float) and 0.0 < power < 1.0):
        raise InputError(f"power must be in (0, 1), got {power!r}")
    hi = 1.0 - background
    if sign_test_power(n, hi, background, alpha) < power:
        return math.nan
    lo = 0.0
    while hi - lo > 1e-7:
        mid = 0.5 * (lo + hi)
        if sign_test_power(n, mid, background, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi
