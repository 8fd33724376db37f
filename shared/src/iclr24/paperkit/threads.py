"""Pinned threads: the same numbers on every machine.

Float reductions split over threads add in another order when the thread count changes, so a claim's numbers
depend on the core count unless the count is pinned. :func:`pinned_threads` pins torch's intra-op threads and the
BLAS/OpenMP pools (threadpoolctl) to a declared count, whatever the machine has, and restores them afterwards;
:func:`pin_process_threads` does the same for a whole fresh process, before numpy or torch is imported, through the
environment variables those libraries read at start. :func:`machine_record` is what ``claims.json`` records.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

__all__ = ["THREAD_ENV_VARS", "cpu_model", "machine_record", "pin_process_threads", "pinned_threads"]

THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def _check(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"thread count must be a positive int, got {n!r}")
    return n


def pin_process_threads(n: int) -> None:
    """Pin this process to ``n`` threads: the variables OpenMP/BLAS/torch read when they load (so a library
    imported later starts with ``n``), and torch's intra-op pool if torch is already imported. Call it first thing
    in a fresh worker process."""
    _check(n)
    for var in THREAD_ENV_VARS:
        os.environ[var] = str(n)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)


@contextmanager
def pinned_threads(n: int) -> Iterator[None]:
    """Run a block with torch's intra-op threads and every BLAS/OpenMP pool pinned to ``n``; restored after.

    Loaded pools are pinned directly (torch, threadpoolctl); the thread variables are set for the block too, so a
    library first imported inside it (a paper that imports torch in its ``run``) starts with ``n`` threads."""
    _check(n)
    with ExitStack() as stack:
        saved = {v: os.environ.get(v) for v in THREAD_ENV_VARS}

        def restore() -> None:
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old

        stack.callback(restore)
        for v in THREAD_ENV_VARS:
            os.environ[v] = str(n)
        torch = sys.modules.get("torch")
        if torch is not None:
            prev = torch.get_num_threads()
            torch.set_num_threads(n)
            stack.callback(torch.set_num_threads, prev)
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - threadpoolctl is a paperkit dependency
            pass
        else:
            stack.enter_context(threadpool_limits(limits=n))
        yield


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else ``platform.processor()``."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine_record(threads: int | None = None) -> dict:
    """What a run records about where it ran: threads, torch and numpy versions, CPU model, cores, platform."""
    rec: dict = {
        "threads": threads,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    for mod in ("numpy", "torch"):
        m = sys.modules.get(mod)
        if m is not None:
            rec[mod] = getattr(m, "__version__", None)
            continue
        try:  # the installed version, without importing the module
            from importlib.metadata import version

            rec[mod] = version(mod)
        except Exception:  # noqa: BLE001 - not installed
            rec[mod] = None
    return rec
