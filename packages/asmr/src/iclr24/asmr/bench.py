"""Benchmarks behind ``asmr bench``: ours against the baseline in one run, interleaved medians and ratios.

* full-grid render: ASMR's activation-sharing render vs SIREN (same depth and width), at 128^2, 512^2, 1024^2;
* ASMR's shared render vs its own per-coordinate forward (the same numbers, computed without sharing);
* training seconds per full-batch iteration (ASMR through its shared render vs SIREN) at 128^2;
* peak resident memory of the shared render at 1024^2 with and without chunking.

``--smoke`` runs the 128^2 cases only (one repeat each, no memory study): the pipeline, in seconds.
"""

from __future__ import annotations

import dataclasses
import os

import torch

from iclr24.paperkit import BenchReport
from iclr24.paperkit import BenchResult
from iclr24.paperkit import benchmark
from iclr24.paperkit import peak_rss_delta
from iclr24.paperkit.errors import InputError

from .decomposition import grid_coords
from .decomposition import suggest_bases
from .model import ASMR
from .model import SIREN

__all__ = ["run_benchmarks", "peak_rss_delta"]

HIDDEN = 128
LEVELS = 4
CHUNK = 1 << 18  # points per SIREN / per-coordinate forward batch


def _models(size: int) -> tuple[ASMR, SIREN]:
    torch.manual_seed(0)
    shape = (size, size)
    bases = [suggest_bases(size, LEVELS)] * 2
    return ASMR(2, 1, shape, bases, HIDDEN).eval(), SIREN(2, 1, shape, HIDDEN, LEVELS).eval()


def run_benchmarks(mode: str = "quick") -> BenchReport:
    """The benchmark results and a few lines of notes (memory, threads). ``mode``: smoke, quick or full."""
    if mode not in ("smoke", "quick", "full"):
        raise InputError(f"mode must be smoke, quick or full, got {mode!r}")
    results, notes = _render_benches(mode)
    results.append(_train_bench(mode))
    if mode != "smoke":
        _memory_benches(mode == "quick", results, notes)
    return BenchReport(results=results, notes=notes)


def _render_benches(mode: str) -> tuple[list[BenchResult], list[str]]:
    """Full-grid render: ASMR's shared render vs SIREN, and vs ASMR's own per-coordinate forward."""
    quick, smoke = mode != "full", mode == "smoke"
    results: list[BenchResult] = []
    notes = [
        "times: process CPU time, torch pinned to 1 thread (benchmark(threads=1, clock='cpu')), medians of "
        f"interleaved repeats; ASMR L={LEVELS} h={HIDDEN} (bases from suggest_bases) vs SIREN "
        f"{LEVELS}x{HIDDEN}, float32 CPU (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')})"
    ]
    sizes = (128,) if smoke else (128, 512, 1024)
    with torch.no_grad():
        for size in sizes:
            asmr, siren = _models(size)
            big = size >= 1024
            reps = 1 if smoke else (1 if big else 3) if quick else (3 if big else 7)
            coords = grid_coords((size, size))
            against = (  # ASMR's row name, the baseline, the baseline's row name
                (
                    f"ASMR shared render {size}^2",
                    lambda s=siren: s.render(chunk_size=CHUNK),
                    f"SIREN {LEVELS}x{HIDDEN} render {size}^2",
                ),
                (
                    f"ASMR shared render {size}^2 ",
                    lambda a=asmr, c=coords: torch.cat([a(x) for x in c.split(CHUNK)]),
                    f"ASMR per-coordinate forward {size}^2",
                ),
            )
            for name, baseline, baseline_name in against:
                results.append(
                    benchmark(
                        lambda a=asmr: a.render(),
                        baseline=baseline,
                        repeats=reps,
                        warmup=0 if big else 1,
                        clock="cpu",
                        threads=1,
                        name=name,
                        baseline_name=baseline_name,
                    )
                )
            del asmr, siren, coords
    return results, notes


def _train_bench(mode: str) -> BenchResult:
    """Training: seconds per full-batch step at 128^2."""
    asmr, siren = _models(128)
    target = torch.rand(128 * 128, 1)

    def step(model: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
        loss = torch.mean((model.render() - target) ** 2)
        opt.zero_grad()
        loss.backward()
        opt.step()

    oa = torch.optim.Adam(asmr.parameters(), 1e-4)
    os_ = torch.optim.Adam(siren.parameters(), 1e-4)
    return benchmark(
        lambda: step(asmr, oa),
        baseline=lambda: step(siren, os_),
        repeats={"smoke": 1, "quick": 5, "full": 11}[mode],
        warmup=1,
        clock="cpu",
        threads=1,
        name="ASMR train step 128^2 (full batch)",
        baseline_name=f"SIREN {LEVELS}x{HIDDEN} train step 128^2",
    )


def _memory_benches(quick: bool, results: list[BenchResult], notes: list[str]) -> None:
    """Peak memory of the 1024^2 render, chunked vs not; in --full also an 8192^2 chunked render."""
    # Memory: 1024^2 shared render, unchunked vs chunked (2^16 cells per hidden block).
    asmr, _ = _models(1024)
    with torch.no_grad():
        chunk = 1 << 16
        m_full = peak_rss_delta(lambda: asmr.render())
        cells_full = asmr.last_render_peak_cells
        m_chunk = peak_rss_delta(lambda: asmr.render(chunk_size=chunk))
        cells_chunk = asmr.last_render_peak_cells
        r = benchmark(
            lambda: asmr.render(chunk_size=chunk),
            baseline=lambda: asmr.render(),
            repeats=1 if quick else 3,
            warmup=0,
            clock="cpu",
            threads=1,
            name="ASMR chunked render 1024^2 (2^16 cells)",
            baseline_name="ASMR unchunked render 1024^2",
        )
    results.append(dataclasses.replace(r, peak_mem_bytes=m_chunk, baseline_peak_mem_bytes=m_full))

    def mb(x: int | None) -> str:
        return "n/a" if x is None else f"{x / 2**20:.1f} MiB"

    if not quick:  # an 8192^2 grid (Pluto's size) with a narrow model: bounded memory through chunking
        torch.manual_seed(0)
        huge = ASMR(2, 1, (8192, 8192), [[4, 4, 4, 4, 2, 16]] * 2, hidden=16).eval()
        with torch.no_grad():
            t = benchmark(
                lambda: huge.render(chunk_size=1 << 20),
                repeats=1,
                warmup=0,
                clock="cpu",
                threads=1,
                name="ASMR chunked render 8192^2 (h=16, 2^20 cells)",
            )
            m_huge = peak_rss_delta(lambda: huge.render(chunk_size=1 << 20))
        results.append(dataclasses.replace(t, peak_mem_bytes=m_huge))
        notes.append(
            f"8192^2 render, h=16, chunk 2^20 cells: peak RSS growth {mb(m_huge)} (the 256 MiB output "
            f"included; unchunked the last hidden layer alone would be {8192**2 * 16 * 4 / 2**30:.0f} GiB)"
        )

    notes.append(
        f"peak RSS growth of the 1024^2 render: unchunked {mb(m_full)} (largest hidden block "
        f"{cells_full:,} cells x {HIDDEN} = {cells_full * HIDDEN * 4 / 2**20:.0f} MiB), chunked {mb(m_chunk)} "
        f"(largest block {cells_chunk:,} cells = {cells_chunk * HIDDEN * 4 / 2**20:.0f} MiB; the 4 MiB "
        "output is the floor)"
    )
