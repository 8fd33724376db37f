"""Running papers' claim checks and writing ``REPORT.md`` + ``claims.json`` (used by ``iclr24 reproduce`` and by
every package's own ``<name> reproduce``).

Layout: ``<name> reproduce --out DIR`` writes ``DIR/REPORT.md``, ``DIR/claims.json`` and the plots. ``iclr24
reproduce --out results`` writes the same into ``results/<name>/reproduce/`` for each paper, and a summary
``results/REPORT.md`` + ``results/claims.json`` on top. claims.json version 2::

    {"version": 2, "mode": "quick",
     "papers": [{"name", "status": "ok|partial|failed", "seconds", "folder", "error", "claims", "facts", "artifacts"}]}

Artefact paths are relative to the paper's own folder (``folder``, relative to the report's folder).
"""

from __future__ import annotations

import os
import time
import traceback
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from .claims import VERDICTS, Claim, Fact, Paper, RunConfig, claims_to_markdown, facts_to_markdown
from .io import atomic_write_json, atomic_write_text, ensure_out_dir
from .seeding import seed_everything

__all__ = [
    "ENTRY_POINT_GROUP",
    "REPORT_VERSION",
    "discover_papers",
    "load_paper",
    "run_paper_folder",
    "run_papers",
    "write_report",
]

ENTRY_POINT_GROUP = "iclr24.papers"
REPORT_VERSION = 2
_IMAGE_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg", ".gif")


def discover_papers() -> dict[str, Any]:
    """Installed paper packages: entry-point name -> the entry point (loaded lazily by the caller)."""
    return {ep.name: ep for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)}


def load_paper(ep: Any) -> Paper:
    """Load a ``Paper`` from an entry point, or from a ``"module:attr"`` reference."""
    if isinstance(ep, str):
        import importlib

        mod, _, attr = ep.partition(":")
        obj = importlib.import_module(mod)
        for part in attr.split("."):
            obj = getattr(obj, part)
        label = ep
    else:
        obj = ep.load()
        label = f"entry point {ep.name!r} ({ep.value})"
    if not isinstance(obj, Paper):
        raise TypeError(f"{label} loads {type(obj).__name__}, expected a Paper")
    return obj


def _counts(rec: dict) -> dict[str, int]:
    return {v: sum(c.get("verdict") == v for c in rec["claims"]) for v in VERDICTS}


def _paper_markdown(rec: dict, prefix: str = "") -> list[str]:
    claims = [Claim.from_dict(c) for c in rec["claims"]]
    facts = [Fact.from_dict(f) for f in rec.get("facts", [])]
    lines = []
    if rec["status"] == "failed":
        lines += [f"**The run failed** after {rec['seconds']:.1f} s: `{rec['error']}`", ""]
    elif rec["status"] == "partial":
        lines += ["**Partial**: a measurement raised; its claim is recorded as `error`.", ""]
    if claims:
        lines += ["### Claims", "", claims_to_markdown(claims)]
    if facts:
        lines += [
            "### Facts (hold by construction; not counted as reproduced claims)",
            "",
            facts_to_markdown(facts),
        ]
    arts = rec.get("artifacts", [])
    images = [a for a in arts if a.lower().endswith(_IMAGE_SUFFIXES)]
    others = [a for a in arts if a not in images]
    if images:
        lines += ["### Plots", ""] + [f"![{a}]({prefix}{a})" for a in images] + [""]
    if others:
        lines += ["### Other files", ""] + [f"- [{a}]({prefix}{a})" for a in others] + [""]
    return lines


def _summary_row(rec: dict) -> str:
    n = _counts(rec)
    checked = n["holds"] + n["fails"]
    held = f"{n['holds']}/{checked}" if checked else "-"
    extra = ", ".join(f"{n[v]} {v}" for v in ("smoke", "skipped", "error") if n[v])
    return (
        f"| {rec['name']} | {rec['status']} | {held} | {extra or '-'} | {len(rec.get('facts', []))} "
        f"| {rec['seconds']:.1f} |"
    )


def write_report(out: Path, mode: str, results: list[dict]) -> tuple[Path, Path]:
    """Write ``claims.json`` (version 2) and ``REPORT.md`` atomically into ``out``; each record's ``folder`` (relative
    to ``out``) locates its artefacts."""
    out = Path(out)
    doc = {"version": REPORT_VERSION, "mode": mode, "papers": results}
    jpath = atomic_write_json(out / "claims.json", doc)
    n_claims = sum(len(r["claims"]) for r in results)
    held = sum(_counts(r)["holds"] for r in results)
    checked = sum(_counts(r)["holds"] + _counts(r)["fails"] for r in results)
    secs = sum(r["seconds"] for r in results)
    title = results[0]["name"] if len(results) == 1 else "iclr24"
    lines = [f"# {title} reproduction report ({mode})", ""]
    lines.append(
        f"{len(results)} paper(s), {n_claims} claim(s): {held} of {checked} checked hold; "
        f"{sum(len(r.get('facts', [])) for r in results)} fact(s); {secs:.0f} s in all."
    )
    if mode == "smoke":
        lines.append("Smoke mode runs the pipeline only: its claims carry no verdict.")
    lines += [
        "",
        "| paper | status | claims held | other verdicts | facts | seconds |",
        "|---|---|---|---|---|---|",
    ]
    lines += [_summary_row(r) for r in results]
    lines.append("")
    for r in results:
        folder = r.get("folder") or "."
        prefix = "" if folder in ("", ".") else folder.rstrip("/") + "/"
        lines += [f"## {r['name']}", ""] + _paper_markdown(r, prefix)
    mpath = atomic_write_text(out / "REPORT.md", "\n".join(lines) + "\n")
    return jpath, mpath


