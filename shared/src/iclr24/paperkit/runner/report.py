"""Running papers' claim checks and writing ``REPORT.md`` + ``claims.json`` (used by ``iclr24 reproduce`` and by
every package's own ``<name> reproduce``).

Layout: ``<name> reproduce --out DIR`` writes ``DIR/REPORT.md``, ``DIR/claims.json`` and the plots. ``iclr24
reproduce --out results`` writes the same into ``results/<name>/reproduce/`` for each paper, and a summary
``results/REPORT.md`` + ``results/claims.json`` on top. claims.json version 3::

    {"version": 3, "mode": "quick", "machine": {...}, "timing_fields": [...],
     "papers": [{"name", "status": "ok|partial|failed", "seconds", "cpu_seconds", "threads", "isolated", "folder",
                 "error", "claims", "facts", "artifacts"}]}

Artefact paths are relative to the paper's own folder (``folder``, relative to the report's folder).

Same numbers on every run: each paper runs with its declared ``Paper.threads`` pinned (torch and BLAS), and
``iclr24 reproduce`` runs every paper in a fresh process of its own (one task per worker, at ``--jobs 1`` and
``--jobs N`` alike), so nothing one paper does (RNG streams, torch global state, caches) reaches another. The
fields named in ``timing_fields`` (and every claim or fact marked ``"timing": true``, and a claim's
``details["timings"]``) are timings; every other number and every verdict of a non-timing claim is the same on
every run of the same commit (:func:`comparable` strips the timings for that comparison).
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from ..claims import VERDICTS
from ..claims import Claim
from ..claims import Fact
from ..claims import RunConfig
from ..io import atomic_write_json
from ..io import atomic_write_text
from ..io import ensure_out_dir
from ..paper import Paper
from ..seeding import seed_everything
from ..summary import by_kind
from ..summary import claims_to_markdown
from ..summary import facts_to_markdown
from ..summary import summary_text
from ..summary import verdict_summary

__all__ = [
    "discover_papers",
    "load_paper",
    "run_paper_folder",
    "run_papers",
    "write_report",
    "comparable",
]

_ENTRY_POINT_GROUP = "iclr24.papers"
_DECIDED = ("holds", "fails", "inconclusive", "undecidable")
_REPORT_VERSION = 3
_TIMING_FIELDS = (
    "seconds", "cpu_seconds", "wall_seconds", "cpu_seconds_per_pair", "load", "date", "machine", "commit",
)  # fmt: skip
_IMAGE_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg", ".gif")


def discover_papers() -> dict[str, Any]:
    """Installed paper packages: entry-point name -> the entry point (loaded lazily by the caller)."""
    return {ep.name: ep for ep in sorted(entry_points(group=_ENTRY_POINT_GROUP), key=lambda e: e.name)}


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
    main = [c for c in claims if c.kind != "check"]
    checks = [c for c in claims if c.kind == "check"]
    if claims:
        lines += [f"**{summary_text(claims)}**", ""]
    if main:
        lines += ["### Claims (headline first)", "", claims_to_markdown(by_kind(main))]
    if checks:
        lines += [
            "### Checks (pipeline checks on planted data and controls against weak models; not counted as reproduced)",
            "",
            claims_to_markdown(checks),
        ]
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
    s = verdict_summary(rec["claims"])
    n = s["counted"]
    headline = ", ".join(s["headline"]) or "-"
    held = f"{s['held']}/{s['decided']}" if s["decided"] else "-"
    checks = f"{s['checks_held']}/{s['checks_decided']}" if s["checks_decided"] else "-"
    extra = ", ".join(
        f"{n[v]} {v}" for v in ("inconclusive", "undecidable", "smoke", "skipped", "error") if n[v]
    )
    cap = rec.get("budget_seconds")
    cpu = rec.get("cpu_seconds")
    cpu_cell = "-" if cpu is None else f"{cpu:.0f}" + (f" / {cap:.0f}" if cap else "")
    return (
        f"| {rec['name']} | {rec['status']} | {headline} | {held} | {extra or '-'} | {checks} "
        f"| {len(rec.get('facts', []))} | {rec['seconds']:.1f} | {cpu_cell} |"
    )


def write_report(out: Path, mode: str, results: list[dict]) -> tuple[Path, Path]:
    """Write ``claims.json`` (version 2) and ``REPORT.md`` atomically into ``out``; each record's ``folder`` (relative
    to ``out``) locates its artefacts."""
    from ..threads import machine_record

    out = Path(out)
    doc = {
        "version": _REPORT_VERSION,
        "mode": mode,
        "machine": machine_record(),
        "timing_fields": list(_TIMING_FIELDS),
        "papers": results,
    }
    jpath = atomic_write_json(out / "claims.json", doc)
    every = [c for r in results for c in r["claims"]]
    s = verdict_summary(every)
    secs = sum(r["seconds"] for r in results)
    title = results[0]["name"] if len(results) == 1 else "iclr24"
    lines = [f"# {title} reproduction report ({mode})", ""]
    hv = s["headline"]
    if hv:
        lines.append(
            f"**Headline claims: {hv.count('holds')} of {len(hv)} hold, {hv.count('fails')} fail, "
            f"{hv.count('inconclusive')} inconclusive, {hv.count('undecidable')} undecidable at this budget"
            + (f", {len(hv) - sum(hv.count(v) for v in _DECIDED)} other" if len(hv) > sum(hv.count(v) for v in _DECIDED) else "")
            + ".**"
        )  # fmt: skip
        lines.append("")
    lines.append(
        f"{len(results)} paper(s): {s['held']} of {s['decided']} decided claims hold (headline and supporting); "
        f"checks {s['checks_held']} of {s['checks_decided']}; "
        f"{sum(len(r.get('facts', [])) for r in results)} fact(s); {secs:.0f} s in all."
    )
    undecided = s["counted"]["inconclusive"]
    if undecided:
        lines.append(
            f"{undecided} claim(s) are inconclusive: their paired 95 % interval over seeds straddles the rule."
        )
    if s["counted"]["undecidable"]:
        lines.append(
            f"{s['counted']['undecidable']} claim(s) are undecidable at this budget: their calibration needs more "
            "seeds than the mode's CPU budget gives (each says how many)."
        )
    if mode == "smoke":
        lines.append("Smoke mode runs the pipeline only: its claims carry no verdict.")
    lines += [
        "",
        "| paper | status | headline | claims held | other verdicts | checks held | facts | seconds | CPU s / cap |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [_summary_row(r) for r in results]
    lines.append("")
    for r in results:
        folder = r.get("folder") or "."
        prefix = "" if folder in ("", ".") else folder.rstrip("/") + "/"
        lines += [f"## {r['name']}", ""] + _paper_markdown(r, prefix)
    mpath = atomic_write_text(out / "REPORT.md", "\n".join(lines) + "\n")
    return jpath, mpath


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (user + system)."""
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def _artifact_names(value: Any) -> Any:
    if isinstance(value, list) and all(isinstance(a, str) for a in value):
        return [a.replace("\\", "/").rsplit("/", 1)[-1] for a in value]
    return comparable(value)


