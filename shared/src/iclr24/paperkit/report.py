"""Running papers' claim checks and writing ``REPORT.md`` + ``claims.json`` (used by ``iclr24 reproduce`` and by
every package's own ``<name> reproduce``)."""

from __future__ import annotations

import time
import traceback
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from .claims import Claim, Paper, RunConfig, claims_to_markdown
from .io import atomic_write_json, atomic_write_text, ensure_out_dir
from .seeding import seed_everything

__all__ = ["ENTRY_POINT_GROUP", "discover_papers", "run_papers", "write_report"]

ENTRY_POINT_GROUP = "iclr24.papers"
REPORT_VERSION = 1


def discover_papers() -> dict[str, Any]:
    """Installed paper packages: entry-point name -> the entry point (loaded lazily by the caller)."""
    return {ep.name: ep for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)}


def load_paper(ep: Any) -> Paper:
    obj = ep.load()
    if not isinstance(obj, Paper):
        raise TypeError(f"entry point {ep.name!r} ({ep.value}) loads {type(obj).__name__}, expected a Paper")
    return obj


def write_report(out: Path, mode: str, results: list[dict]) -> tuple[Path, Path]:
    """Write ``claims.json`` (schema version 1) and ``REPORT.md`` atomically into ``out``."""
    doc = {"version": REPORT_VERSION, "mode": mode, "papers": results}
    jpath = atomic_write_json(out / "claims.json", doc)
    all_claims = [Claim.from_dict(c) for r in results for c in r["claims"]]
    n_hold = sum(c.holds for c in all_claims)
    lines = [f"# iclr24 reproduction report ({mode})", ""]
    lines.append(f"{len(results)} paper(s), {len(all_claims)} claim(s), {n_hold} hold.")
    lines.append("")
    lines.append(claims_to_markdown(all_claims))
    failed = [r for r in results if r["status"] != "ok"]
    if failed:
        lines += ["", "## Packages that failed", ""]
        for r in failed:
            lines.append(f"- **{r['name']}** ({r['seconds']:.1f} s): `{r['error']}`")
    arts = [(c.paper, a) for c in all_claims for a in c.artifacts]
    if arts:
        lines += ["", "## Artifacts", ""] + [f"- {p}: [{a}]({a})" for p, a in arts]
    mpath = atomic_write_text(out / "REPORT.md", "\n".join(lines) + "\n")
    return jpath, mpath


def run_papers(
    papers: dict[str, Paper | Any],
    *,
    mode: str = "quick",
    seed: int = 0,
    out: str | Path = "results",
    device: str = "cpu",
    show_progress: bool = True,
    log=print,
) -> list[dict]:
    """Run each paper's claim checks in turn. A paper that raises is recorded as failed and the rest go on.

    ``papers`` maps name -> ``Paper`` or an entry point that loads one. Returns the per-paper result records
    (also written to ``out/claims.json`` and ``out/REPORT.md``).
    """
    out = ensure_out_dir(out)
    results: list[dict] = []
    for name, paper in papers.items():
        t0 = time.perf_counter()
        log(f"[{name}] running claim checks ({mode}) ...")
        try:
            if not isinstance(paper, Paper):
                paper = load_paper(paper)
            cfg = RunConfig(
                mode=mode, seed=seed, out=out / name, device=device, progress=show_progress, root=out
            )
            ensure_out_dir(cfg.out)
            seed_everything(seed)
            claims = paper.check(cfg)
            rec = {
                "name": name,
                "status": "ok",
                "error": None,
                "seconds": time.perf_counter() - t0,
                "claims": [c.to_dict() for c in claims],
            }
            verdict = ", ".join(f"{'holds' if c.holds else 'does NOT hold'}" for c in claims) or "no claims"
            log(f"[{name}] done in {rec['seconds']:.1f} s: {verdict}")
        except Exception as e:  # noqa: BLE001 - one package failing must not stop the others
            tb = traceback.format_exc(limit=8)
            rec = {
                "name": name,
                "status": "failed",
                "error": f"{type(e).__name__}: {e}",
                "seconds": time.perf_counter() - t0,
                "claims": [],
                "traceback": tb,
            }
            log(f"[{name}] FAILED after {rec['seconds']:.1f} s: {type(e).__name__}: {e}")
        results.append(rec)
        write_report(out, mode, results)  # keep the report current after every paper
    write_report(out, mode, results)
    return results
