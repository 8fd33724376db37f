"""The umbrella command ``iclr24``: ``iclr24 list``, ``iclr24 reproduce [NAMES...]`` and ``iclr24 data``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..cli import FROM_SCRATCH_HELP
from ..cli import App
from ..cli import UsageError
from ..cli import arg
from ..cli import exit_code
from ..cli import positive_int
from ..data.commands import add_data_commands
from . import report
from .report import discover_papers
from .report import load_paper
from .report import run_papers

app = App(
    "iclr24", "ICLR 2024 papers as installable packages: list them, reproduce their claims, fetch real data."
)


@app.command("list", "List the installed paper packages and their one-line claims.", common=False)
def _list(args: argparse.Namespace) -> int:
    eps = discover_papers()
    if not eps:
        print("no paper packages installed (entry-point group 'iclr24.papers' is empty)")
        return 0
    for name, ep in eps.items():
        try:
            p = load_paper(ep)
            print(f"{name:<18} {p.title}\n{'':<18} {p.summary}")
        except Exception as e:  # noqa: BLE001
            print(f"{name:<18} (cannot load: {type(e).__name__}: {e})")
    return 0


def _reproduce_parts(args: argparse.Namespace) -> list[str]:
    """What ``iclr24 reproduce`` owns in its --out (other runs may live there too, e.g. results/<name>/train)."""
    names = list(args.names) or list(discover_papers())
    return ["REPORT.md", "claims.json", *[f"{n}/reproduce/" for n in dict.fromkeys(names)]]


@app.command(
    "reproduce",
    "Run the claim checks of the named (default: all installed) paper packages; writes REPORT.md and claims.json "
    "into --out and each paper's report and plots into --out/<name>/reproduce/ (the rest of --out is left alone; "
    "--overwrite replaces an earlier reproduce run's files there).",
    arg("names", nargs="*", metavar="NAME", help="paper packages to run (default: all installed)"),
    arg("--strict", action="store_true", help="exit 1 when a claim does not hold or a measurement failed"),
    arg(
        "--jobs",
        type=positive_int,
        default=1,
        help="papers run in parallel processes (cores split between them)",
    ),
    arg("--from-scratch", action="store_true", help=FROM_SCRATCH_HELP),
    modes=True,
    device=True,
    data=True,
    default_out="results",
    parts=_reproduce_parts,
)
def _reproduce(args: argparse.Namespace) -> int:
    eps = discover_papers()
    names = list(args.names) or list(eps)
    unknown = [n for n in names if n not in eps]
    if unknown:
        known = ", ".join(eps) or "none installed"
        raise UsageError(f"unknown paper package(s): {', '.join(unknown)} (installed: {known})")
    res = run_papers(
        {n: eps[n] for n in dict.fromkeys(names)},
        mode=args.mode,
        seed=args.seed,
        out=args.out,
        device=args.device,
        show_progress=not args.quiet,
        data_dir=args.data_dir,
        jobs=args.jobs,
        from_scratch=args.from_scratch,
    )
    return exit_code(res, strict=args.strict, out=args.out)


def _paper_scale_worker(ref, name: str, device: str) -> dict:
    """One paper's paper-scale row, in a fresh process (its peak memory is its own)."""
    from ..scale import measure_paper_scale
    from ..threads import pin_process_threads
    from ..threads import pinned_threads

    pin_process_threads(1)
    paper = load_paper(ref)
    if paper.paper_scale is None:
        return {"package": name, "error": None, "missing": True}
    with pinned_threads(paper.threads):
        row = measure_paper_scale(paper.paper_scale(device), device=device)
    return {"package": name, "threads": paper.threads, "error": None, **row}


def _scale_machine(device: str) -> dict:
    """Where the paper-scale rows ran: the CPU record, and the GPU's name on CUDA."""
    from ..threads import machine_record

    rec = machine_record(1)
    if device.startswith("cuda"):
        import torch

        rec["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return rec


@app.command(
    "bench",
    "Paper scale: run a few steps of each named (default: all) paper's own configuration, each in a fresh "
    "process; print seconds per paper step, peak memory, FLOPs and the whole run's hours here and on an H200; "
    "writes paper_scale.json and paper_scale.md into --out.",
    arg("names", nargs="*", metavar="NAME", help="paper packages (default: all installed)"),
    arg("--paper-scale", action="store_true", required=True, help="measure the papers' own configurations"),
    device=True,
    seed=False,
    default_out="results/paper-scale",
)
def _bench(args: argparse.Namespace) -> int:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    from pathlib import Path

    from ..io import atomic_write_json
    from ..io import atomic_write_text
    from ..scale import paper_scale_markdown

    eps = discover_papers()
    names = list(args.names) or list(eps)
    unknown = [n for n in names if n not in eps]
    if unknown:
        raise UsageError(f"unknown paper package(s): {', '.join(unknown)} (installed: {', '.join(eps)})")
    rows = []
    for n in dict.fromkeys(names):
        print(f"[{n}] paper-scale steps on {args.device} in a fresh process ...", flush=True)
        with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as ex:
            try:
                row = ex.submit(_paper_scale_worker, eps[n].value, n, args.device).result()
            except Exception as e:  # noqa: BLE001 - out of memory, a crash: recorded, the others go on
                row = {"package": n, "error": f"{type(e).__name__}: {e}"[:300]}
        rows.append(row)
    measured = [r for r in rows if not r.get("missing")]
    missing = [r["package"] for r in rows if r.get("missing")]
    text = paper_scale_markdown(measured)
    if missing:
        text += f"\nNo PAPER_SCALE configuration yet: {', '.join(missing)}.\n"
    print(text)
    out = Path(args.out)
    atomic_write_json(
        out / "paper_scale.json",
        {"device": args.device, "machine": _scale_machine(args.device), "rows": rows},
    )
    atomic_write_text(out / "paper_scale.md", f"# Paper scale ({args.device})\n\n{text}")
    print(f"wrote {out / 'paper_scale.json'} and {out / 'paper_scale.md'}")
    return 1 if any(r.get("error") for r in rows) else 0


# the data folder commands (`iclr24 data list|get NAME`); `data list` names the installed papers using each file
add_data_commands(app, discover=lambda: report.discover_papers())


def main(argv: Sequence[str] | None = None) -> int:
    return app.main(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
