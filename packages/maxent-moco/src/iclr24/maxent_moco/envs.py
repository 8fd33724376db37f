"""Tabular MDPs (CliffWalk, Garnet, any user arrays) and the model-error makers of the paper's experiments.

Conventions: ``P[s, a, s']`` (shape (S, A, S)), ``R[s, a]`` (shape (S, A)), discount ``gamma`` in [0, 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

__all__ = [
    "MODEL_KINDS",
    "TabularMDP",
    "adversarial_kernel",
    "adversarial_smoothed",
    "cliffwalk",
    "garnet",
    "identity_smoothed",
    "locally_smoothed",
    "make_model",
    "maze33",
]


@dataclass(frozen=True)
class TabularMDP:
    """A finite MDP: ``P`` (S, A, S) transition probabilities, ``R`` (S, A) expected rewards, ``gamma``.

    Build one from your own arrays with ``TabularMDP(P, R, gamma)``; shapes and probabilities are checked."""

    P: np.ndarray
    R: np.ndarray
    gamma: float
    name: str = "custom"
    start: int = 0

    def __post_init__(self) -> None:
        P = np.asarray(self.P, dtype=np.float64)
        R = np.asarray(self.R, dtype=np.float64)
        if P.ndim != 3 or P.shape[0] != P.shape[2] or P.shape[0] == 0 or P.shape[1] == 0:
            raise InputError(
                f"P must have shape (S, A, S) (P[s, a, s'] = probability of s' after a in s), "
                f"got shape {P.shape}"
            )
        S, A, _ = P.shape
        if R.shape == (S,):
            R = np.repeat(R[:, None], A, axis=1)
        if R.shape != (S, A):
            raise InputError(f"R must have shape (S, A) = ({S}, {A}) or (S,), got shape {R.shape}")
        if not (np.isfinite(P).all() and np.isfinite(R).all()):
            raise InputError("P and R must be finite (found NaN or inf)")
        if (P < 0).any() or np.abs(P.sum(axis=2) - 1).max() > 1e-8:
            raise InputError(
                "every P[s, a, :] must be a probability distribution (non-negative, summing to 1); "
                f"row sums range over [{P.sum(axis=2).min():.6g}, {P.sum(axis=2).max():.6g}]"
            )
        if isinstance(self.gamma, bool) or not (0 <= float(self.gamma) < 1):
            raise InputError(f"gamma must be in [0, 1), got {self.gamma!r}")
        check_int(self.start, "start", minimum=0)
        if not (0 <= int(self.start) < S):
            raise InputError(f"start must be a state index in [0, {S}), got {self.start!r}")
        P.setflags(write=False)
        R.setflags(write=False)
        object.__setattr__(self, "P", P)
        object.__setattr__(self, "R", R)
        object.__setattr__(self, "gamma", float(self.gamma))

    @property
    def n_states(self) -> int:
        return self.P.shape[0]

    @property
    def n_actions(self) -> int:
        return self.P.shape[1]


# CliffWalk 6x6: state = 6 * row + col, row 0 on top; actions up, right, down, left.
_MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))


def cliffwalk(success_prob: float = 0.9, gamma: float = 0.9) -> TabularMDP:
    """The paper's 6x6 CliffWalk (App. of the paper; the OS-VI paper's environment).

    4 actions (up, right, down, left); the chosen move happens with ``success_prob``, otherwise one of the other three
    directions uniformly; moving into a wall stays put. The goal, state 5 (top-right), is absorbing with reward +20;
    the interior columns 1-4 of rows 0, 2 and 4 are absorbing cliffs with rewards -32, -16 and -8; every other state
    gives -1. Rewards depend on the current state only; the start state is 0 (top-left).
    """
    if not (0 <= success_prob <= 1):
        raise InputError(f"success_prob must be in [0, 1], got {success_prob!r}")
    n = 6
    S, A = n * n, 4
    reward = -np.ones(S)
    absorbing = np.zeros(S, bool)
    goal = 5
    reward[goal], absorbing[goal] = 20.0, True
    for row, r in ((0, -32.0), (2, -16.0), (4, -8.0)):
        for col in range(1, 5):
            reward[n * row + col], absorbing[n * row + col] = r, True
    P = np.zeros((S, A, S))
    for s in range(S):
        if absorbing[s]:
            P[s, :, s] = 1.0
            continue
        row, col = divmod(s, n)
        for a in range(A):
            for b, (dr, dc) in enumerate(_MOVES):
                prob = success_prob if a == b else (1 - success_prob) / 3
                r2, c2 = row + dr, col + dc
                s2 = n * r2 + c2 if (0 <= r2 < n and 0 <= c2 < n) else s
                P[s, a, s2] += prob
    return TabularMDP(P, np.repeat(reward[:, None], A, axis=1), gamma, name="cliffwalk", start=0)


# Maze33: 3x3 grid, state = 3 * row + col; a wall between the pairs of neighbouring cells below (blocked moves stay).
_MAZE_WALLS = ({0, 1}, {3, 4}, {1, 2}, {7, 8})


def maze33(success_prob: float = 0.9, gamma: float = 0.9) -> TabularMDP:
    """The 3x3 maze of the official code (``env/Maze.py``, taken over from the OS-VI code): 4 actions (up, right,
    down, left), the chosen move with ``success_prob``, otherwise one of the other three directions uniformly; a move
    into the outer wall or through one of the inner walls between cells {0,1}, {1,2}, {3,4} and {7,8} stays put.
    No state is absorbing. The reward is ``R(s, a) = 1`` when the *intended* move of ``a`` from ``s`` lands on the
    goal, state 2 (top-right), and 0 otherwise; the start state is 0.
    """
    if not (0 <= success_prob <= 1):
        raise InputError(f"success_prob must be in [0, 1], got {success_prob!r}")
    n = 3
    S, A, goal = n * n, 4, 2

    def target(s: int, a: int) -> int:
        row, col = divmod(s, n)
        dr, dc = _MOVES[a]
        r2, c2 = min(max(row + dr, 0), n - 1), min(max(col + dc, 0), n - 1)
        s2 = n * r2 + c2
        return s if {s, s2} in _MAZE_WALLS else s2

    P = np.zeros((S, A, S))
    R = np.zeros((S, A))
    for s in range(S):
        for a in range(A):
            R[s, a] = 1.0 if target(s, a) == goal else 0.0
            for b in range(A):
                P[s, a, target(s, b)] += success_prob if a == b else (1 - success_prob) / 3
    return TabularMDP(P, R, gamma, name="maze33", start=0)


def garnet(
    seed: int = 0,
    n_states: int = 36,
    n_actions: int = 6,
    branching: int = 12,
    n_rewards: int = 12,
    gamma: float = 0.9,
) -> TabularMDP:
    """A random Garnet MDP: each (s, a) reaches ``branching`` random next states with probabilities from uniform
    random cuts of [0, 1]; ``n_rewards`` random states carry a reward ~ U[0, 1] (the same for every action)."""
    for name, v, lo in (("n_states", n_states, 1), ("n_actions", n_actions, 1), ("branching", branching, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= 10**4:
            raise InputError(f"{name} must be an int in [{lo}, 10**4], got {v!r}")
    check_int(n_rewards, "n_rewards", minimum=0)
    if branching > n_states or not (0 <= n_rewards <= n_states):
        raise InputError(
            f"need branching <= n_states and 0 <= n_rewards <= n_states, got branching={branching}, "
            f"n_rewards={n_rewards}, n_states={n_states}"
        )
    rng = np.random.default_rng(seed)
    P = np.zeros((n_states, n_actions, n_states))
    for s in range(n_states):
        for a in range(n_actions):
            nxt = rng.choice(n_states, size=branching, replace=False)
            cuts = np.sort(rng.random(branching - 1))
            P[s, a, nxt] = np.diff(np.concatenate([[0.0], cuts, [1.0]]))
    r = np.zeros(n_states)
    r[rng.choice(n_states, size=n_rewards, replace=False)] = rng.random(n_rewards)
    return TabularMDP(P, np.repeat(r[:, None], n_actions, axis=1), gamma, name=f"garnet{seed}")


def _check_lam(lam: float) -> float:
    if isinstance(lam, bool) or not isinstance(lam, int | float | np.floating) or not (0 <= lam <= 1):
        raise InputError(f"the model-error level lam must be in [0, 1], got {lam!r}")
    return float(lam)


def _as_kernel(P) -> np.ndarray:
    try:
        P = np.asarray(P.P if isinstance(P, TabularMDP) else P, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InputError(
            f"P must be a numeric array of transition probabilities, got {describe(P)}: {e}"
        ) from None
    if P.ndim < 2 or P.size == 0:
        raise InputError(f"P must have shape (..., S), got shape {P.shape}")
    if not np.isfinite(P).all():
        raise InputError(f"P must be finite, got {int((~np.isfinite(P)).sum())} NaN/inf entries")
    if (P < 0).any() or np.abs(P.sum(axis=-1) - 1).max() > 1e-6:
        raise InputError(
            "every row P[..., :] must be a probability distribution (non-negative, summing to 1); got entries "
            f"in [{P.min():.6g}, {P.max():.6g}], row sums in [{P.sum(-1).min():.6g}, {P.sum(-1).max():.6g}]"
        )
    return P


def locally_smoothed(P: np.ndarray | TabularMDP, lam: float) -> np.ndarray:
    """The "LocallySmoothed" model: ``P_hat = (1 - lam) P + lam * Uniform(supp P(.|x,a))`` (row-wise)."""
    P = _as_kernel(P)
    lam = _check_lam(lam)
    supp = (P > 0).astype(np.float64)
    return (1 - lam) * P + lam * supp / supp.sum(axis=-1, keepdims=True)


def identity_smoothed(P: np.ndarray | TabularMDP, lam: float) -> np.ndarray:
    """The "IdentitySmoothed" model: ``P_hat = (1 - lam) P + lam * delta_x`` (stay in the current state x).

    ``P`` must have shape (S, A, S) or (S, S)."""
    P = _as_kernel(P)
    lam = _check_lam(lam)
    S = P.shape[-1]
    if P.shape[0] != S or P.ndim not in (2, 3):
        raise InputError(f"identity_smoothed needs P of shape (S, A, S) or (S, S), got {P.shape}")
    eye = np.eye(S) if P.ndim == 2 else np.eye(S)[:, None, :]
    return (1 - lam) * P + lam * eye


def adversarial_kernel(P: np.ndarray) -> np.ndarray:
    """The "adversarial" direction of the official ``model/CliffWalkAdvModel.py``: every action moves like action 0
    ("up" in CliffWalk and the maze), ``P_adv[s, a, :] = P[s, 0, :]``. P of shape (S, A, S)."""
    P = _as_kernel(P)
    if P.ndim != 3:
        raise InputError(f"the adversarial model needs P of shape (S, A, S), got {P.shape}")
    return np.repeat(P[:, :1, :], P.shape[1], axis=1)


def adversarial_smoothed(P: np.ndarray | TabularMDP, lam: float) -> np.ndarray:
    """The adversarial model of the official code: ``P_hat = (1 - lam) P + lam P_adv`` with ``P_adv`` every action
    moving like action 0 (:func:`adversarial_kernel`); for CliffWalk it drags every action towards the cliffs above."""
    P = _as_kernel(P)
    lam = _check_lam(lam)
    return (1 - lam) * P + lam * adversarial_kernel(P)


#: The model-error makers by name (exact-query setting; the count models of ``sample.py`` use the same names).
MODEL_KINDS = ("locally_smoothed", "identity_smoothed", "adversarial")


def make_model(mdp: TabularMDP, kind: str, lam: float) -> np.ndarray:
    """``kind`` in :data:`MODEL_KINDS` -> the approximate model P_hat (S, A, S)."""
    makers = {
        "locally_smoothed": locally_smoothed,
        "identity_smoothed": identity_smoothed,
        "adversarial": adversarial_smoothed,
    }
    if not isinstance(mdp, TabularMDP):
        raise InputError(f"mdp must be a TabularMDP, got {describe(mdp)}")
    if not isinstance(kind, str) or kind not in makers:
        raise InputError(f"unknown model-error kind {kind!r}; expected one of {sorted(makers)}")
    return makers[kind](mdp.P, lam)
