"""Sample-based algorithms (the paper's MoCoDyna section): MoCoDyna and its baselines Q-learning / TD, Dyna and OS-Dyna.

All of them learn from the same stream of samples of a generative model: at each step a state-action pair is drawn
uniformly (control; in policy evaluation ("pe") a state uniformly and ``a = pi(s)``) and one next state
``s' ~ P(.|s, a)`` is observed with the reward ``R(s, a)``. A run with the same ``seed`` sees the same stream for
every algorithm. ``run(mdp, n_steps, seed)`` returns a :class:`SampleTrace` of the normalised error every
``eval_every`` steps.

The count model (Dyna, OS-Dyna, MoCoDyna): ``P_hat = (1 - alpha) * empirical + alpha * Uniform(observed successors)``
for visited pairs and uniform over all states for unvisited ones; ``alpha`` is the model-error level (the paper's
lambda of the LocallySmoothed model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .envs import TabularMDP
from .moco import correct
from .planning import evaluate_policy, normalized_error, policy_error, solve_control

__all__ = [
    "PAPER_BETA",
    "Dyna",
    "MoCoDyna",
    "OSDyna",
    "QLearning",
    "SampleTrace",
    "TDLearning",
    "sample_stream",
]

#: The authors' defaults for the regularisation (code convention) by basis size d.
PAPER_BETA = {1: 1e4, 2: 1.5e4, 3: 2e4}


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
    """The generative-model samples: (s, a, s') arrays of length ``n_steps``, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    S, A = mdp.n_states, mdp.n_actions
    s = rng.integers(S, size=n_steps)
    a = rng.integers(A, size=n_steps) if mode == "control" else np.asarray(policy)[s]
    u = rng.random(n_steps)
    cdf = np.cumsum(mdp.P, axis=2)
    s2 = np.empty(n_steps, dtype=np.int64)
    for i in range(0, n_steps, 8192):  # inverse-CDF sampling, in chunks to bound memory
        j = slice(i, i + 8192)
        s2[j] = (cdf[s[j], a[j]] < u[j, None]).sum(axis=1)
    return s, a, np.minimum(s2, S - 1)


def _check_common(mdp, n_steps, seed, mode):
    if not isinstance(mdp, TabularMDP):
        raise ValueError(f"mdp must be a TabularMDP, got {type(mdp).__name__}")
    if isinstance(n_steps, bool) or not isinstance(n_steps, int | np.integer) or n_steps < 1:
        raise ValueError(f"n_steps must be a positive int, got {n_steps!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if mode not in ("pe", "control"):
        raise ValueError(f"mode must be 'pe' or 'control', got {mode!r}")


def _positive_int(name, v):
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")
    return int(v)


def _lr(name, v):
    if isinstance(v, bool) or not isinstance(v, int | float) or not (0 < v <= 1):
        raise ValueError(f"{name} must be in (0, 1], got {v!r}")
    return float(v)


class _Learner:
    name = "learner"

    def __init__(
        self, *, mode: str = "control", policy: np.ndarray | None = None, eval_every: int = 1000
    ) -> None:
        if mode not in ("pe", "control"):
            raise ValueError(f"mode must be 'pe' or 'control', got {mode!r}")
        self.mode = mode
        self.policy = None if policy is None else np.asarray(policy)
        self.eval_every = _positive_int("eval_every", eval_every)

    def run(self, mdp: TabularMDP, n_steps: int, seed: int = 0) -> SampleTrace:
        """Learn from ``n_steps`` samples of ``mdp`` (stream fixed by ``seed``) and return the error trace."""
        _check_common(mdp, n_steps, seed, self.mode)
        pi = self.policy
        if self.mode == "pe" and pi is None:
            pi = solve_control(mdp.P, mdp.R, mdp.gamma)[1]
        stream = sample_stream(mdp, int(n_steps), int(seed), self.mode, pi)
        steps, values, policies = self._learn(mdp, stream, pi, int(n_steps), int(seed))
        steps, values = np.asarray(steps), np.asarray(values)
        if self.mode == "pe":
            errs = normalized_error(values, evaluate_policy(mdp.P, mdp.R, mdp.gamma, pi))
            return SampleTrace(self.name, "pe", steps, errs, values)
        V_star, _ = solve_control(mdp.P, mdp.R, mdp.gamma)
        policies = np.asarray(policies)
        errs = policy_error(mdp.P, mdp.R, mdp.gamma, policies, V_star)
        return SampleTrace(self.name, "control", steps, errs, values, policies)

    def _checkpoints(self, n_steps):
        return list(range(0, n_steps + 1, self.eval_every)) + ([n_steps] if n_steps % self.eval_every else [])


class QLearning(_Learner):
    """Q-learning with a constant step size (the paper's baseline, lr 0.02):
    ``Q(s,a) += lr (r + gamma max_a' Q(s',a') - Q(s,a))``. In "pe" mode this is TD(0) on V (see :class:`TDLearning`)."""

    name = "Q-learning"

    def __init__(self, lr: float = 0.02, *, eval_every: int = 1000) -> None:
        super().__init__(mode="control", eval_every=eval_every)
        self.lr = _lr("lr", lr)

    def _learn(self, mdp, stream, pi, n_steps, seed):
        s, a, s2 = stream
        S, A, g, lr = mdp.n_states, mdp.n_actions, mdp.gamma, self.lr
        Q = [[0.0] * A for _ in range(S)]
        R = mdp.R.tolist()
        steps, values, pols = [], [], []
        checkpoints = set(self._checkpoints(n_steps))
        sl, al, s2l = s.tolist(), a.tolist(), s2.tolist()
        for t in range(n_steps + 1):
            if t in checkpoints:
                Qa = np.array(Q)
                steps.append(t)
                values.append(Qa.max(axis=1))
                pols.append(np.argmax(Qa, axis=1))
            if t == n_steps:
                break
            row = Q[sl[t]]
            x = al[t]
            row[x] += lr * (R[sl[t]][x] + g * max(Q[s2l[t]]) - row[x])
        return steps, values, pols


class TDLearning(_Learner):
    """TD(0) policy evaluation with a constant step size (the paper's baseline, lr 0.2)."""

    name = "TD"

    def __init__(self, lr: float = 0.2, *, policy: np.ndarray | None = None, eval_every: int = 100) -> None:
        super().__init__(mode="pe", policy=policy, eval_every=eval_every)
        self.lr = _lr("lr", lr)

    def _learn(self, mdp, stream, pi, n_steps, seed):
        s, a, s2 = stream
        g, lr = mdp.gamma, self.lr
        V = [0.0] * mdp.n_states
        R = mdp.R.tolist()
        steps, values = [], []
        checkpoints = set(self._checkpoints(n_steps))
        sl, al, s2l = s.tolist(), a.tolist(), s2.tolist()
        for t in range(n_steps + 1):
            if t in checkpoints:
                steps.append(t)
                values.append(np.array(V))
            if t == n_steps:
                break
            x = sl[t]
            V[x] += lr * (R[x][al[t]] + g * V[s2l[t]] - V[x])
        return steps, values, None


class _CountModel:
    """Counts N(s, a, s') and the smoothed kernel of the module docstring."""

    def __init__(self, S: int, A: int, alpha: float) -> None:
        self.N = np.zeros((S, A, S))
        self.alpha = alpha
        self.R = np.zeros((S, A))

    def update(self, s, a, s2, R):
        np.add.at(self.N, (s, a, s2), 1.0)
        self.R[s, a] = R[s, a]  # deterministic rewards: observed on the first visit

    def kernel(self) -> np.ndarray:
        S = self.N.shape[0]
        n = self.N.sum(axis=2, keepdims=True)
        seen = (self.N > 0).astype(np.float64)
        k = seen.sum(axis=2, keepdims=True)
        emp = np.divide(self.N, n, out=np.full_like(self.N, 1.0 / S), where=n > 0)
        unif = np.divide(seen, k, out=np.full_like(self.N, 1.0 / S), where=k > 0)
        return (1 - self.alpha) * emp + self.alpha * unif


class MoCoDyna(_Learner):
    """MoCoDyna (the paper's sample-based variant): Dyna with a count model corrected by MoCo with *estimated* psi.

    A queue of ``d + 2`` basis functions (initially random orthogonal vectors of norm 1000) is kept; each has
    running-mean estimates ``psi_j(s,a)`` of ``E[phi_j(s') | s,a]`` from the samples seen since it entered.
    Every ``val_queue_interval`` steps the current value is Gram-Schmidt-orthogonalised against the newest ``d - 1``
    bases, scaled to norm 1000 and pushed (the oldest is dropped). Every ``planning_interval`` steps the model is
    corrected with the *oldest* ``d`` bases (the newest two are immature; rows without samples for a basis stay
    uncorrected; finite ``beta``, zero warm start) and solved exactly (policy iteration / evaluation). With
    ``wait_for_values=True`` (the default, the spec's reading of the authors' code) it plans on the uncorrected model
    (= Dyna) until ``d + 2`` values have been pushed; with ``False`` it corrects from the first plan on, using the
    initial random orthogonal bases until values replace them. ``d = 0`` is Dyna.

    Defaults are the paper's for control: plan every 2000 steps, push every 6000 (6k-10k in the paper), beta by d
    from :data:`PAPER_BETA`; the paper runs 150k steps.
    """

    name = "MoCoDyna"

    def __init__(
        self,
        d: int = 2,
        *,
        alpha: float = 1.0,
        beta: float | None = None,
        planning_interval: int = 2000,
        val_queue_interval: int = 6000,
        mode: str = "control",
        policy: np.ndarray | None = None,
        eval_every: int = 1000,
        wait_for_values: bool = True,
    ) -> None:
        super().__init__(mode=mode, policy=policy, eval_every=eval_every)
        self.wait_for_values = bool(wait_for_values)
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0:
            raise ValueError(f"d must be an int >= 0, got {d!r}")
        if not (0 <= alpha <= 1):
            raise ValueError(f"alpha (the count model's smoothing) must be in [0, 1], got {alpha!r}")
        self.d = int(d)
        self.alpha = float(alpha)
        self.beta = PAPER_BETA.get(self.d, 2e4) if beta is None else float(beta)
        if not self.beta > 0:
            raise ValueError(
                f"beta must be > 0 (use a large value for nearly exact constraints), got {beta!r}"
            )
        self.planning_interval = _positive_int("planning_interval", planning_interval)
        self.val_queue_interval = _positive_int("val_queue_interval", val_queue_interval)
        self.name = f"MoCoDyna(d={self.d})" if self.d else "Dyna"

    # -- the basis queue -------------------------------------------------------------------------------------------
    @staticmethod
    def _orthonormal_push(V, newest, rng, norm=1000.0):
        v = np.asarray(V, dtype=np.float64).copy()
        for b in newest:  # Gram-Schmidt against the newest d-1 bases
            v -= (v @ b) / (b @ b) * b
        if np.linalg.norm(v) <= 1e-10 * max(np.linalg.norm(V), 1e-300):
            v = rng.standard_normal(v.size)  # V already in their span: push a fresh random direction
            for b in newest:
                v -= (v @ b) / (b @ b) * b
        return v * (norm / np.linalg.norm(v))

    def _plan(self, model, mdp, pi, queue, sums, counts, n_pushed):
        P_hat = model.kernel()
        R_hat = model.R
        S = mdp.n_states
        full = self.d > 0 and (n_pushed >= self.d + 2 or not self.wait_for_values)
        if self.mode == "pe":
            rows = (np.arange(S), pi)
            P_rows = P_hat[rows]
            if full:
                P_rows = self._correct_rows(P_rows, queue, [x[rows] for x in sums], [c[rows] for c in counts])
            V = np.linalg.solve(np.eye(S) - mdp.gamma * P_rows, R_hat[rows])
            return V, pi
        if full:
            flat = self._correct_rows(
                P_hat.reshape(-1, S), queue, [x.ravel() for x in sums], [c.ravel() for c in counts]
            )
            P_hat = flat.reshape(P_hat.shape)
        return solve_control(P_hat, R_hat, mdp.gamma)

    def _correct_rows(self, P_rows, queue, sums, counts):
        """Correct the rows that have samples for all of the oldest d bases (estimated psi, finite beta)."""
        d = self.d
        Phi = np.stack(queue[:d], axis=1)
        cnt = np.stack(counts[:d], axis=1)
        ok = (cnt > 0).all(axis=1)
        if not ok.any():
            return P_rows
        Psi = np.stack(sums[:d], axis=1)[ok] / cnt[ok]
        out = P_rows.copy()
        out[ok], _ = correct(P_rows[ok], Phi, Psi, self.beta)
        return out

    def _learn(self, mdp, stream, pi, n_steps, seed):
        s, a, s2 = stream
        S, A = mdp.n_states, mdp.n_actions
        rng = np.random.default_rng([seed, 7])
        model = _CountModel(S, A, self.alpha)
        q = self.d + 2 if self.d else 0
        queue = list(np.linalg.qr(rng.standard_normal((S, max(q, 1))))[0].T[:q] * 1000.0)
        sums = [np.zeros((S, A)) for _ in range(q)]
        counts = [np.zeros((S, A)) for _ in range(q)]
        n_pushed = 0
        V = np.zeros(S)
        pol = pi if self.mode == "pe" else np.argmax(mdp.R, axis=1)
        events = sorted(
            set(range(0, n_steps + 1, self.planning_interval))
            | (set(range(0, n_steps + 1, self.val_queue_interval)) if q else set())
            | set(self._checkpoints(n_steps))
        )
        steps, values, pols = [], [], []
        prev = 0
        for t in events:
            if t > prev:  # absorb the block of samples (prev, t]
                blk = slice(prev, t)
                sb, ab, s2b = s[blk], a[blk], s2[blk]
                model.update(sb, ab, s2b, mdp.R)
                for j in range(q):  # running means of phi_j(s') since phi_j entered the queue
                    np.add.at(sums[j], (sb, ab), queue[j][s2b])
                    np.add.at(counts[j], (sb, ab), 1.0)
                prev = t
            if t > 0 and t % self.planning_interval == 0:
                V, pol = self._plan(model, mdp, pi, queue, sums, counts, n_pushed)
            if q and t > 0 and t % self.val_queue_interval == 0:
                queue.append(self._orthonormal_push(V, queue[-(self.d - 1) :] if self.d > 1 else [], rng))
                sums.append(np.zeros((S, A)))
                counts.append(np.zeros((S, A)))
                queue.pop(0), sums.pop(0), counts.pop(0)
                n_pushed += 1
            if t % self.eval_every == 0 or t == n_steps:
                steps.append(t)
                values.append(V.copy())
                pols.append(np.asarray(pol).copy())
        return steps, values, pols


class Dyna(MoCoDyna):
    """Dyna: plan on the count model every ``planning_interval`` steps (2000 in the paper); MoCoDyna with d = 0."""

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        planning_interval: int = 2000,
        mode: str = "control",
        policy: np.ndarray | None = None,
        eval_every: int = 1000,
    ) -> None:
        super().__init__(
            0,
            alpha=alpha,
            beta=math.inf,
            planning_interval=planning_interval,
            mode=mode,
            policy=policy,
            eval_every=eval_every,
        )
        self.name = "Dyna"


class OSDyna(_Learner):
    """OS-Dyna (Rakhsha et al., 2022), the sample-based OS-VI: a correction reward
    ``g(s,a) ~ r + gamma (P V)(s,a) - gamma (P_hat V)(s,a)`` is learned by stochastic approximation (lr 0.02),
    ``g += lr (r + gamma V(s') - gamma (P_hat V)(s,a) - g)`` with the current count model, and every
    ``planning_interval`` steps ``V`` is re-planned in ``P_hat`` with reward ``g``."""

    name = "OS-Dyna"

    def __init__(
        self,
        lr: float = 0.02,
        *,
        alpha: float = 1.0,
        planning_interval: int = 2000,
        mode: str = "control",
        policy: np.ndarray | None = None,
        eval_every: int = 1000,
    ) -> None:
        super().__init__(mode=mode, policy=policy, eval_every=eval_every)
        self.lr = _lr("lr", lr)
        if not (0 <= alpha <= 1):
            raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
        self.alpha = float(alpha)
        self.planning_interval = _positive_int("planning_interval", planning_interval)

    def _learn(self, mdp, stream, pi, n_steps, seed):
        s, a, s2 = stream
        S, A, gam, lr, al = mdp.n_states, mdp.n_actions, mdp.gamma, self.lr, self.alpha
        model = _CountModel(S, A, al)
        V = np.zeros(S)
        pol = pi if self.mode == "pe" else np.argmax(mdp.R, axis=1)
        checkpoints = set(self._checkpoints(n_steps))
        steps, values, pols = [], [], []
        sl, al_, s2l = s.tolist(), a.tolist(), s2.tolist()
        R = mdp.R.tolist()
        G = [[0.0] * A for _ in range(S)]  # the correction reward g(s, a)
        # (P_hat V)(s,a) of the count model, kept up to date sample by sample: sum_y N(s,a,y) V(y) (NV), the
        # visit count (n), the observed successors (seen) and the sum of V over them (SV)
        NV = [[0.0] * A for _ in range(S)]
        n = [[0] * A for _ in range(S)]
        seen = [[set() for _ in range(A)] for _ in range(S)]
        SV = [[0.0] * A for _ in range(S)]
        Vl = V.tolist()
        last = 0
        for t in range(n_steps + 1):
            if t > 0 and t % self.planning_interval == 0:
                blk = slice(last, t)
                model.update(s[blk], a[blk], s2[blk], mdp.R)
                last = t
                P_hat = model.kernel()
                Ga = np.array(G)
                if self.mode == "pe":
                    rows = (np.arange(S), pi)
                    V = np.linalg.solve(np.eye(S) - gam * P_hat[rows], Ga[rows])
                else:
                    V, pol = solve_control(P_hat, Ga, gam)
                Vl = V.tolist()
                NV = (model.N @ V).tolist()
                SV = [[sum(Vl[z] for z in seen[x][y]) for y in range(A)] for x in range(S)]
            if t in checkpoints:
                steps.append(t)
                values.append(V.copy())
                pols.append(np.asarray(pol).copy())
            if t == n_steps:
                break
            x, y, z = sl[t], al_[t], s2l[t]
            n[x][y] += 1
            NV[x][y] += Vl[z]
            if z not in seen[x][y]:
                seen[x][y].add(z)
                SV[x][y] += Vl[z]
            # (P_hat V)(s,a) = (1 - alpha) * empirical mean + alpha * mean over the observed successors
            PV = (1 - al) * NV[x][y] / n[x][y] + al * SV[x][y] / len(seen[x][y])
            G[x][y] += lr * (R[x][y] + gam * Vl[z] - gam * PV - G[x][y])
        return steps, values, pols
