"""Built-in offline environments, and a loader for a user's own tabular MDP saved as ``.npz``.

Everything this package needs is generated (CliffWalk, Garnet, the maze): nothing is downloaded. Your own MDP:
``np.savez("my_mdp.npz", P=P, R=R, gamma=0.9)`` with ``P`` (S, A, S), ``R`` (S, A) or (S,), then
``load_mdp("my_mdp.npz")`` or ``maxent-moco run --mdp my_mdp.npz``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from iclr24.paperkit.data.readers import load_npz
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from .envs import TabularMDP
from .envs import cliffwalk
from .envs import garnet
from .envs import maze33

__all__ = ["ENVIRONMENTS", "load_env", "load_mdp", "save_mdp"]

ENVIRONMENTS = ("cliffwalk", "garnet", "maze33")


def load_env(name: str, *, seed: int = 0, gamma: float = 0.9) -> TabularMDP:
    """A built-in environment by name: "cliffwalk" (the paper's 6x6), "garnet" (36 states, seeded) or "maze33" (the
    official code's 3x3 maze)."""
    if name == "cliffwalk":
        return cliffwalk(gamma=gamma)
    if name == "maze33":
        return maze33(gamma=gamma)
    if name == "garnet":
        return garnet(seed=seed, gamma=gamma)
    raise InputError(
        f"unknown environment {name!r}; expected one of {ENVIRONMENTS} (or load your own with load_mdp(path))"
    )


def load_mdp(path: str | os.PathLike) -> TabularMDP:
    """Load a tabular MDP from an ``.npz`` holding ``P`` (S, A, S), ``R`` (S, A) or (S,) and ``gamma``."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(
            f"no MDP file at {p}; save one with np.savez('{p.name}', P=P, R=R, gamma=0.9) "
            "(P of shape (S, A, S), R of shape (S, A) or (S,))"
        )
    try:
        # paperkit's reader: plain arrays only (no pickle); a truncated, corrupt or foreign file is one clear error
        z = load_npz(p)
    except ValueError as e:
        raise InputError(f"{e}; expected an .npz written by np.savez with arrays P, R and gamma") from None
    missing = [k for k in ("P", "R", "gamma") if k not in z]
    if missing:
        raise InputError(
            f"{p} lacks the arrays {missing}; it has {sorted(z)}. Expected P (S, A, S), "
            "R (S, A) or (S,) and a scalar gamma"
        )
    try:
        gamma = float(z["gamma"])
        start = int(z["start"]) if "start" in z else 0
    except (TypeError, ValueError):
        raise InputError(f"{p}: gamma (and start, if given) must be scalars") from None
    return TabularMDP(z["P"], z["R"], gamma, name=p.stem, start=start)


def save_mdp(mdp: TabularMDP, path: str | os.PathLike) -> Path:
    """Save ``mdp`` as ``.npz`` (atomically) so that :func:`load_mdp` reads it back."""
    import io

    from iclr24.paperkit import atomic_write_bytes

    buf = io.BytesIO()
    np.savez(buf, P=mdp.P, R=mdp.R, gamma=mdp.gamma, start=mdp.start)
    return atomic_write_bytes(path, buf.getvalue())
