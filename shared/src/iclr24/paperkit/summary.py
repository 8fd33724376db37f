"""Claims as text: the Markdown tables of claims and facts, the claims files, and the verdict counts the reports
and READMEs show."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .claims import VERDICTS
from .claims import Claim
from .claims import ClaimSet
from .claims import Fact
from .io import atomic_write_json

__all__ = [
    "by_kind",
    "summary_text",
    "verdict_summary",
    "claims_to_markdown",
    "facts_to_markdown",
    "write_claims_json",
]


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
    "undecidable": "undecidable at this budget",
    "smoke": "smoke: pipeline only",
    "skipped": "skipped",
    "error": "**error**",
}


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def claims_to_markdown(claims: list[Claim] | ClaimSet) -> str:
    """A Markdown table: paper, kind, claim, ours, baseline, paper's number, rule, verdict, seconds (headline claims
    first, checks last)."""
    lines = [
        "| paper | kind | claim | metric | ours | baseline | paper's number | rule | holds | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in by_kind(claims):
        base = (
            f"{_fmt(c.baseline)} ({c.baseline_name})" if c.baseline is not None else f"- ({c.baseline_name})"
        )
        cells = [
            c.paper,
            c.kind or "-",
            c.claim,
            c.metric,
            _fmt(c.ours),
            base,
            _fmt(c.paper_value),
            f"`{c.rule}`" if c.rule else "-",
            _verdict_cell(c.status, c.message),
            f"{c.seconds:.1f}",
        ]
        lines.append("| " + " | ".join(_cell(s) for s in cells) + " |")
    return "\n".join(lines) + "\n"


def _verdict_cell(status: str, message: str | None) -> str:
    """The verdict column: the status in words, then the message (once, where the message already opens with it)."""
    cell = _VERDICT_CELL[status]
    if not message:
        return cell
    return message if message.startswith(cell) else f"{cell}: {message}"


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


_KIND_ORDER = {"headline": 0, "supporting": 1, "": 2, "check": 3}
_DECIDED = ("holds", "fails", "inconclusive", "undecidable")


def _get(c: Claim | Mapping[str, Any], key: str) -> Any:
    if isinstance(c, Claim):
        return c.status if key == "verdict" else getattr(c, key)
    return c.get(key, "")


def by_kind(claims: Any) -> list:
    """Claims ordered headline, supporting, unclassified (records before claim kinds), then checks (stable)."""
    return sorted(claims, key=lambda c: _KIND_ORDER.get(_get(c, "kind") or "", 2))


def verdict_summary(claims: Any) -> dict:
    """What the reports lead with: the headline verdicts, then counts over the claims that count as reproduced
    (headline and supporting; unclassified ones of older records too), then the checks apart.

    Returns ``{"headline": [verdict, ...], "counted": {verdict: n}, "checks": {verdict: n}, "held": k,
    "decided": n, "checks_held": k, "checks_decided": n}``; "decided" counts holds + fails (the denominator of
    "k/n claims hold")."""
    claims = list(claims)
    counted = [c for c in claims if _get(c, "kind") != "check"]
    checks = [c for c in claims if _get(c, "kind") == "check"]

    def count(cs: list) -> dict[str, int]:
        return {v: sum(_get(c, "verdict") == v for c in cs) for v in VERDICTS}

    n, k = count(counted), count(checks)
    return {
        "headline": [_get(c, "verdict") for c in claims if _get(c, "kind") == "headline"],
        "counted": n,
        "checks": k,
        "held": n["holds"],
        "decided": n["holds"] + n["fails"],
        "checks_held": k["holds"],
        "checks_decided": k["holds"] + k["fails"],
    }


def summary_text(claims: Any) -> str:
    """One line: ``headline: holds, fails; 4/6 claims hold (1 inconclusive); checks 3/3``."""
    s = verdict_summary(claims)
    parts = []
    if s["headline"]:
        parts.append("headline: " + ", ".join(s["headline"]))
    if s["decided"] or any(s["counted"][v] for v in _DECIDED):
        other = ", ".join(f"{s['counted'][v]} {v}" for v in ("inconclusive", "undecidable", "skipped", "error")
                          if s["counted"][v])  # fmt: skip
        parts.append(f"{s['held']}/{s['decided']} claims hold" + (f" ({other})" if other else ""))
    elif s["counted"]["smoke"]:
        parts.append(f"{s['counted']['smoke']} claims (smoke: no verdicts)")
    if s["checks_decided"] or s["checks"]["smoke"]:
        parts.append(f"checks {s['checks_held']}/{s['checks_decided']}" if s["checks_decided"]
                     else f"{s['checks']['smoke']} checks (smoke)")  # fmt: skip
    return "; ".join(parts) or "no claims"
