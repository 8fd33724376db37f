"""Benchmarks behind the ``bench`` subcommand: every sampler at the same oracle budget, timed against ULA in the
same run (interleaved medians), with oracle calls per sample and the proposal memory of one outer step."""

from __future__ import annotations

import resource
from dataclasses import dataclass

from iclr24.paperkit.bench import BenchReport
from iclr24.paperkit.bench import BenchResult
from iclr24.paperkit.bench import benchmark
from iclr24.paperkit.errors import InputError

from .data import gmm2d
from .recipes import sample_with_budget
from .sampler import rdmc_sample

__all__ = ["run_benchmarks", "sampler_benchmarks", "oracle_lines", "memory_check", "MemoryCheck"]


def run_benchmarks(mode: str = "quick") -> BenchReport:
    """The ``bench`` command: :func:`sampler_benchmarks` (smoke: n = 100, 400 calls/sample, 1 repeat; quick: n = 1000,
    4000 calls, 3 repeats; full: 5 repeats), the oracle table and :func:`memory_check` (n = 2000 in smoke, else
    10^5) as notes."""
    if mode not in ("smoke", "quick", "full"):
        raise InputError(f"mode must be smoke, quick or full, got {mode!r}")
    smoke = mode == "smoke"
    n, budget = (100, 400) if smoke else (1000, 4000)
    results = sampler_benchmarks(quick=mode != "full", n=n, budget=budget, repeats=1 if smoke else None)
    mem = memory_check(n=2_000 if smoke else 100_000, K=1 if smoke else 2)
    notes = [
        f"n = {n} samples at {budget} oracle calls per sample; each sampler timed against ULA in the same run "
        "(interleaved medians, torch's default threads); speedup = ULA median / ours median",
        *oracle_lines(results, n=n, budget=budget),
        f"memory: rdMC-IS on n={mem.n:,} particles, m={mem.m}, d={mem.d}, K={mem.K}: proposals chunked to "
        f"{mem.chunk_bytes / 2**20:.0f} MiB per chunk (unchunked: {mem.unchunked_bytes / 2**20:.0f} MiB per outer "
        f"step); peak RSS grew by {mem.rss_growth_bytes / 2**20:.0f} MiB; {mem.seconds:.1f} s",
    ]
    return BenchReport(results=results, notes=notes)


def sampler_benchmarks(
    quick: bool = True, n: int = 1000, budget: int = 4000, repeats: int | None = None
) -> list[BenchResult]:
    """rdMC-IS, rdMC-IS+ULA and MALA against ULA at ``budget`` oracle calls per sample on the 2-D mixture
    (``n`` samples; 3 repeats quick, 5 full)."""
    target = gmm2d()
    repeats = repeats or (3 if quick else 5)

    def job(method: str):
        return lambda: sample_with_budget(target, method, n, budget, seed=0)

    out = []
    for method in ("rdmc-is", "rdmc-is+ula", "mala"):
        out.append(
            benchmark(
                job(method),
                baseline=job("ula"),
                repeats=repeats,
                warmup=1,
                name=f"{method} (n={n}, {budget} calls/sample)",
                baseline_name="ula",
            )
        )
    return out


def oracle_lines(results: list[BenchResult], n: int = 1000, budget: int = 4000) -> list[str]:
    """One line per benchmarked sampler (and ULA): samples/s and oracle calls per sample."""
    target = gmm2d()
    rows = [(r.name.split(" ")[0], r.median_s) for r in results] + [("ula", results[0].baseline_median_s)]
    out = []
    for method, med in rows:
        _, info = sample_with_budget(target, method, 10, budget, seed=0)
        out.append(
            f"{method}: {n / med:,.0f} samples/s; per sample {info.grad_calls_per_sample:g} gradient + "
            f"{info.logp_calls_per_sample:g} log-density calls"
        )
    return out


@dataclass(frozen=True)
class MemoryCheck:
    n: int
    K: int
    m: int
    d: int
    max_floats: int
    chunk_bytes: int
    unchunked_bytes: int
    rss_growth_bytes: int
    seconds: float


def memory_check(n: int = 100_000, K: int = 2, m: int = 200, max_floats: int = 2**22) -> MemoryCheck:
    """rdMC-IS on n particles in 2-D: the proposals of one outer step (n·m·d floats) are processed in chunks of at
    most ``max_floats``, so memory stays bounded. Reports the chunk size in bytes, what an unchunked step would need,
    and the growth of the process's peak RSS during the run."""
    target = gmm2d()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    _, info = rdmc_sample(target, n, T=2.0, K=K, m=m, schedule="constant", seed=0, max_floats=max_floats)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    d = 2
    chunk = max(1, max_floats // (m * d))
    return MemoryCheck(
        n=n,
        K=K,
        m=m,
        d=d,
        max_floats=max_floats,
        chunk_bytes=min(chunk, n) * m * d * 8,
        unchunked_bytes=n * m * d * 8,
        rss_growth_bytes=after - before,
        seconds=info.seconds,
    )
