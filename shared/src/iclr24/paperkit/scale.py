"""Paper scale: a few steps of a paper's own configuration, measured, and its whole run extrapolated.

A package gives ``Paper(paper_scale=fn)``, where ``fn(device: str) -> PaperScale`` builds the paper's headline
configuration (the official architecture, input size, batch and optimiser, on data in the paper's real format) and
returns one optimiser step at the largest micro-batch that fits, with the gradient-accumulation count that makes the
paper's batch. :func:`measure_paper_scale` times that step (median after a warm-up), counts its FLOPs
(``torch.utils.flop_counter.FlopCounterMode``), reads the process's peak resident memory (and
``torch.cuda.max_memory_allocated`` on CUDA) and extrapolates the paper's whole run: hours on this machine, and hours
on an H200 at an assumed fraction of its dense bf16 peak. ``iclr24 bench --paper-scale [NAMES]`` runs each paper's
measurement in a fresh process of its own, so each row's peak memory is that paper's alone.
"""

from __future__ import annotations

import math
import resource
import statistics
import sys
import tempfile
import time
import weakref
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from .hardware import H200_BF16_PEAK_FLOPS
from .hardware import H200_UTILISATION

__all__ = [
    "H200_BF16_PEAK_FLOPS",
    "H200_UTILISATION",
    "PaperScale",
    "ScaleRun",
    "accumulation_for",
    "count_flops",
    "endless",
    "fingerprint",
    "measure_paper_scale",
    "micro_batch_for",
    "paper_scale_markdown",
    "recorded_fingerprint",
    "shuffled",
    "steps_per_epoch",
    "stream",
    "tie",
    "train_step",
]


@dataclass
class PaperScale:
    """One paper step, as a package builds it for :func:`measure_paper_scale`.

    ``step()`` runs one micro-batch (forward, backward, optimiser step where the paper trains); a paper step is
    ``accumulation`` micro-steps. ``paper_steps``: the paper's whole run in paper steps (epochs x steps per epoch).
    ``flops_step``: optional callable counted for FLOPs instead of ``step`` (for steps that are not torch code, give
    ``flops_per_micro_step`` directly). ``notes``: what the configuration is and any stand-in data."""

    config: str
    step: Callable[[], Any]
    micro_batch: int
    accumulation: int
    paper_steps: int
    dataset: str = ""
    flops_step: Callable[[], Any] | None = None
    flops_per_micro_step: float | None = None
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.config, str) or not self.config.strip():
            raise ValueError("PaperScale.config must name the configuration")
        if not callable(self.step):
            raise ValueError("PaperScale.step must be callable")
        for n in ("micro_batch", "accumulation", "paper_steps"):
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"PaperScale.{n} must be a positive int, got {v!r}")


def endless(batches: Iterable) -> Iterator:
    """Epochs of ``batches`` (e.g. a shuffling ``DataLoader``) one after another, forever: a paper-scale step draws
    its next micro-batch from this, as the paper's training loop does epoch after epoch."""
    while True:
        yield from batches


def tie(
    step: Callable, folder: tempfile.TemporaryDirectory, closing: Callable[[], Any] | None = None
) -> Callable:
    """Keep the temporary ``folder`` a paper-scale ``step`` reads (its stand-in dataset) alive as long as the step,
    as ``step.tmp``, and remove it when the step is collected, after ``closing()`` (e.g. stop a server the step
    talks to) where given. The one lifetime mechanism for a step's stand-in data. Returns ``step``."""
    step.tmp = folder

    def release() -> None:
        if closing is not None:
            closing()
        folder.cleanup()

    weakref.finalize(step, release)
    return step


def micro_batch_for(device: str, *, cuda: int, cpu: int, override: int | None = None) -> int:
    """The micro-batch a paper-scale step runs: ``override`` (tests shrink it) or else ``cuda`` on a CUDA device
    and ``cpu`` on the CPU."""
    return override or (cuda if device.startswith("cuda") else cpu)


