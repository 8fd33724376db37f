"""Planning with exact queries of the true dynamics: MoCoVI (the paper's model-correcting VI) and its baselines VI, pure
model-based planning and OS-VI, all under one interface::

    trace = MoCoVI(P_hat, d=2, mode="pe").run(mdp, K=15)
    trace.errors        # (K+1,) normalised error of V_k (policy evaluation) or of the policy pi_k (control)

Every algorithm starts from ``V_0 = 0`` and makes one query of the true kernel per iteration (``P V_k``, or
``P^pi V_k`` in policy evaluation). In control, ``pi_0`` is greedy for the immediate reward and ``pi_{k+1}`` is the
policy the algorithm produces at iteration k.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from iclr24.paperkit.errors import InputError

from ._errorlog import ErrorLog
from .envs import TabularMDP
from .moco import correct
from .planning import evaluate_policy
from .planning import normalized_error
from .planning import policy_error
from .planning import policy_kernel
from .planning import solve_control

__all__ = ["OSVI", "ModelBasedPlanning", "MoCoVI", "Trace", "ValueIteration"]

MODES = ("pe", "control")


@dataclass(frozen=True)
class Trace:
    """The iterates of one run: ``values`` (K+1, S), ``policies`` (K+1, S) in control (else None), ``errors`` (K+1,)
    (normalised value error ``||V_k - V^pi||_1/||V^pi||_1`` in "pe", normalised sub-optimality of ``pi_k`` in the
    true MDP in "control"), and ``target`` (V^pi or V*)."""

    name: str
    mode: str
    values: np.ndarray
    errors: np.ndarray
    target: np.ndarray
    policies: np.ndarray | None = None
    info: dict = field(default_factory=dict)


def _check_mode(mode: str) -> str:
    if mode not in MODES:
        raise InputError(f"mode must be one of {MODES}, got {mode!r}")
    return mode


def _check_K(K: int) -> int:
    if isinstance(K, bool) or not isinstance(K, int | np.integer) or not 0 <= K <= 10**7:
        raise InputError(f"K (the number of iterations) must be a non-negative int, got {K!r}")
    return int(K)


def _check_model(P_hat: np.ndarray, mdp: TabularMDP) -> np.ndarray:
    P_hat = np.asarray(P_hat, dtype=np.float64)
    if P_hat.shape != mdp.P.shape:
        raise InputError(f"P_hat must have the MDP's shape (S, A, S) = {mdp.P.shape}, got {P_hat.shape}")
    if not np.isfinite(P_hat).all() or (P_hat < 0).any() or np.abs(P_hat.sum(axis=2) - 1).max() > 1e-6:
        raise InputError(
            "every P_hat[s, a, :] must be a probability distribution (finite, >= 0, summing to 1)"
        )
    return P_hat


class _Planner:
    name = "planner"

    def __init__(self, *, mode: str = "pe", policy: np.ndarray | None = None) -> None:
        self.mode = _check_mode(mode)
        self.policy = None if policy is None else np.asarray(policy)

    def _pe_setup(self, mdp: TabularMDP):
        pi = self.policy
        if pi is None:  # the paper evaluates the optimal policy of the true MDP
            pi = solve_control(mdp.P, mdp.R, mdp.gamma)[1]
        Ppi, rpi = policy_kernel(mdp.P, mdp.R, pi)
        V_true = evaluate_policy(mdp.P, mdp.R, mdp.gamma, pi)
        return pi, Ppi, rpi, V_true

    def run(
        self,
        mdp: TabularMDP,
        K: int = 15,
        *,
        callbacks: object = None,
        log_dir: str | os.PathLike | None = None,
    ) -> Trace:
        """Run K iterations on ``mdp`` (the true MDP, queried once per iteration) and return the :class:`Trace`.

        ``callbacks`` (``f(k, metrics)`` or objects with ``on_step``) / ``log_dir`` (``metrics.jsonl``, TensorBoard
        files when installed): one :class:`~iclr24.paperkit.tracking.StepLog` gets ``{"error": ...}`` of iterate
        ``k = 0..K`` as the run goes (the trace's ``errors[k]``)."""
        if not isinstance(mdp, TabularMDP):
            raise InputError(
                f"mdp must be a TabularMDP (build one with TabularMDP(P, R, gamma)), got {type(mdp).__name__}"
            )
        K = _check_K(K)
        if self.mode == "pe":
            pi, Ppi, rpi, V_true = self._pe_setup(mdp)
            log = ErrorLog(callbacks, log_dir, mdp, "pe", V_true)
            try:
                log(0, np.zeros(mdp.n_states))
                values = self._run_pe(mdp, pi, Ppi, rpi, K, log)
            finally:
                log.close()
            return Trace(self.name, "pe", values, normalized_error(values, V_true), V_true)
        V_star, _ = solve_control(mdp.P, mdp.R, mdp.gamma)
        log = ErrorLog(callbacks, log_dir, mdp, "control", V_star)
        try:
            log(0, np.zeros(mdp.n_states), np.argmax(mdp.R, axis=1))
            values, policies = self._run_control(mdp, K, log)
        finally:
            log.close()
        errs = policy_error(mdp.P, mdp.R, mdp.gamma, policies, V_star)
        return Trace(self.name, "control", values, errs, V_star, policies=policies)

    def _run_pe(self, mdp, pi, Ppi, rpi, K, log):  # pragma: no cover - abstract
        raise NotImplementedError

    def _run_control(self, mdp, K, log):  # pragma: no cover - abstract
        raise NotImplementedError


class ValueIteration(_Planner):
    """VI with exact queries: ``V_{k+1} = r^pi + gamma P^pi V_k`` (pe) or ``max_a R + gamma P V_k`` (control)."""

    name = "VI"

    def _run_pe(self, mdp, pi, Ppi, rpi, K, log):
        V = [np.zeros(mdp.n_states)]
        for k in range(K):
            # Eq. (VI): V_{k+1} = r^pi + gamma P^pi V_k
            V.append(rpi + mdp.gamma * Ppi @ V[-1])
            log(k + 1, V[-1])
        return np.array(V)

    def _run_control(self, mdp, K, log):
        V = [np.zeros(mdp.n_states)]
        pols = [np.argmax(mdp.R, axis=1)]
        for k in range(K):
            Q = mdp.R + mdp.gamma * mdp.P @ V[-1]
            V.append(Q.max(axis=1))
            pols.append(np.argmax(Q, axis=1))
            log(k + 1, V[-1], pols[-1])
        return np.array(V), np.array(pols)


class _ModelPlanner(_Planner):
    """A planner that uses an approximate model ``P_hat`` (S, A, S) of the true dynamics."""

    def __init__(self, P_hat: np.ndarray, *, mode: str = "pe", policy: np.ndarray | None = None) -> None:
        super().__init__(mode=mode, policy=policy)
        self.P_hat = np.asarray(P_hat, dtype=np.float64)


class ModelBasedPlanning(_ModelPlanner):
    """Pure model-based planning: the solution in ``P_hat`` (no queries), ``V_k = V^pi(P_hat)`` for k >= 1."""

    name = "MBRL"

    def _run_pe(self, mdp, pi, Ppi, rpi, K, log):
        P_hat = _check_model(self.P_hat, mdp)
        V = evaluate_policy(P_hat, mdp.R, mdp.gamma, pi)
        for k in range(K):
            log(k + 1, V)
        return np.array([np.zeros(mdp.n_states)] + [V] * K)

    def _run_control(self, mdp, K, log):
        P_hat = _check_model(self.P_hat, mdp)
        V, pi = solve_control(P_hat, mdp.R, mdp.gamma)
        for k in range(K):
            log(k + 1, V, pi)
        return (np.array([np.zeros(mdp.n_states)] + [V] * K), np.array([np.argmax(mdp.R, axis=1)] + [pi] * K))


class OSVI(_ModelPlanner):
    """OS-VI (Rakhsha et al., 2022): ``V_{k+1} = (I - gamma P_hat^pi)^{-1} (r^pi + gamma (P^pi - P_hat^pi) V_k)``;
    in control, ``V_{k+1}`` is the optimal value in ``P_hat`` for the reward ``R + gamma (P - P_hat) V_k``."""

    name = "OS-VI"

    def _run_pe(self, mdp, pi, Ppi, rpi, K, log):
        P_hat = _check_model(self.P_hat, mdp)
        Phat_pi, _ = policy_kernel(P_hat, mdp.R, pi)
        A = np.eye(mdp.n_states) - mdp.gamma * Phat_pi
        V = [np.zeros(mdp.n_states)]
        for k in range(K):
            # Eq. (OS-VI): V_{k+1} = (I - gamma P_hat^pi)^{-1} (r^pi + gamma (P^pi - P_hat^pi) V_k)
            V.append(np.linalg.solve(A, rpi + mdp.gamma * (Ppi @ V[-1] - Phat_pi @ V[-1])))
            log(k + 1, V[-1])
        return np.array(V)

    def _run_control(self, mdp, K, log):
        P_hat = _check_model(self.P_hat, mdp)
        V = [np.zeros(mdp.n_states)]
        pols = [np.argmax(mdp.R, axis=1)]
        for k in range(K):
            # Eq. (OS-VI, control): V_{k+1} = V* of P_hat for the reward R + gamma (P - P_hat) V_k
            R_k = mdp.R + mdp.gamma * (mdp.P @ V[-1] - P_hat @ V[-1])
            Vk, pk = solve_control(P_hat, R_k, mdp.gamma)
            V.append(Vk)
            pols.append(pk)
            log(k + 1, Vk, pk)
        return np.array(V), np.array(pols)


class MoCoVI(_Planner):
    """MoCoVI: at iteration k the basis is the last ``d`` values ``Phi_k = [V_k, ..., V_{k-d+1}]`` (zeros
    before V_0), the true kernel is queried once (``P V_k``; earlier queries are cached), the model is corrected by
    MoCo (``P_bar_k = MoCo(P_hat, Phi_k, P Phi_k)``) and ``V_{k+1}`` is the solution in ``P_bar_k``: ``V^pi(P_bar_k)``
    (pe) or ``V*(P_bar_k)`` with ``pi_{k+1}`` optimal in ``P_bar_k`` (control).

    With ``d = 0`` it is pure model-based planning. ``beta`` (None = exact) and ``fallback_beta`` are passed to
    :func:`correct`: a model whose support misses true successors (e.g. IdentitySmoothed with lambda = 1) makes the
    exact constraints infeasible, which raises unless ``fallback_beta`` allows the regularised dual for those rows.
    """

    name = "MoCoVI"

    def __init__(
        self,
        P_hat: np.ndarray,
        d: int = 2,
        *,
        mode: str = "pe",
        policy: np.ndarray | None = None,
        beta: float | None = None,
        fallback_beta: float | None = None,
    ) -> None:
        super().__init__(mode=mode, policy=policy)
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0:
            raise InputError(f"d (the number of past values in the basis) must be an int >= 0, got {d!r}")
        self.P_hat = np.asarray(P_hat, dtype=np.float64)
        self.d = int(d)
        self.beta = beta
        self.fallback_beta = fallback_beta
        self.name = f"MoCoVI(d={self.d})"

    def _basis(self, V, queries, k):
        """Phi_k = [V_k, ..., V_{k-d+1}] (S, d) and Psi_k = [P V_k, ...] (..., d); zero columns before V_0."""
        cols, psis = [], []
        for i in range(self.d):
            j = k - i
            cols.append(V[j] if j >= 0 else np.zeros_like(V[0]))
            psis.append(queries[j] if j >= 0 else np.zeros_like(queries[0]))
        return np.stack(cols, axis=-1), np.stack(psis, axis=-1)

    def _run_pe(self, mdp, pi, Ppi, rpi, K, log):
        P_hat = _check_model(self.P_hat, mdp)
        Phat_pi, _ = policy_kernel(P_hat, mdp.R, pi)
        I = np.eye(mdp.n_states)
        V, queries = [np.zeros(mdp.n_states)], []
        for k in range(K):
            # Eq. (MoCoVI query): psi_k = P^pi phi_k with phi_k = V_k, the one new query of iteration k
            queries.append(Ppi @ V[k])  # the one new query of iteration k
            if self.d:
                Phi, Psi = self._basis(V, queries, k)
                # Eq. (MoCo primal): P_bar = argmin_{q << P_hat} KL(q || P_hat) s.t. E_q[Phi_k] = Psi_k, row-wise
                P_bar = correct(Phat_pi, Phi, Psi, self.beta, fallback_beta=self.fallback_beta).P_bar
            else:
                P_bar = Phat_pi
            # V_{k+1} = (I - gamma P_bar^pi)^{-1} r^pi
            # Eq. (MoCoVI update): V_{k+1} = (I - gamma P_bar_k^pi)^{-1} r^pi, P_bar_k = MoCo(P_hat, [V_k..V_{k-d+1}], psi)
            V.append(np.linalg.solve(I - mdp.gamma * P_bar, rpi))
            log(k + 1, V[-1])
        return np.array(V)

    def _run_control(self, mdp, K, log):
        P_hat = _check_model(self.P_hat, mdp)
        V, queries = [np.zeros(mdp.n_states)], []
        pols = [np.argmax(mdp.R, axis=1)]
        for k in range(K):
            # Eq. (MoCoVI query, control): psi_k(x,a) = (P V_k)(x,a)
            queries.append(mdp.P @ V[k])  # (S, A): the one new query of iteration k
            if self.d:
                Phi, Psi = self._basis(V, queries, k)
                P_bar = correct(P_hat, Phi, Psi, self.beta, fallback_beta=self.fallback_beta).P_bar
            else:
                P_bar = P_hat
            # Eq. (MoCoVI update, control): V_{k+1} = V*(P_bar_k), pi_{k+1} greedy in P_bar_k
            Vk, pk = solve_control(P_bar, mdp.R, mdp.gamma)
            V.append(Vk)
            pols.append(pk)
            log(k + 1, Vk, pk)
        return np.array(V), np.array(pols)