def comparable(doc: Any) -> Any:
    """A claims.json document (or any part of it) without its timings: the fields in ``_TIMING_FIELDS``, claims and
    facts marked ``timing``, and ``details["timings"]``; ``artifacts`` by their file names (where a run writes
    them depends on its ``--out``, not on its numbers). Two runs of the same commit give equal ``comparable``s."""
    if isinstance(doc, dict):
        if doc.get("timing") is True:
            keep = {k: comparable(doc[k]) for k in ("paper", "claim", "name", "metric") if k in doc}
            return {**keep, "timing": True}
        return {
            k: _artifact_names(v) if k == "artifacts" else comparable(v)
            for k, v in doc.items()
            if k not in _TIMING_FIELDS and k != "timings"
        }
    if isinstance(doc, list):
        return [comparable(v) for v in doc]
    return doc


def _run_one(paper: Paper | Any, name: str, cfg: RunConfig) -> dict:
    """Run one paper into ``cfg.out``; a crash is recorded as ``failed``, never raised."""
    t0, c0 = time.perf_counter(), _cpu_seconds()
    threads = None
    try:
        if not isinstance(paper, Paper):
            paper = load_paper(paper)
        threads = paper.threads
        ensure_out_dir(cfg.out)
        seed_everything(cfg.seed)
        cs = paper.check(cfg)
        status = "partial" if cs.partial else "ok"
        from ..threads import dispatch_record

        return {
            "name": name,
            "status": status,
            "dispatch": dispatch_record(),
            "budget_seconds": dict(paper.budgets).get(cfg.mode),
            "seconds": time.perf_counter() - t0,
            "cpu_seconds": _cpu_seconds() - c0,
            "threads": threads,
            "folder": ".",
            "error": None,
            **({"from_scratch": True} if cfg.from_scratch else {}),
            **cs.to_dict(),
        }
    except Exception as e:  # noqa: BLE001 - one package failing must not stop the others
        return {
            "name": name,
            "status": "failed",
            "seconds": time.perf_counter() - t0,
            "cpu_seconds": _cpu_seconds() - c0,
            "threads": threads,
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
    from_scratch: bool = False,
) -> dict:
    """Run one paper into ``out`` and write its own ``REPORT.md`` + ``claims.json`` there; returns its record.
    ``from_scratch``: retrain the paper's shipped checkpoints with their recorded commands first."""
    out = ensure_out_dir(out)
    name = name or getattr(paper, "name", None) or str(paper)
    cfg = RunConfig(
        mode=mode, seed=seed, out=out, device=device, progress=show_progress, root=out, data_dir=data_dir,
        from_scratch=from_scratch,
    )  # fmt: skip
    rec = _run_one(paper, name, cfg)
    write_report(out, mode, [rec])
    return rec