def accumulation_for(
    batch: int, micro_batch: int, *, name: str = "micro_batch", of: str = "the paper's batch {batch}"
) -> int:
    """How many micro-batches make the paper's ``batch``: ``batch // micro_batch``; an ``InputError`` unless
    ``micro_batch`` divides it (``name`` and ``of``, formatted with ``batch``, word the message)."""
    from .errors import InputError

    if micro_batch < 1 or batch % micro_batch:
        raise InputError(f"{name} must divide {of.format(batch=batch)}, got {micro_batch}")
    return batch // micro_batch


def steps_per_epoch(images: int, batch: int, *, drop_last: bool) -> int:
    """Optimiser steps in one epoch of ``images`` at ``batch``: the last partial batch dropped (timm's loader) or
    kept (a default ``DataLoader``)."""
    return images // batch if drop_last else -(-images // batch)


def stream(dataset, micro_batch: int, device: str, *, workers: int = 8, seed: int = 0) -> Iterator:
    """Micro-batches of ``dataset`` forever (:func:`endless`) from a shuffling ``DataLoader`` that drops the last
    partial batch, shuffled by a generator seeded ``seed``; on CUDA with the paper's ``workers`` (persistent) and
    pinned memory, on the CPU in the main process."""
    import torch

    cuda = device.startswith("cuda")
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=micro_batch,
        shuffle=True,
        drop_last=True,
        num_workers=workers if cuda else 0,
        pin_memory=cuda,
        persistent_workers=cuda and workers > 0,
        generator=torch.Generator().manual_seed(seed),
    )
    return endless(loader)


def shuffled(n: int, micro_batch: int, generator) -> Iterator:
    """Index micro-batches into ``n`` in-memory items forever, as a training loop over them draws: each epoch a new
    ``torch.randperm`` by ``generator``, cut into ``micro_batch`` slices, the last partial one dropped."""
    import torch

    while True:
        perm = torch.randperm(n, generator=generator)
        for at in range(0, n - micro_batch + 1, micro_batch):
            yield perm[at : at + micro_batch]


def _to_device(batch, dev):
    import torch

    if isinstance(batch, torch.Tensor):
        return batch.to(dev, non_blocking=True)
    if isinstance(batch, list | tuple):
        return type(batch)(_to_device(b, dev) for b in batch)
    return batch


def train_step(
    batches: Iterator,
    loss: Callable[..., Any],
    opt,
    device: str,
    *,
    prepare: Callable[[Any], Any] | None = None,
    before: Callable[[], Any] | None = None,
    after: Callable[[], Any] | None = None,
    clip: tuple[Iterable, float] | None = None,
    scaler=None,
    accumulate: int = 1,
) -> Callable[[], float]:
    """One micro-step of a paper's training loop, as a paper-scale ``step``: ``before()`` (e.g. set the schedule's
    rate), the next micro-batch from ``batches`` (``prepare(batch)`` on the host, then its tensors, in lists and
    tuples too, to ``device``, non-blocking), ``loss(*batch)`` (or ``loss(batch)`` for one tensor), zeroed
    gradients, the backward (through ``scaler`` when given, a ``torch.amp.GradScaler``), gradient-norm clipping of
    ``clip = (params, max_norm)``, the optimiser step, ``after()`` (a scheduler step, a mask or EMA update).

    ``accumulate > 1`` accumulates gradients as the paper's loop does: each micro-step's loss is divided by it,
    the gradients are zeroed before the first micro-step of a paper step, and the clipping, optimiser step and
    ``after()`` come after the last. Returns the micro-step's (divided) loss as a float."""
    import torch

    dev = torch.device(device)
    clip_params, max_norm = (list(clip[0]), clip[1]) if clip is not None else (None, None)
    state = {"micro": 0}

    def step() -> float:
        if before is not None:
            before()
        batch = next(batches)
        if prepare is not None:
            batch = prepare(batch)
        moved = _to_device(batch, dev)
        value = loss(moved) if isinstance(moved, torch.Tensor) else loss(*moved)
        if accumulate > 1:
            value = value / accumulate
        if state["micro"] == 0:
            opt.zero_grad(set_to_none=True)
        (value if scaler is None else scaler.scale(value)).backward()
        state["micro"] = (state["micro"] + 1) % accumulate
        if state["micro"] == 0:
            if scaler is not None:
                scaler.unscale_(opt)
            if clip_params is not None:
                torch.nn.utils.clip_grad_norm_(clip_params, max_norm)
            if scaler is not None:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            if after is not None:
                after()
        return float(value.detach())

    return step


