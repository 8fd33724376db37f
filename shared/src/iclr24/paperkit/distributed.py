"""``torch.distributed`` for ``torchrun``: gloo on CPU, nccl on GPU; DDP wrapping; a sampler; a launcher for tests.

Under ``torchrun --nproc_per_node N script.py`` the environment carries RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR;
outside torchrun everything here degrades to a single process (rank 0 of 1), so the same training code runs both ways.
"""

from __future__ import annotations

import gc
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist

__all__ = [
    "DistInfo",
    "init_distributed",
    "cleanup_distributed",
    "is_distributed",
    "is_main_process",
    "wrap_ddp",
    "distributed_sampler",
    "all_reduce_mean",
    "broadcast_",
    "rank_and_world",
    "run_torchrun",
]


@dataclass(frozen=True)
class DistInfo:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str | None

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank_and_world() -> tuple[int, int]:
    """``(rank, world_size)`` of the initialised default group (under ``torchrun``), else ``(0, 1)``: what a
    training loop that shards its batches across ranks needs, without initialising anything itself."""
    if is_distributed():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def is_main_process() -> bool:
    return not is_distributed() or dist.get_rank() == 0


def init_distributed(backend: str | None = None, device: str | None = None) -> DistInfo:
    """Initialise the default process group from torchrun's environment (no-op single process otherwise).

    ``backend`` defaults to nccl when CUDA is available and ``device`` is not cpu, else gloo.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() and (device is None or str(device).startswith("cuda"))
    dev = torch.device(f"cuda:{local}") if use_cuda else torch.device(device or "cpu")
    if world <= 1:
        return DistInfo(0, 1, 0, dev, None)
    backend = backend or ("nccl" if use_cuda else "gloo")
    if backend not in ("gloo", "nccl", "mpi"):
        raise ValueError(f"backend must be gloo, nccl or mpi, got {backend!r}")
    if use_cuda:
        torch.cuda.set_device(dev)
    if not dist.is_initialized():
        _import_group_default_modules()
        dist.init_process_group(backend=backend, rank=rank, world_size=world)
    return DistInfo(rank, world, local, dev, backend)


# Modules whose functions take ``group=group.WORLD`` as a default argument. The default is evaluated when the module
# is imported: imported after ``init_process_group`` (DDP's first construction imports torch._dynamo, which imports
# torch.distributed.nn.functional), ten function defaults pin the default process group for the life of the
# interpreter. ``destroy_process_group`` then cannot free it: the gloo backend's worker threads and its transport
# loop thread keep running into interpreter exit, where they race the C++ static destructors, the cause of the
# occasional "terminate called without an active exception" (SIGABRT) after a 2-rank run had finished its work.
_GROUP_DEFAULT_MODULES = ("torch.distributed.nn.functional",)


def _import_group_default_modules() -> None:
    """Import :data:`_GROUP_DEFAULT_MODULES` while no group exists, so their defaults are ``None`` (= WORLD)."""
    import importlib

    for name in _GROUP_DEFAULT_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # pragma: no cover - a torch build without these modules
            pass


def _unpin_group_defaults(pg: object) -> int:
    """Replace ``pg`` by ``None`` in the default arguments of :data:`_GROUP_DEFAULT_MODULES` (for a group that was
    created outside :func:`init_distributed`, before those modules were imported); ``None`` means the default
    group to every collective there. Returns how many defaults were replaced."""
    n = 0
    for name in _GROUP_DEFAULT_MODULES:
        mod = sys.modules.get(name)
        for fn in vars(mod).values() if mod is not None else ():
            defaults = getattr(fn, "__defaults__", None)
            if isinstance(defaults, tuple) and any(d is pg for d in defaults):
                fn.__defaults__ = tuple(None if d is pg else d for d in defaults)
                n += 1
    return n


def cleanup_distributed() -> None:
    """Tear the process group down on every rank together and let its backend go.

    A barrier first, so no rank closes its connections while a peer still uses them; then
    ``destroy_process_group``, and the references torch itself keeps to the default group in module-level
    default arguments are dropped, so the backend (gloo: its worker and transport threads) is freed as soon as the
    caller's last DDP wrapper is, rather than living on into interpreter exit. Drop DDP-wrapped models before
    calling this (``del ddp``) to free it here and now.
    """
    if not is_distributed():
        return
    dist.barrier()
    pg = dist.group.WORLD
    dist.destroy_process_group()
    _unpin_group_defaults(pg)
    del pg
    gc.collect()  # DDP wrappers in reference cycles hold the backend until collected


def wrap_ddp(model: torch.nn.Module, info: DistInfo, **kwargs) -> torch.nn.Module:
    """Move ``model`` to the rank's device and wrap it in DDP when more than one process runs."""
    model = model.to(info.device)
    if info.world_size <= 1:
        return model
    from torch.nn.parallel import DistributedDataParallel as DDP

    ids = [info.device.index] if info.device.type == "cuda" else None
    return DDP(model, device_ids=ids, **kwargs)


def distributed_sampler(dataset, shuffle: bool = True, seed: int = 0, drop_last: bool = False):
    """A ``DistributedSampler`` under torchrun, else a plain random/sequential sampler (remember
    ``sampler.set_epoch(epoch)`` each epoch when it has one)."""
    from torch.utils.data import DistributedSampler
    from torch.utils.data import RandomSampler
    from torch.utils.data import SequentialSampler

    if is_distributed():
        return DistributedSampler(dataset, shuffle=shuffle, seed=seed, drop_last=drop_last)
    if shuffle:
        return RandomSampler(dataset, generator=torch.Generator().manual_seed(seed))
    return SequentialSampler(dataset)


def all_reduce_mean(t: torch.Tensor) -> torch.Tensor:
    """In-place mean of ``t`` over all ranks (identity in a single process)."""
    if is_distributed():
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        t /= dist.get_world_size()
    return t


def broadcast_(t: torch.Tensor, src: int = 0) -> torch.Tensor:
    """In-place broadcast of ``t`` from rank ``src`` (identity in a single process)."""
    if is_distributed():
        dist.broadcast(t, src=src)
    return t


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torchrun(
    script_args: list[str],
    nproc: int = 2,
    timeout: float = 300,
    env: dict | None = None,
    cwd: str | Path | None = None,
) -> subprocess.CompletedProcess:
    """Launch ``torchrun --standalone``-style on loopback with ``nproc`` CPU processes (gloo) and wait.

    ``script_args`` is what follows torchrun's options: a script path or ``-m module`` and its arguments.
    Raises ``RuntimeError`` with both outputs when a rank fails.
    """
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc_per_node={nproc}",
        "--nnodes=1",
        "--master_addr=127.0.0.1",
        f"--master_port={port}",
        *script_args,
    ]
    e = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", **(env or {})}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e, cwd=cwd)
    if proc.returncode != 0:
        raise RuntimeError(
            f"torchrun failed (exit {proc.returncode}):\nSTDOUT:\n{proc.stdout[-4000:]}\n"
            f"STDERR:\n{proc.stderr[-4000:]}"
        )
    return proc
