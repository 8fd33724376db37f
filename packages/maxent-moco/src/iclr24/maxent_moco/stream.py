"""The samples every sample-based learner reads (:mod:`.sample`): the generative model's stream (a state-action
pair drawn uniformly, or ``a = pi(s)`` in policy evaluation, and one next state ``s' ~ P(.|s, a)``), your own
transitions in the same form, and the trace a run returns."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array

from .envs import TabularMDP

__all__ = ["SampleTrace", "sample_stream", "user_samples"]


@dataclass(frozen=True)
class SampleTrace:
    """``steps`` (m,) at which the learner was evaluated, ``errors`` (m,) (normalised value error in "pe",
    normalised sub-optimality of the current policy in "control"), the recorded ``values`` (m, S) and, in control,
    ``policies`` (m, S)."""

    name: str
    mode: str
    steps: np.ndarray
    errors: np.ndarray
    values: np.ndarray
    policies: np.ndarray | None = None


def sample_stream(
    mdp: TabularMDP, n_steps: int, seed: int, mode: str = "control", policy: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The generative-model samples: (s, a, s') arrays of length ``n_steps``, reproducible from ``seed``.
    ``policy`` (mode ``"pe"``): the action of each state, (S,) ints."""
    _check_common(mdp, n_steps, seed, mode)
    S, A = mdp.n_states, mdp.n_actions
    if mode == "pe":
        if policy is None:
            raise InputError("mode 'pe' needs the policy to evaluate (its action per state, shape (S,))")
        policy = check_array(policy, "policy", kind="int", ndim=1)
        if policy.shape != (S,) or policy.min() < 0 or policy.max() >= A:
            raise InputError(
                f"policy must be one action in [0, {A}) per state, shape ({S},), got {policy.shape}"
            )
    rng = np.random.default_rng(seed)
    s = rng.integers(S, size=n_steps)
    a = rng.integers(A, size=n_steps) if mode == "control" else np.asarray(policy)[s]
    u = rng.random(n_steps)
    cdf = np.cumsum(mdp.P, axis=2)
    s2 = np.empty(n_steps, dtype=np.int64)
    for i in range(0, n_steps, 8192):  # inverse-CDF sampling, in chunks to bound memory
        j = slice(i, i + 8192)
        s2[j] = (cdf[s[j], a[j]] < u[j, None]).sum(axis=1)
    return s, a, np.minimum(s2, S - 1)


def _is_torch_data(obj: object) -> bool:
    """A torch ``Dataset``/``DataLoader`` (checked only where torch is already imported: numpy users never load it)."""
    if sys.modules.get("torch") is None:
        return False
    try:
        from iclr24.paperkit.data.user import is_user_data

        return is_user_data(obj)
    except ImportError:  # a partial or stubbed torch
        return False


def user_samples(samples: object, mdp: TabularMDP, mode: str = "control", policy=None):
    """Your own transitions as the ``(s, a, s')`` int arrays a learner reads: a tuple of three (n,) arrays, an
    ``(n, 3)`` array (or list of rows), or a torch ``Dataset`` of ``(s, a, s')`` items / ``DataLoader`` of such
    batches (read once, in order).
    In "pe" each action must be the evaluated policy's ``policy[s]``."""
    if _is_torch_data(samples):
        from iclr24.paperkit.data.user import as_tensors

        parts = [t.detach().cpu().numpy() for t in as_tensors(samples, what="samples")]
        samples = parts[0] if len(parts) == 1 else tuple(parts)
    if isinstance(samples, tuple) and len(samples) == 3:  # columns (s, a, s')
        cols = [np.asarray(c) for c in samples]
        if any(c.ndim != 1 or c.dtype == object for c in cols) or len({len(c) for c in cols}) != 1:
            raise InputError(
                f"samples (s, a, s') must be three (n,) arrays of one length, got shapes {[c.shape for c in cols]}"
            )
        arr = np.stack(cols, axis=1)
    else:  # rows [s, a, s']
        arr = np.asarray(samples) if isinstance(samples, np.ndarray | list) else None
        if arr is None or arr.dtype == object or arr.ndim != 2 or arr.shape[1] != 3:
            raise InputError(
                "samples must be (s, a, s') as three (n,) int arrays, an (n, 3) int array, or a torch "
                f"Dataset/DataLoader of (s, a, s'), got {type(samples).__name__}"
                + (f" of shape {arr.shape}" if arr is not None and arr.dtype != object else "")
            )
    arr = check_array(arr, "samples", kind="int", ndim=2)
    if len(arr) == 0:
        raise InputError("samples: no transitions")
    S, A = mdp.n_states, mdp.n_actions
    s, a, s2 = (np.ascontiguousarray(arr[:, i], dtype=np.int64) for i in range(3))
    bad = (s < 0) | (s >= S) | (a < 0) | (a >= A) | (s2 < 0) | (s2 >= S)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"samples: transition {i} = {arr[i].tolist()} is out of range (states in [0, {S}), actions in [0, {A}))"
        )
    if mode == "pe" and policy is not None and (a != np.asarray(policy)[s]).any():
        i = int(np.flatnonzero(a != np.asarray(policy)[s])[0])
        raise InputError(
            f"samples: in 'pe' mode every action must be the evaluated policy's; transition {i} takes action "
            f"{int(a[i])} in state {int(s[i])}, the policy {int(np.asarray(policy)[s[i]])}"
        )
    return s, a, s2


def _check_common(mdp, n_steps, seed, mode):
    if not isinstance(mdp, TabularMDP):
        raise InputError(f"mdp must be a TabularMDP, got {type(mdp).__name__}")
    if isinstance(n_steps, bool) or not isinstance(n_steps, int | np.integer) or not 1 <= n_steps <= 10**9:
        raise InputError(f"n_steps must be a positive int, got {n_steps!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InputError(f"seed must be a non-negative int, got {seed!r}")
    if mode not in ("pe", "control"):
        raise InputError(f"mode must be 'pe' or 'control', got {mode!r}")