class ScaleRun:
    """Where one paper-scale step is built, so that a package's ``paper_scale`` keeps only its paper's model,
    optimiser and notes: the ``device`` (``cuda``: whether it is a CUDA device), the ``micro_batch`` a micro-step
    runs (:func:`micro_batch_for`: ``cuda`` on a CUDA device, ``cpu`` on the CPU, both ``batch`` when not given,
    ``micro_batch`` overriding), the ``accumulation`` that makes the paper's ``batch`` (:func:`accumulation_for`,
    its ``InputError`` worded by ``name`` and ``of``; with ``partial``, ``ceil(batch / micro_batch)``: a paper step
    whose last micro-batch is partial) and, on first use, a temporary ``folder`` for the stand-in data that the
    step :meth:`paper_scale` returns keeps alive (:func:`tie`)."""

    def __init__(
        self,
        device: str,
        *,
        batch: int = 1,
        cuda: int | None = None,
        cpu: int | None = None,
        micro_batch: int | None = None,
        partial: bool = False,
        name: str = "micro_batch",
        of: str = "the paper's batch {batch}",
    ) -> None:
        self.device = str(device)
        self.cuda = self.device.startswith("cuda")
        self.micro_batch = micro_batch_for(
            self.device, cuda=cuda or batch, cpu=cpu or batch, override=micro_batch
        )
        if partial:
            self.accumulation = -(-batch // self.micro_batch)
        else:
            self.accumulation = accumulation_for(batch, self.micro_batch, name=name, of=of)
        self._tmp: tempfile.TemporaryDirectory | None = None

    @property
    def folder(self) -> Path:
        """The temporary folder for the stand-in data, made on first use and removed with the step."""
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="iclr24-paper-scale-")
        return Path(self._tmp.name)

    def stream(self, dataset, *, workers: int = 8, seed: int = 0) -> Iterator:
        """:func:`stream` of ``dataset`` at this run's micro-batch and device."""
        return stream(dataset, self.micro_batch, self.device, workers=workers, seed=seed)

    def train_step(self, batches: Iterator, loss: Callable[..., Any], opt, **hooks) -> Callable[[], float]:
        """:func:`train_step` on this run's device (``hooks``: its keyword arguments)."""
        return train_step(batches, loss, opt, self.device, **hooks)

    def paper_scale(
        self, step: Callable[[], Any], *, closing: Callable[[], Any] | None = None, **fields
    ) -> PaperScale:
        """The :class:`PaperScale` of ``step`` at this run's micro-batch and accumulation (``fields``: its
        other fields), ``step`` tied to the stand-in folder where one was made (``closing`` as in :func:`tie`)."""
        if self._tmp is not None:
            tie(step, self._tmp, closing)
        return PaperScale(step=step, micro_batch=self.micro_batch, accumulation=self.accumulation, **fields)


def count_flops(fn: Callable[[], Any]) -> int | None:
    """FLOPs of one call of ``fn`` by torch's own formulas (``torch.utils.flop_counter``: matrix products and
    convolutions, forward and backward); ``None`` without torch.

    Counted by a plain dispatch mode rather than ``FlopCounterMode`` itself: its per-module tracker installs backward
    hooks that refuse ``torch.autograd.grad(..., create_graph=True)`` inside a module (gradient-of-a-potential models
    such as LPN's f = grad psi, FIF's surrogate), while the totals are the same."""
    if "torch" not in sys.modules:
        try:
            import torch  # noqa: F401
        except ImportError:
            return None
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry

    total = 0

    class _Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            nonlocal total
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            formula = flop_registry.get(func._overloadpacket)
            if formula is not None:
                total += int(formula(*args, **kwargs, out_val=out))
            return out

    with _Count():
        fn()
    return total


def fingerprint(spec: PaperScale, *, flops: bool = True) -> dict:
    """What a paper-scale row records of ``spec`` apart from the timings and memory: the configuration, batch
    arithmetic, dataset and notes, and (``flops``) the FLOPs of one micro-step as :func:`measure_paper_scale`
    counts them (running the step once). Packages pin it in a parity test."""
    out = {k: getattr(spec, k) for k in ("config", "micro_batch", "accumulation", "paper_steps", "dataset")}
    out["notes"] = list(spec.notes)
    if flops:
        n = spec.flops_per_micro_step
        out["flops_per_micro_step"] = count_flops(spec.flops_step or spec.step) if n is None else n
    return out


