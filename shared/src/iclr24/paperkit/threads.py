"""Pinned threads: the same numbers on every machine.

Float reductions split over threads add in another order when the thread count changes, so a claim's numbers
depend on the core count unless the count is pinned. :func:`pinned_threads` pins torch's intra-op threads and the
BLAS/OpenMP pools (threadpoolctl) to a declared count, whatever the machine has, and restores them afterwards;
:func:`pin_process_threads` does the same for a whole fresh process, before numpy or torch is imported, through the
environment variables those libraries read at start. :func:`machine_record` is what ``claims.json`` records.

Pinned kernels: the same numbers at every instruction-set level of one CPU (an AMD EPYC still computes other
numbers than an Intel Xeon: the root README). torch (ATen's vectorised kernels), MKL (its BLAS), oneDNN (its
convolutions) and OpenBLAS (numpy's BLAS) each pick their kernels by the CPU's instruction set: an AVX-512 Xeon and
an AVX2 EPYC add the same floats in another order, and a long training run amplifies the 1e-8 differences into
other numbers. :func:`pin_process_dispatch` pins all four to the AVX2 level, which every x86-64 CPU of the last
ten years has, through the variables they read on first use (``ATEN_CPU_CAPABILITY=avx2``, ``MKL_CBWR=AVX2``,
``ONEDNN_MAX_CPU_ISA=AVX2``, ``OPENBLAS_CORETYPE=Haswell``; an ``OPENBLAS_CORETYPE`` the machine already sets is
kept, since some machines set it to work around a processor that OpenBLAS mis-detects). Each paper's claims run
in a fresh process with the pin set before its first computation; :func:`dispatch_record` says what ran.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from contextlib import contextmanager

__all__ = [
    "DISPATCH_ENV",
    "cpu_model",
    "dispatch_record",
    "machine_record",
    "pin_process_dispatch",
    "pin_process_threads",
    "pinned_threads",
]

DISPATCH_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "OPENBLAS_CORETYPE": "Haswell",
}
_KEEP_IF_SET = ("OPENBLAS_CORETYPE",)
OUTER_ENV = "ICLR24_DISPATCH_OUTER"  # the variables as they were before the pin (json), restored on opt-out

_THREAD_ENV_VARS = (
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


def _pin(n: int) -> int | None:
    """The one place that pins: the thread variables to ``n`` and torch's intra-op pool if torch is loaded.
    Returns torch's previous count (None without torch)."""
    for var in _THREAD_ENV_VARS:
        os.environ[var] = str(n)
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    prev = torch.get_num_threads()
    torch.set_num_threads(n)
    return prev


def pin_process_threads(n: int) -> None:
    """Pin this process to ``n`` threads: the variables OpenMP/BLAS/torch read when they load (so a library
    imported later starts with ``n``), and torch's intra-op pool if torch is already imported. Call it first thing
    in a fresh worker process."""
    _pin(_check(n))


@contextmanager
def pinned_threads(n: int) -> Iterator[None]:
    """Run a block with torch's intra-op threads and every BLAS/OpenMP pool pinned to ``n``; restored after.

    Loaded pools are pinned directly (torch, threadpoolctl); the thread variables are set for the block too, so a
    library first imported inside it (a paper that imports torch in its ``run``) starts with ``n`` threads."""
    _check(n)
    with ExitStack() as stack:
        saved = {v: os.environ.get(v) for v in _THREAD_ENV_VARS}

        def restore() -> None:
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old

        stack.callback(restore)
        prev = _pin(n)
        if prev is not None:
            stack.callback(sys.modules["torch"].set_num_threads, prev)
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - threadpoolctl is a paperkit dependency
            pass
        else:
            stack.enter_context(threadpool_limits(limits=n))
        yield


def pin_process_dispatch(enabled: bool = True) -> dict:
    """Pin this process's CPU kernels to the AVX2 level (see the module docstring), or with ``enabled=False``
    remove the pins (the machine's native kernels). Takes effect only before the libraries' first computation:
    call it first thing in a fresh process. Returns :func:`dispatch_record`'s environment part."""
    import json

    if enabled:
        if OUTER_ENV not in os.environ:  # what the user had, for a paper that opts out in a child process
            os.environ[OUTER_ENV] = json.dumps({v: os.environ.get(v) for v in DISPATCH_ENV})
        for var, value in DISPATCH_ENV.items():
            if var in _KEEP_IF_SET and os.environ.get(var):
                continue
            os.environ[var] = value
    else:
        outer = json.loads(os.environ.pop(OUTER_ENV, "{}") or "{}")
        for var in DISPATCH_ENV:
            old = outer.get(var)
            if old is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = old
    return {v: os.environ.get(v) for v in DISPATCH_ENV}


def dispatch_record() -> dict:
    """The kernel pins in force (the variables) and what torch dispatches to (``torch.backends.cpu``)."""
    rec: dict = {"env": {v: os.environ.get(v) for v in DISPATCH_ENV}}
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            rec["aten"] = torch.backends.cpu.get_cpu_capability()
        except Exception:  # noqa: BLE001 - older torch
            rec["aten"] = None
    rec["pinned"] = all(rec["env"].get(v) for v in DISPATCH_ENV) and rec.get("aten", "AVX2") == "AVX2"
    return rec


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