def _worker_run(paper: Any, name: str, kwargs: dict, quiet: bool) -> dict:
    """One paper in a fresh worker process: threads and CPU kernels pinned before the paper's package computes."""
    from ..progress import set_quiet
    from ..threads import pin_process_dispatch
    from ..threads import pin_process_threads

    pin_process_threads(
        1
    )  # what every library loaded from here on starts with; Paper.check pins its own count
    pin_process_dispatch(True)  # before any computation (a paper that opts out has it removed below)
    if quiet:
        set_quiet(True)
    threads, pin = 1, True
    try:
        loaded = paper if isinstance(paper, Paper) else load_paper(paper)
        threads, pin = loaded.threads, loaded.pin_dispatch
    except Exception:  # noqa: BLE001 - _run_one records the failure
        pass
    pin_process_threads(threads)
    if not pin:
        pin_process_dispatch(False)
    rec = run_paper_folder(paper, name=name, **kwargs)
    rec["isolated"] = True
    return rec


@contextmanager
def _pinned_children() -> Iterator[None]:
    """Processes spawned inside start with the kernel pins in their environment (before any import)."""
    from ..threads import DISPATCH_ENV
    from ..threads import OUTER_ENV
    from ..threads import pin_process_dispatch

    saved = {v: os.environ.get(v) for v in (*DISPATCH_ENV, OUTER_ENV)}
    pin_process_dispatch(True)
    try:
        yield
    finally:
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = old


def _reference_of(paper: Any) -> Any:
    """A Paper object as ``"module:attr"`` when its package's module holds it (so the worker imports the package
    after the pins are in place), else the object."""
    import sys

    mod = getattr(getattr(paper, "run", None), "__module__", None)
    if isinstance(paper, Paper) and mod in sys.modules and mod.startswith("iclr24."):
        for attr, value in vars(sys.modules[mod]).items():
            if value is paper:
                return f"{mod}:{attr}"
    return _reference(paper)


