"""Benchmarks: ours and a baseline timed in the same run, interleaved, medians of repeats, and their ratio."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["BenchResult", "benchmark", "bench_table"]


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
) -> BenchResult:
    """Time ``fn`` (and ``baseline``) ``repeats`` times each, interleaved (ours, baseline, ours, ...), after
    ``warmup`` untimed calls of each. Reports medians and the speedup baseline/ours. ``memory=True`` also records
    peak memory (CUDA when available, else Python allocations traced by tracemalloc; torch CPU tensors are not
    seen by tracemalloc). ``sync`` is called before each clock read (e.g. ``torch.cuda.synchronize``)."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got repeats={repeats}, warmup={warmup}")
    if not callable(fn) or (baseline is not None and not callable(baseline)):
        raise ValueError("fn and baseline must be callables taking no arguments")
    sync = sync or (lambda: None)

    def timed(f: Callable[[], Any]) -> float:
        sync()
        t0 = time.perf_counter()
        f()
        sync()
        return time.perf_counter() - t0

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
        peak = _peak_cuda_mem(fn) or _peak_python_mem(fn)
        if baseline is not None:
            bpeak = _peak_cuda_mem(baseline) or _peak_python_mem(baseline)
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


def bench_table(results: list[BenchResult]) -> str:
    """A Markdown table of benchmark results (medians in ms and the speedup)."""
    lines = ["| case | ours (ms) | baseline | baseline (ms) | speedup |", "|---|---|---|---|---|"]
    for r in results:
        b = f"{r.baseline_median_s * 1e3:.3f}" if r.baseline_median_s is not None else "-"
        sp = f"x{r.speedup:.2f}" if r.speedup is not None else "-"
        lines.append(f"| {r.name} | {r.median_s * 1e3:.3f} | {r.baseline_name or '-'} | {b} | {sp} |")
    return "\n".join(lines) + "\n"
