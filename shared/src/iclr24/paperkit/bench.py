"""Benchmarks: ours and a baseline timed in the same run, interleaved, medians of repeats, and their ratio."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from typing import Any

__all__ = ["BenchReport", "BenchResult", "benchmark", "benchmark_many", "bench_table", "peak_rss_delta"]


@dataclass(frozen=True)
class BenchResult:
    name: str
    median_s: float
    times_s: list[float]
    baseline_name: str | None = None
    baseline_median_s: float | None = None
    baseline_times_s: list[float] | None = None
    peak_mem_bytes: int | None = None
    baseline_peak_mem_bytes: int | None = None

    @property
    def speedup(self) -> float | None:
        """baseline median / ours median (> 1 means ours is faster)."""
        if self.baseline_median_s is None or self.median_s == 0:
            return None
        return self.baseline_median_s / self.median_s

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "speedup": self.speedup}

    def __str__(self) -> str:
        s = f"{self.name}: {self.median_s * 1e3:.3f} ms"
        if self.baseline_median_s is not None:
            s += f" | {self.baseline_name}: {self.baseline_median_s * 1e3:.3f} ms | speedup x{self.speedup:.2f}"
        return s


@dataclass(frozen=True)
class BenchReport:
    """What a package's ``run_benchmarks(mode)`` returns: the results, notes on how they were measured, and the
    files it wrote (paths relative to the bench's out folder)."""

    results: list[BenchResult]
    notes: list[str] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if isinstance(self.results, BenchResult) or not all(isinstance(r, BenchResult) for r in self.results):
            raise TypeError(f"BenchReport.results must be a list of BenchResult, got {self.results!r:.80}")
        if isinstance(self.notes, str) or not all(isinstance(n, str) for n in self.notes):
            raise TypeError("BenchReport.notes must be a list of strings")
        object.__setattr__(self, "results", list(self.results))
        object.__setattr__(self, "notes", list(self.notes))
        object.__setattr__(self, "artifacts", [str(a) for a in self.artifacts])

    def to_dict(self) -> dict[str, Any]:
        return {
            "results": [r.to_dict() for r in self.results],
            "notes": list(self.notes),
            "artifacts": list(self.artifacts),
        }

    def to_markdown(self) -> str:
        text = bench_table(self.results)
        if self.notes:
            text += "\n" + "\n".join(f"- {n}" for n in self.notes) + "\n"
        return text


def _threads(threads: int | None):
    """Pin BLAS/OpenMP threads (threadpoolctl, when installed) and, if torch is already imported, torch's
    intra-op threads; restored afterwards. Never imports torch into a package that does not use it."""
    if threads is None:
        return nullcontext()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive int or None, got {threads!r}")
    from .threads import pinned_threads

    return pinned_threads(threads)


def _read_proc_status(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def peak_rss_delta(fn: Callable[[], Any]) -> int | None:
    """Growth of the process's peak resident memory (bytes) while ``fn()`` runs: Linux's VmHWM after resetting it
    through ``/proc/self/clear_refs``. Sees torch CPU tensors (tracemalloc does not). ``None`` where unavailable."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    before = _read_proc_status("VmRSS")
    fn()
    peak = _read_proc_status("VmHWM")
    if before is None or peak is None:
        return None
    return max(peak - before, 0)


def _peak_python_mem(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def _peak_cuda_mem(fn: Callable[[], Any]) -> int | None:
    try:
        import torch
    except ImportError:  # pragma: no cover
        return None
    if not torch.cuda.is_available():
        return None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return int(torch.cuda.max_memory_allocated())


def benchmark(
    fn: Callable[[], Any],
    *,
    baseline: Callable[[], Any] | None = None,
    repeats: int = 7,
    warmup: int = 2,
    name: str = "ours",
    baseline_name: str = "baseline",
    memory: bool = False,
    sync: Callable[[], None] | None = None,
    clock: str = "wall",
    threads: int | None = None,
) -> BenchResult:
    """Time ``fn`` (and ``baseline``) ``repeats`` times each, interleaved (ours, baseline, ours, ...), after
    ``warmup`` untimed calls of each. Reports medians and the speedup baseline/ours. ``memory=True`` also records
    peak memory (CUDA when available, else the growth of peak RSS, else Python allocations by tracemalloc).
    ``sync`` is called before each clock read (e.g. ``torch.cuda.synchronize``).
    ``clock="cpu"`` times with the process's CPU time (all threads) instead of the wall clock: steadier on a
    shared machine, and equal to the wall time of a single-threaded run on an idle one.
    ``threads=N`` pins the thread count for every call (warm-up and timed): BLAS/OpenMP through threadpoolctl
    where installed, and torch's intra-op threads when torch is in use; restored afterwards."""
    with _threads(threads):
        return _benchmark(fn, baseline, repeats, warmup, name, baseline_name, memory, sync, clock)


def _benchmark(fn, baseline, repeats, warmup, name, baseline_name, memory, sync, clock) -> BenchResult:
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got repeats={repeats}, warmup={warmup}")
    if not callable(fn) or (baseline is not None and not callable(baseline)):
        raise ValueError("fn and baseline must be callables taking no arguments")
    sync = sync or (lambda: None)
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
    now = time.perf_counter if clock == "wall" else time.process_time

    def timed(f: Callable[[], Any]) -> float:
        sync()
        t0 = now()
        f()
        sync()
        return now() - t0

    for _ in range(warmup):
        fn()
        if baseline is not None:
            baseline()
    ours_t: list[float] = []
    base_t: list[float] = []
    for i in range(repeats):
        order = [(fn, ours_t), (baseline, base_t)] if i % 2 == 0 else [(baseline, base_t), (fn, ours_t)]
        for f, acc in order:
            if f is not None:
                acc.append(timed(f))
    peak = bpeak = None
    if memory:

        def mem(f: Callable[[], Any]) -> int | None:
            cuda = _peak_cuda_mem(f)
            if cuda is not None:
                return cuda
            rss = peak_rss_delta(f)
            return rss if rss is not None else _peak_python_mem(f)

        peak = mem(fn)
        if baseline is not None:
            bpeak = mem(baseline)
    return BenchResult(
        name=name,
        median_s=statistics.median(ours_t),
        times_s=ours_t,
        baseline_name=baseline_name if baseline is not None else None,
        baseline_median_s=statistics.median(base_t) if baseline is not None else None,
        baseline_times_s=base_t if baseline is not None else None,
        peak_mem_bytes=peak,
        baseline_peak_mem_bytes=bpeak,
    )


def benchmark_many(
    cases: dict[str, Callable[[], Any]],
    *,
    baseline: str,
    repeats: int = 5,
    warmup: int = 1,
    clock: str = "wall",
    sync: Callable[[], None] | None = None,
    threads: int | None = None,
) -> list[BenchResult]:
    """Time several callables round-robin (the order rotates every repeat) and report each against the one named
    ``baseline``: one ``BenchResult`` per case, with the baseline's medians attached. ``threads`` as in
    :func:`benchmark`."""
    with _threads(threads):
        return _benchmark_many(cases, baseline, repeats, warmup, clock, sync)


def _benchmark_many(cases, baseline, repeats, warmup, clock, sync) -> list[BenchResult]:
    if baseline not in cases:
        raise ValueError(f"baseline {baseline!r} is not one of the cases {list(cases)}")
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got repeats={repeats}, warmup={warmup}")
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
    now = time.perf_counter if clock == "wall" else time.process_time
    sync = sync or (lambda: None)
    names = list(cases)
    for _ in range(warmup):
        for n in names:
            cases[n]()
    times: dict[str, list[float]] = {n: [] for n in names}
    for i in range(repeats):
        k = i % len(names)
        for n in names[k:] + names[:k]:
            sync()
            t0 = now()
            cases[n]()
            sync()
            times[n].append(now() - t0)
    base = times[baseline]
    return [
        BenchResult(
            name=n,
            median_s=statistics.median(times[n]),
            times_s=times[n],
            baseline_name=baseline,
            baseline_median_s=statistics.median(base),
            baseline_times_s=base,
        )
        for n in names
    ]


def bench_table(results: list[BenchResult]) -> str:
    """A Markdown table of benchmark results (medians in ms and the speedup)."""
    lines = ["| case | ours (ms) | baseline | baseline (ms) | speedup |", "|---|---|---|---|---|"]
    for r in results:
        b = f"{r.baseline_median_s * 1e3:.3f}" if r.baseline_median_s is not None else "-"
        sp = f"x{r.speedup:.2f}" if r.speedup is not None else "-"
        lines.append(f"| {r.name} | {r.median_s * 1e3:.3f} | {r.baseline_name or '-'} | {b} | {sp} |")
    return "\n".join(lines) + "\n"