def run_isolated(paper: Any, *, name: str, **kwargs: Any) -> dict:
    """:func:`run_paper_folder` in a fresh process (threads and kernels pinned, as ``iclr24 reproduce`` runs each
    paper): what ``<name> reproduce`` uses, so a package's own command gives the same numbers as the umbrella.
    A paper that cannot be sent to another process runs here (recorded ``"isolated": false``)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    ref = _reference_of(paper)
    quiet = not kwargs.get("show_progress", True)
    in_main = getattr(getattr(paper, "run", None), "__module__", None) == "__main__"
    if in_main or not _picklable(ref):  # a worker could not import it
        return {**run_paper_folder(paper, name=name, **kwargs), "isolated": False}
    with _pinned_children(), ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as one:
        return one.submit(_worker_run, ref, name, kwargs, quiet).result()


def _reference(p: Any) -> Any:
    """What crosses into a worker process: an entry point's ``module:attr``; a Paper or a reference as it is."""
    return p.value if hasattr(p, "value") and hasattr(p, "load") else p


def _picklable(obj: Any) -> bool:
    import pickle

    try:
        pickle.dumps(obj)
    except Exception:  # noqa: BLE001
        return False
    return True


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
    from_scratch: bool = False,
) -> list[dict]:
    """Run each paper's claim checks into ``out/<name>/reproduce/`` and write the summary report into ``out``.

    ``papers`` maps name -> ``Paper``, an entry point, or a ``"module:attr"`` reference. Each paper runs in a fresh
    process of its own (``jobs`` of them at a time; one paper per worker process), with its declared threads pinned,
    so that no paper's numbers depend on which papers ran before it or beside it. A paper that raises (or whose
    process dies) is recorded as failed and the rest go on. A ``Paper`` object that cannot be pickled runs in this
    process instead (recorded ``"isolated": false``).
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive int, got {jobs!r}")
    out = ensure_out_dir(out)
    kwargs = dict(mode=mode, seed=seed, device=device, data_dir=data_dir, from_scratch=from_scratch)
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

    refs = {n: _reference(p) for n, p in papers.items()}
    local = [n for n in papers if not _picklable(refs[n])]
    for name in local:
        log(
            f"[{name}] running claim checks ({mode}) in this process (the paper cannot be sent to a worker) ..."
        )
        rec = run_paper_folder(
            papers[name], name=name, out=out / folders[name], show_progress=show_progress, **kwargs
        )
        done(name, {**rec, "isolated": False})
    remote = [n for n in papers if n not in local]
    if remote:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures import as_completed

        workers = min(jobs, len(remote))
        if workers > 1:
            log(f"running {len(remote)} papers, {workers} at a time, each in a fresh process ({mode}) ...")
        quiet = not show_progress or workers > 1

        def failed(n: str, e: BaseException) -> dict:  # a worker process that died
            return {
                "name": n,
                "status": "failed",
                "seconds": 0.0,
                "threads": None,
                "isolated": True,
                "error": f"{type(e).__name__}: {e}",
                "claims": [],
                "facts": [],
                "artifacts": [],
            }

        def kw(n: str) -> dict:
            return {**kwargs, "out": out / folders[n], "show_progress": not quiet}

        if workers == 1:
            for n in remote:
                log(f"[{n}] running claim checks ({mode}) in a fresh process ...")
                # a pool of its own per paper: a process that dies (out of memory) fails only its paper
                with _pinned_children(), ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as one:
                    try:
                        rec = one.submit(_worker_run, refs[n], n, kw(n), quiet).result()
                    except Exception as e:  # noqa: BLE001
                        rec = failed(n, e)
                done(n, rec)
        else:
            with (
                _pinned_children(),
                ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), max_tasks_per_child=1) as ex,
            ):
                futs = {ex.submit(_worker_run, refs[n], n, kw(n), quiet): n for n in remote}
                for f in as_completed(futs):
                    try:
                        rec = f.result()
                    except Exception as e:  # noqa: BLE001
                        rec = failed(futs[f], e)
                    done(futs[f], rec)
    final = [results[k] for k in papers]
    write_report(out, mode, final)
    return final
