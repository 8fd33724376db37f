"""Exact planning on a tabular model: policy evaluation, greedy policies, optimal control, and the error metrics."""

from __future__ import annotations

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int

__all__ = [
    "as_policy_matrix",
    "error_scale",
    "evaluate_policy",
    "greedy_policy",
    "normalized_error",
    "policy_error",
    "policy_kernel",
    "q_values",
    "solve_control",
]


def check_mdp(P: object, R: object, gamma: object) -> tuple[np.ndarray, np.ndarray, float]:
    """``P`` (S, A, S) finite transition probabilities, ``R`` (S, A) finite rewards, ``gamma`` in [0, 1)."""
    P = check_array(P, "P", ndim=3)
    S, A, S2 = P.shape
    if S != S2 or S < 1 or A < 1:
        raise InputError(f"P must be (S, A, S) with S, A >= 1, got shape {P.shape}")
    R = check_array(R, "R", ndim=2)
    if R.shape != (S, A):
        raise InputError(f"R must be (S, A) = ({S}, {A}) for this P, got shape {R.shape}")
    return P, R, check_float(gamma, "gamma", minimum=0, maximum=1, open_max=True)


def _values(V: object, S: int, name: str = "V") -> np.ndarray:
    V = check_array(V, name)
    if V.shape[-1:] != (S,):
        raise InputError(f"{name} must hold one value per state ({S}), got shape {V.shape}")
    return V


def as_policy_matrix(policy: np.ndarray, n_states: int, n_actions: int) -> np.ndarray:
    """A policy as (S, A) probabilities: accepts action indices (S,) or a stochastic matrix (S, A)."""
    pi = check_array(policy, "policy", kind="any", allow_empty=True)
    if pi.dtype.kind == "f" and not np.isfinite(pi).all():
        raise InputError("policy holds NaN or inf")
    if pi.shape == (n_states,) and np.issubdtype(pi.dtype, np.integer):
        if (pi < 0).any() or (pi >= n_actions).any():
            raise InputError(
                f"policy actions must be in [0, {n_actions}), got range [{pi.min()}, {pi.max()}]"
            )
        out = np.zeros((n_states, n_actions))
        out[np.arange(n_states), pi] = 1.0
        return out
    pi = pi.astype(np.float64)
    if pi.shape != (n_states, n_actions):
        raise InputError(
            f"policy must be action indices of shape ({n_states},) or probabilities of shape "
            f"({n_states}, {n_actions}), got shape {pi.shape} dtype {np.asarray(policy).dtype}"
        )
    if (pi < 0).any() or np.abs(pi.sum(axis=1) - 1).max() > 1e-8:
        raise InputError("a stochastic policy must have non-negative rows summing to 1")
    return pi


def policy_kernel(P: np.ndarray, R: np.ndarray, policy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``P^pi (S, S) = sum_a pi(a|s) P(s, a, .)`` and ``r^pi (S,) = sum_a pi(a|s) R(s, a)``."""
    P, R, _ = check_mdp(P, R, 0.0)
    S, A, _ = P.shape
    pi = as_policy_matrix(policy, S, A)
    return np.einsum("sa,sat->st", pi, P), (pi * R).sum(axis=1)


def evaluate_policy(P: np.ndarray, R: np.ndarray, gamma: float, policy: np.ndarray) -> np.ndarray:
    """``V^pi = (I - gamma P^pi)^{-1} r^pi`` (S,)."""
    P, R, gamma = check_mdp(P, R, gamma)
    Ppi, rpi = policy_kernel(P, R, policy)
    return np.linalg.solve(np.eye(P.shape[0]) - gamma * Ppi, rpi)


def q_values(P: np.ndarray, R: np.ndarray, gamma: float, V: np.ndarray) -> np.ndarray:
    """``Q(s, a) = R(s, a) + gamma sum_s' P(s, a, s') V(s')`` (S, A)."""
    P, R, gamma = check_mdp(P, R, gamma)
    V = _values(V, P.shape[0])
    if V.ndim != 1:
        raise InputError(f"V must be one value per state, shape ({P.shape[0]},), got {V.shape}")
    return R + gamma * P @ V


def greedy_policy(P: np.ndarray, R: np.ndarray, gamma: float, V: np.ndarray) -> np.ndarray:
    """Greedy actions (S,) w.r.t. ``V`` in the model (P, R); ties go to the lowest action index."""
    Q = q_values(P, R, gamma, V)
    # ties within round-off go to the first maximiser, so that equal models give equal policies
    return np.argmax(Q >= Q.max(axis=1, keepdims=True) - 1e-10 * (1 + np.abs(Q).max()), axis=1)


def solve_control(
    P: np.ndarray, R: np.ndarray, gamma: float, max_iter: int = 1000
) -> tuple[np.ndarray, np.ndarray]:
    """The optimal value and a greedy optimal policy of (P, R, gamma), by exact policy iteration: (V* (S,), pi* (S,))."""
    P, R, gamma = check_mdp(P, R, gamma)
    check_int(max_iter, "max_iter", minimum=1, maximum=10**7)
    S = P.shape[0]
    pi = np.argmax(R, axis=1)
    V = evaluate_policy(P, R, gamma, pi)
    for _ in range(max_iter):
        Q = q_values(P, R, gamma, V)
        best = Q.max(axis=1)
        improve = best > Q[np.arange(S), pi] + 1e-12 * (1 + np.abs(best).max())
        if not improve.any():
            break
        pi = np.where(improve, np.argmax(Q, axis=1), pi)
        V = evaluate_policy(P, R, gamma, pi)
    return V, greedy_policy(P, R, gamma, V)


def error_scale(V_true: np.ndarray) -> float:
    """The denominator of the normalised errors: ``||V_true||_1``, or 1 where ``V_true = 0`` (e.g. an MDP without
    reward), so that the error is then the absolute ``||V - V_true||_1`` instead of 0/0."""
    norm = float(np.abs(check_array(V_true, "V_true")).sum())
    return norm if norm > 0 else 1.0


def normalized_error(V: np.ndarray, V_true: np.ndarray) -> np.ndarray:
    """``||V_k - V_true||_1 / ||V_true||_1`` for one value (S,) or a trace (K, S); the absolute error
    ``||V_k - V_true||_1`` where ``V_true = 0`` (see :func:`error_scale`)."""
    V_true = check_array(V_true, "V_true", ndim=1)
    V = _values(V, V_true.shape[0])
    return np.abs(V - V_true).sum(axis=-1) / error_scale(V_true)


def policy_error(
    P: np.ndarray, R: np.ndarray, gamma: float, policies: np.ndarray, V_star: np.ndarray
) -> np.ndarray:
    """Normalised sub-optimality of each policy in the TRUE MDP: ``||V^{pi_k} - V*||_1 / ||V*||_1`` for (K, S)
    policies (absolute where ``V* = 0``, see :func:`error_scale`)."""
    P, R, gamma = check_mdp(P, R, gamma)
    V_star = _values(V_star, P.shape[0], "V_star")
    pols = np.atleast_2d(check_array(policies, "policies", kind="any"))
    out = np.array([normalized_error(evaluate_policy(P, R, gamma, p), V_star) for p in pols])
    return out if np.ndim(policies) == 2 else out[0]
