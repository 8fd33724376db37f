#!/usr/bin/env python3
"""Does a whole run give the recorded numbers? ``python tools/compare_recorded.py results/claims.json``

For each paper in a ``claims.json`` written by ``iclr24 reproduce`` (any mode with recorded files), compares its
claims and facts with ``packages/NAME/docs/claims-<mode>.json`` after removing timings
(``iclr24.paperkit.runner.report.comparable``) and prints one row per paper: same numbers or not, whether every verdict
is the same, the largest relative difference of any number (what another CPU changes: 0 where the paper is
bit-identical), the verdict counts of both, and the first field that differs. Exit 1 when any paper differs from its recorded run (a paper whose recorded
file was made at another commit is flagged, since its numbers may legitimately have changed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from iclr24.paperkit.runner.report import comparable

ROOT = Path(__file__).resolve().parents[1]


def first_difference(a, b, path: str = "") -> str | None:
    if type(a) is not type(b):
        return f"{path or '.'}: {a!r:.60} vs {b!r:.60}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'the run' if k in a else 'the record'}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r:.60} vs {b!r:.60}"


def max_relative_difference(a, b) -> float | None:
    """The largest ``|x - y| / max(|x|, |y|)`` over the numbers at the same place in two documents of the same shape
    (``None`` when the shapes differ, so that no number can be paired)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return 0.0 if a == b else None
    if isinstance(a, int | float) and isinstance(b, int | float):
        scale = max(abs(a), abs(b))
        return 0.0 if a == b else abs(a - b) / scale
    if type(a) is not type(b):
        return None
    if isinstance(a, dict):
        if set(a) != set(b):
            return None
        parts = [max_relative_difference(a[k], b[k]) for k in a]
    elif isinstance(a, list):
        if len(a) != len(b):
            return None
        parts = [max_relative_difference(x, y) for x, y in zip(a, b)]
    else:
        return 0.0  # strings: their identity is in first_difference
    if any(p is None for p in parts):
        return None
    return max(parts, default=0.0)


def _verdicts(claims: list[dict]) -> list:
    return [(c.get("claim"), c.get("verdict")) for c in claims]


def _counts(claims: list[dict]) -> str:
    v = [c.get("verdict") for c in claims]
    return f"{v.count('holds')} hold / {v.count('fails')} fail / {v.count('inconclusive')} inconclusive"


def compare(run: dict) -> list[dict]:
    rows = []
    for p in run["papers"]:
        path = ROOT / "packages" / p["name"] / "docs" / f"claims-{run['mode']}.json"
        if not path.exists():
            rows.append({"paper": p["name"], "same": None, "note": "no recorded file"})
            continue
        rec = json.loads(path.read_text())
        if run.get("seed", 0) != rec.get("seed", 0):
            rows.append({"paper": p["name"], "same": None, "note": "recorded with another seed"})
            continue
        ours = {k: comparable(p.get(k)) for k in ("status", "claims", "facts")}
        theirs = {k: comparable(rec["record"].get(k)) for k in ("status", "claims", "facts")}
        diff = first_difference(ours, theirs)
        rows.append({
            "paper": p["name"], "same": diff is None, "note": diff or "",
            "same_verdicts": _verdicts(p.get("claims", [])) == _verdicts(rec["record"]["claims"]),
            "max_rel": max_relative_difference(ours, theirs),
            "run": _counts(p.get("claims", [])), "recorded": _counts(rec["record"]["claims"]),
            "recorded_commit": rec.get("commit"),
        })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report", type=Path, help="claims.json of an `iclr24 reproduce` run")
    a = ap.parse_args(argv)
    rows = compare(json.loads(a.report.read_text()))
    print(
        "| paper | same numbers as recorded | same verdicts | largest relative difference | run | recorded (commit) "
        "| first difference |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        same = {True: "yes", False: "**no**", None: "-"}[r["same"]]
        verdicts = {True: "yes", False: "**no**", None: "-"}[r.get("same_verdicts")]
        rel = r.get("max_rel")
        rel = "-" if "max_rel" not in r else "not comparable (shapes differ)" if rel is None else f"{rel:.2e}"
        rc = f"{r.get('recorded', '-')} (`{r.get('recorded_commit', '-')}`)" if "recorded" in r else "-"
        print(f"| {r['paper']} | {same} | {verdicts} | {rel} | {r.get('run', '-')} | {rc} | {r['note']} |")
    return 1 if any(r["same"] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