def _run_one(paper: Paper | Any, name: str, cfg: RunConfig) -> dict:
    """Run one paper into ``cfg.out``; a crash is recorded as ``failed``, never raised."""
    t0 = time.perf_counter()
    try:
        if not isinstance(paper, Paper):
            paper = load_paper(paper)
        ensure_out_dir(cfg.out)
        seed_everything(cfg.seed)
        cs = paper.check(cfg)
        status = "partial" if cs.partial else "ok"
        return {
            "name": name,
            "status": status,
            "seconds": time.perf_counter() - t0,
            "folder": ".",
            "error": None,
            **cs.to_dict(),
        }
    except Exception as e:  # noqa: BLE001 - one package failing must not stop the others
        return {
            "name": name,
            "status": "failed",
            "seconds": time.perf_counter() - t0,
            "folder": ".",
            "error": f"{type(e).__name__}: {e}",
            "claims": [],
            "facts": [],
            "artifacts": [],
            "traceback": traceback.format_exc(limit=8),
        }


def run_paper_folder(
    paper: Paper | Any,
    *,
    name: str | None = None,
    mode: str = "quick",
    seed: int = 0,
    out: str | Path,
    device: str = "cpu",
    show_progress: bool = True,
    data_dir: str | Path | None = None,
) -> dict:
    """Run one paper into ``out`` and write its own ``REPORT.md`` + ``claims.json`` there; returns its record."""
    out = ensure_out_dir(out)
    name = name or getattr(paper, "name", None) or str(paper)
    cfg = RunConfig(
        mode=mode, seed=seed, out=out, device=device, progress=show_progress, root=out, data_dir=data_dir
    )
    rec = _run_one(paper, name, cfg)
    write_report(out, mode, [rec])
    return rec


def _worker_init(threads: int) -> None:
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(threads)


def _worker_run(paper: Any, name: str, kwargs: dict) -> dict:
    from .progress import set_quiet

    set_quiet(True)
    return run_paper_folder(paper, name=name, **kwargs)


def run_papers(
    papers: dict[str, Paper | Any],
    *,
    mode: str = "quick",
    seed: int = 0,
    out: str | Path = "results",
    device: str = "cpu",
    show_progress: bool = True,
    data_dir: str | Path | None = None,
    jobs: int = 1,
    log=print,
) -> list[dict]:
    """Run each paper's claim checks into ``out/<name>/reproduce/`` and write the summary report into ``out``.

    ``papers`` maps name -> ``Paper``, an entry point, or a ``"module:attr"`` reference. A paper that raises is
    recorded as failed and the rest go on. ``jobs > 1`` runs papers in that many processes, each with
    ``max(1, cores // jobs)`` threads (entry points and references only cross processes as references).
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive int, got {jobs!r}")
    out = ensure_out_dir(out)
    kwargs = dict(mode=mode, seed=seed, device=device, data_dir=data_dir)
    folders = {name: f"{name}/reproduce" for name in papers}
    results: dict[str, dict] = {}

    def done(name: str, rec: dict) -> None:
        rec = {**rec, "folder": folders[name]}
        results[name] = rec
        n = _counts(rec)
        if rec["status"] == "failed":
            log(f"[{name}] FAILED after {rec['seconds']:.1f} s: {rec['error']}")
        else:
            verdicts = ", ".join(f"{n[v]} {v}" for v in VERDICTS if n[v]) or "no claims"
            log(f"[{name}] {rec['status']} in {rec['seconds']:.1f} s: {verdicts}")
        write_report(out, mode, [results[k] for k in papers if k in results])  # current after every paper

    if jobs == 1 or len(papers) <= 1:
        for name, paper in papers.items():
            log(f"[{name}] running claim checks ({mode}) ...")
            done(
                name,
                run_paper_folder(
                    paper, name=name, out=out / folders[name], show_progress=show_progress, **kwargs
                ),
            )
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        threads = max(1, (os.cpu_count() or 1) // jobs)
        log(f"running {len(papers)} papers in {jobs} processes, {threads} thread(s) each ({mode}) ...")
        refs = {n: (p.value if hasattr(p, "value") and hasattr(p, "load") else p) for n, p in papers.items()}
        with ProcessPoolExecutor(
            jobs, mp_context=mp.get_context("spawn"), initializer=_worker_init, initargs=(threads,)
        ) as ex:
            futs = {
                ex.submit(
                    _worker_run, refs[n], n, {**kwargs, "out": out / folders[n], "show_progress": False}
                ): n
                for n in papers
            }
            for f in as_completed(futs):
                n = futs[f]
                try:
                    rec = f.result()
                except Exception as e:  # noqa: BLE001 - a worker that died
                    rec = {
                        "name": n,
                        "status": "failed",
                        "seconds": 0.0,
                        "error": f"{type(e).__name__}: {e}",
                        "claims": [],
                        "facts": [],
                        "artifacts": [],
                    }
                done(n, rec)
    final = [results[k] for k in papers]
    write_report(out, mode, final)
    return final
