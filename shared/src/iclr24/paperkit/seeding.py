"""Seeding and deterministic mode."""

from __future__ import annotations

import os
import random
from contextlib import contextmanager

import numpy as np

__all__ = ["seed_everything", "deterministic"]


def seed_everything(seed: int) -> int:
    """Seed Python's ``random``, NumPy's global generator and torch (CPU and every CUDA device).

    Returns the seed so callers can log it. Raises ``ValueError`` for anything but a non-negative int < 2**32.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    seed = int(seed)
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch

        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)
    except ImportError:  # pragma: no cover - torch is a dependency, but keep numpy-only use possible
        pass
    return seed


def _set_deterministic(enabled: bool = True) -> None:
    """Switch torch's deterministic algorithms (and cuDNN's benchmark mode off) on or off."""
    import torch

    if enabled:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(enabled, warn_only=True)
    torch.backends.cudnn.deterministic = enabled
    torch.backends.cudnn.benchmark = not enabled


@contextmanager
def deterministic(enabled: bool = True):
    """Context manager form of :func:`_set_deterministic`; restores the previous setting on exit."""
    import torch

    prev = (
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
    )
    _set_deterministic(enabled)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(prev[0], warn_only=True)
        torch.backends.cudnn.deterministic = prev[1]
        torch.backends.cudnn.benchmark = prev[2]