def recorded_fingerprint(beside: str, name: str = "paper_scale_row.json") -> dict:
    """The :func:`fingerprint` a package recorded in the JSON file ``name`` in the folder of ``beside`` (a test's
    ``__file__``), for its parity test: ``assert fingerprint(spec) == recorded_fingerprint(__file__)``."""
    import json
    from pathlib import Path

    return json.loads((Path(beside).parent / name).read_text())


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def measure_paper_scale(
    spec: PaperScale,
    *,
    steps: int = 3,
    warmup: int = 1,
    device: str = "cpu",
    utilisation: float = H200_UTILISATION,
) -> dict:
    """Time ``spec.step`` (``warmup`` calls, then the median of ``steps``), count its FLOPs, read peak memory, and
    extrapolate the paper's run. Returns a JSON-ready row."""
    if not isinstance(spec, PaperScale):
        raise TypeError(f"paper_scale must return a PaperScale, got {type(spec).__name__}")
    if steps < 1 or warmup < 0:
        raise ValueError(f"steps must be >= 1 and warmup >= 0, got {steps}, {warmup}")
    cuda = device.startswith("cuda")

    def sync() -> None:
        if cuda:
            import torch

            torch.cuda.synchronize()

    for _ in range(warmup):
        spec.step()
    sync()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        spec.step()
        sync()
        times.append(time.perf_counter() - t0)
    micro = statistics.median(times)
    flops = spec.flops_per_micro_step
    if flops is None:
        flops = count_flops(spec.flops_step or spec.step)
    paper_step_s = micro * spec.accumulation
    flops_paper_step = None if flops is None else flops * spec.accumulation
    h200_hours = None
    if flops_paper_step:
        h200_hours = flops_paper_step * spec.paper_steps / (H200_BF16_PEAK_FLOPS * utilisation) / 3600
    cuda_peak = None
    if cuda:
        import torch

        cuda_peak = int(torch.cuda.max_memory_allocated())
    return {
        "config": spec.config,
        "dataset": spec.dataset,
        "device": device,
        "micro_batch": spec.micro_batch,
        "accumulation": spec.accumulation,
        "steps_timed": steps,
        "seconds_per_micro_step": micro,
        "seconds_per_paper_step": paper_step_s,
        "peak_rss_bytes": _peak_rss_bytes(),
        "cuda_peak_bytes": cuda_peak,
        "flops_per_paper_step": flops_paper_step,
        "paper_steps": spec.paper_steps,
        "hours_here": paper_step_s * spec.paper_steps / 3600,
        "hours_h200": h200_hours,
        "h200_utilisation": utilisation,
        "notes": list(spec.notes),
    }


def _fmt_bytes(b: float | None) -> str:
    if b is None:
        return "-"
    return f"{b / 2**30:.2f} GiB" if b >= 2**30 else f"{b / 2**20:.0f} MiB"


def _fmt(v: float | None, spec: str = ".3g") -> str:
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, spec)


def paper_scale_markdown(rows: list[dict]) -> str:
    """The table ``iclr24 bench --paper-scale`` prints: one row per package."""
    lines = [
        "| package | config | micro-batch x accumulation | s per paper step | peak RAM | FLOPs per paper step "
        "| paper steps | hours here | hours on an H200 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['package']} | **error**: {r['error']} | | | | | | | |")
            continue
        util = r.get("h200_utilisation", H200_UTILISATION)
        h200 = _fmt(r.get("hours_h200"))
        cells = [
            r["package"],
            r["config"].replace("|", "/"),
            f"{r['micro_batch']} x {r['accumulation']}",
            _fmt(r["seconds_per_paper_step"]),
            _fmt_bytes(r.get("peak_rss_bytes")),
            _fmt(r.get("flops_per_paper_step"), ".3e"),
            f"{r['paper_steps']:,}",
            _fmt(r["hours_here"]),
            f"{h200} (at {util:.0%} of bf16 peak)" if h200 != "-" else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
