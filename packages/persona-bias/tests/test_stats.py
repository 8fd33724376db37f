import math
from itertools import product

import numpy as np
import pytest

from iclr24.persona_bias import stats


def _binom_pmf(k, n, p):
    return math.comb(n, k) * p**k * (1 - p) ** (n - k)


def test_mcnemar_switch_on_any_cell_below_25():
    assert stats.mcnemar(30, 40, 26, 50).exact is False
    assert stats.mcnemar(30, 40, 26, 24).exact is True  # n00 < 25 forces the exact test
    assert stats.mcnemar(30, 40, 20, 50).exact is True  # n01 < 25
    assert stats.mcnemar(25, 25, 25, 25).exact is False


def test_mcnemar_closed_forms():
    r = stats.mcnemar(30, 40, 26, 50)  # chi^2 with continuity correction
    assert r.statistic == pytest.approx((abs(40 - 26) - 1) ** 2 / 66)
    assert r.pvalue == pytest.approx(math.erfc(math.sqrt(r.statistic / 2)))  # chi^2_1 survival function
    e = stats.mcnemar(50, 10, 0, 50)  # exact: 2 * P(X <= 0), X ~ Bin(10, 1/2)
    assert e.exact and e.statistic == 0 and e.pvalue == pytest.approx(2 * 0.5**10)
    e2 = stats.mcnemar(5, 7, 3, 5)
    assert e2.pvalue == pytest.approx(min(1, 2 * sum(_binom_pmf(k, 10, 0.5) for k in range(4))))
    none = stats.mcnemar(40, 0, 0, 60)
    assert none.pvalue == 1.0 and none.exact
    assert stats.mcnemar(100, 0, 0, 100, exact=False).pvalue == 1.0
    assert stats.mcnemar_pairs([1, 1, 0, 0], [1, 0, 0, 1]).table == ((1, 1), (1, 1))
    with pytest.raises(ValueError, match="non-negative integer"):
        stats.mcnemar(1, -1, 0, 0)
    with pytest.raises(ValueError, match="paired"):
        stats.mcnemar_pairs([1, 0], [1])


@pytest.mark.parametrize(("k", "n", "p0"), [(3, 20, 0.4), (12, 20, 0.4), (0, 5, 0.3), (7, 7, 0.9)])
def test_binomial_test_against_brute_force(k, n, p0):
    pmf = [_binom_pmf(i, n, p0) for i in range(n + 1)]
    assert stats.binomial_test(k, n, p0, alternative="smaller").pvalue == pytest.approx(sum(pmf[: k + 1]))
    assert stats.binomial_test(k, n, p0, alternative="larger").pvalue == pytest.approx(sum(pmf[k:]))
    two = sum(q for q in pmf if q <= pmf[k] * (1 + 1e-7))
    assert stats.binomial_test(k, n, p0).pvalue == pytest.approx(min(1.0, two))
    with pytest.raises(ValueError, match="alternative"):
        stats.binomial_test(k, n, p0, alternative="sideways")


def test_binomial_pairs_uses_control_accuracy():
    r = stats.binomial_test_pairs([1] * 8 + [0] * 2, [1] * 3 + [0] * 7, alternative="smaller")
    assert r.p0 == 0.8 and r.k == 3 and r.pvalue < 0.01


def test_wilson_interval_closed_form():
    lo, hi = stats.wilson_interval(0, 10)
    z = 1.959963984540054
    assert lo == 0.0 and hi == pytest.approx(z**2 / (10 + z**2))
    lo, hi = stats.wilson_interval(50, 100)
    assert (lo + hi) / 2 == pytest.approx(0.5) and hi - lo == pytest.approx(
        2 * z / (100 + z**2) * math.sqrt(25 + z**2 / 4)
    )
    with pytest.raises(ValueError, match="positive"):
        stats.wilson_interval(0, 0)
    assert stats.wilson_overlap_test([1] * 90 + [0] * 10, [1] * 40 + [0] * 60)
    assert not stats.wilson_overlap_test([1] * 9 + [0], [1] * 8 + [0] * 2)


def test_relative_drop_and_bootstrap_ci():
    assert stats.relative_drop(0.8, 0.6) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="undefined"):
        stats.relative_drop(0.0, 0.1)
    rng = np.random.default_rng(0)
    c = (rng.random(400) < 0.8).astype(int)
    t = c * (rng.random(400) >= 0.3)  # drop 30% of the right answers
    lo, hi = stats.bootstrap_relative_drop_ci(c, t, n_boot=1000)
    assert lo < stats.relative_drop(c.mean(), t.mean()) < hi and lo < 0.3 < hi


def test_multiple_comparison_corrections_brute_force():
    p = [0.01, 0.04, 0.03, 0.2]
    assert stats.adjust_pvalues(p, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.8])
    # Holm: sorted 0.01, 0.03, 0.04, 0.2 -> 4*0.01, max(., 3*0.03), max(., 2*0.04), max(., 0.2)
    assert stats.adjust_pvalues(p, "holm") == pytest.approx([0.04, 0.09, 0.09, 0.2])
    # BH: min over j >= i of m/j * p_(j)
    s = sorted(p)
    bh_sorted = [min(4 / j * s[j - 1] for j in range(i, 5)) for i in range(1, 5)]
    assert stats.adjust_pvalues(p, "fdr_bh") == pytest.approx([bh_sorted[s.index(x)] for x in p])
    assert stats.adjust_pvalues(p, "none") == p
    with pytest.raises(ValueError, match="unknown correction"):
        stats.adjust_pvalues(p, "magic")


def test_exact_mcnemar_is_valid_under_the_null():
    # size of the exact test never exceeds alpha: sum over discordant splits of P(split) * [p <= alpha]
    for b in (5, 12, 24):
        size = sum(
            _binom_pmf(k, b, 0.5) for k in range(b + 1) if stats.mcnemar(30, k, b - k, 30).pvalue <= 0.05
        )
        assert size <= 0.05
    assert all(stats.mcnemar(a, b, c, d).pvalue <= 1 for a, b, c, d in product(range(0, 30, 7), repeat=4))
