"""The paper's comparisons: each persona against a baseline persona, per (model, template, dataset).

A persona is *biased on a dataset* when its accuracy is significantly lower than the baseline's on the same
questions (McNemar by default, the official test; optionally corrected for multiple comparisons over a persona's
datasets). Paper metrics: relative drop, % of personas biased (on at least one dataset), % of datasets significant
per persona, and abstention rates.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass

import numpy as np

from iclr24.paperkit.errors import InputError

from . import stats
from .config import NO_PERSONA
from .config import check_records

__all__ = ["Comparison", "compare_personas", "persona_summary", "percent_personas_biased", "TESTS"]

TESTS = ("mcnemar", "binom_two-sided", "binom_smaller", "binom_larger", "confint")


@dataclass(frozen=True)
class Comparison:
    model: str
    template: str
    dataset: str
    persona: str
    baseline: str
    n: int
    acc_baseline: float
    acc: float
    relative_drop: float | None
    abstention_rate: float
    abstention_rate_baseline: float
    n11: int
    n10: int
    n01: int
    n00: int
    test: str
    exact: bool | None
    pvalue: float
    pvalue_adjusted: float
    significant: bool  # a significant *drop* (persona below baseline) at alpha after correction
    drop_from_abstention: (
        float | None
    )  # share of lost answers (baseline right, persona wrong) that are abstentions

    def to_dict(self) -> dict:
        return asdict(self)


def _index(rows: Iterable[dict]) -> dict[tuple, dict]:
    idx: dict[tuple, dict] = {}
    for r in rows:
        idx.setdefault((r["model"], r["persona"], r["template"], r["dataset"]), {})[repr(r["id"])] = r
    return idx


def compare_personas(
    scored: Iterable[dict],
    baseline: str = "a human",
    test: str = "mcnemar",
    alpha: float = 0.05,
    correction: str = "none",
    personas: Sequence[str] | None = None,
) -> list[Comparison]:
    """Compare every persona with ``baseline`` on the questions both answered (same model, template, dataset; the
    ``no_persona`` control is compared within each template). ``correction`` (none/bonferroni/holm/fdr_bh) adjusts
    p-values over each persona's datasets (per model and template)."""
    if test not in TESTS:
        raise InputError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    scored = check_records(scored, ("model", "persona", "template", "dataset", "id", "is_correct"), "scored")
    idx = _index(scored)
    if not idx:
        raise InputError("no scored responses to compare")
    available = sorted({k[1] for k in idx})
    if baseline not in available:
        raise InputError(
            f"baseline persona {baseline!r} has no responses; personas in the store: {available}"
        )
    templates = sorted({k[2] for k in idx if k[2] != NO_PERSONA}) or [NO_PERSONA]
    out: list[Comparison] = []
    for (model, persona, tmpl, ds), rows in sorted(idx.items()):
        if persona == baseline or (personas is not None and persona not in personas):
            continue
        cmp_templates = templates if tmpl == NO_PERSONA else [tmpl]
        for t in cmp_templates:
            base_t = NO_PERSONA if baseline == NO_PERSONA else t
            base = idx.get((model, baseline, base_t, ds))
            if base is None:
                continue
            ids = sorted(set(rows) & set(base))
            if not ids:
                continue
            c = np.array([base[i]["is_correct"] for i in ids], dtype=int)
            tr = np.array([rows[i]["is_correct"] for i in ids], dtype=int)
            ab = np.array([rows[i]["abstained"] for i in ids], dtype=bool)
            ab_b = np.array([base[i]["abstained"] for i in ids], dtype=bool)
            n11, n10, n01, n00 = stats.contingency_table(c, tr)
            exact = None
            if test == "mcnemar":
                res = stats.mcnemar(n11, n10, n01, n00)
                p, exact = res.pvalue, res.exact
            elif test.startswith("binom"):
                p = stats.binomial_test_pairs(c, tr, alternative=test.split("_", 1)[1]).pvalue
            else:
                p = 0.0 if stats.wilson_overlap_test(c, tr, alpha) else 1.0
            acc_b, acc = float(c.mean()), float(tr.mean())
            lost = (c == 1) & (tr == 0)
            out.append(
                Comparison(
                    model=model,
                    template=t,
                    dataset=ds,
                    persona=persona,
                    baseline=baseline,
                    n=len(ids),
                    acc_baseline=acc_b,
                    acc=acc,
                    relative_drop=stats.relative_drop(acc_b, acc) if acc_b > 0 else None,
                    abstention_rate=float(ab.mean()),
                    abstention_rate_baseline=float(ab_b.mean()),
                    n11=n11,
                    n10=n10,
                    n01=n01,
                    n00=n00,
                    test=test,
                    exact=exact,
                    pvalue=float(p),
                    pvalue_adjusted=float(p),
                    significant=False,
                    drop_from_abstention=float((lost & ab).sum() / lost.sum()) if lost.any() else None,
                )
            )
    # multiple-comparison correction over each persona's datasets, then the decision (a drop, at alpha)
    fam: dict[tuple, list[int]] = {}
    for i, cmpn in enumerate(out):
        fam.setdefault((cmpn.model, cmpn.template, cmpn.persona), []).append(i)
    final = list(out)
    for members in fam.values():
        adj = stats.adjust_pvalues([out[i].pvalue for i in members], correction)
        for i, pa in zip(members, adj):
            o = out[i]
            drop = o.acc < o.acc_baseline
            final[i] = Comparison(
                **{**o.to_dict(), "pvalue_adjusted": float(pa), "significant": bool(drop and pa <= alpha)}
            )
    return final


def _check_comparisons(comparisons: object) -> None:
    if isinstance(comparisons, str | bytes) or not isinstance(comparisons, Sequence | list | tuple):
        raise InputError(
            f"comparisons must be the list compare_personas returns, got {type(comparisons).__name__}"
        )
    if not all(isinstance(c, Comparison) for c in comparisons):
        raise InputError("comparisons must be Comparison records (from compare_personas)")


def persona_summary(comparisons: Sequence[Comparison]) -> list[dict]:
    """Per (model, template, persona): datasets compared, datasets with a significant drop (and %), mean relative
    drop, mean abstention rate, and ``biased`` (a significant drop on at least one dataset)."""
    _check_comparisons(comparisons)
    groups: dict[tuple, list[Comparison]] = {}
    for c in comparisons:
        groups.setdefault((c.model, c.template, c.persona), []).append(c)
    rows = []
    for (model, tmpl, persona), cs in sorted(groups.items()):
        drops = [c.relative_drop for c in cs if c.relative_drop is not None]
        sig = sum(c.significant for c in cs)
        rows.append(
            {
                "model": model,
                "template": tmpl,
                "persona": persona,
                "datasets": len(cs),
                "significant": sig,
                "pct_datasets_significant": 100.0 * sig / len(cs),
                "mean_relative_drop": float(np.mean(drops)) if drops else None,
                "mean_accuracy": float(np.mean([c.acc for c in cs])),
                "mean_abstention": float(np.mean([c.abstention_rate for c in cs])),
                "biased": sig > 0,
            }
        )
    return rows


def percent_personas_biased(comparisons: Sequence[Comparison], exclude: Sequence[str] = ()) -> float:
    """% of personas (per model and template, pooled) with a significant drop on at least one dataset."""
    rows = [r for r in persona_summary(comparisons) if r["persona"] not in exclude]
    if not rows:
        raise InputError("no personas to summarise")
    return 100.0 * sum(r["biased"] for r in rows) / len(rows)
