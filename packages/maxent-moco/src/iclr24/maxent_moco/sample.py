"""Sample-based algorithms (the paper's MoCoDyna section): MoCoDyna and its baselines Q-learning / TD, Dyna and OS-Dyna.

All of them learn from the same stream of samples of a generative model: at each step a state-action pair is drawn
uniformly (control; in policy evaluation ("pe") a state uniformly and ``a = pi(s)``) and one next state
``s' ~ P(.|s, a)`` is observed with the reward ``R(s, a)``. A run with the same ``seed`` sees the same stream for
every algorithm. ``run(mdp, n_steps, seed)`` returns a :class:`SampleTrace` of the normalised error every
``eval_every`` steps.

The count model (Dyna, OS-Dyna, MoCoDyna): ``P_hat = (1 - alpha) * empirical + alpha * Uniform(observed successors)``
for visited pairs and uniform over all states for unvisited ones; ``alpha`` is the model-error level (the paper's
lambda of the LocallySmoothed model). ``model="identity_smoothed"`` or ``"adversarial"`` replaces the uniform part
by "stay in s" or "move like action 0" (the official ``model/`` classes, see :data:`COUNT_MODELS`).
"""

from __future__ import annotations

import math
import os

import numpy as np

from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError

from ._errorlog import ErrorLog
from .envs import TabularMDP
from .envs import adversarial_kernel
from .moco import correct
from .planning import evaluate_policy
from .planning import normalized_error
from .planning import policy_error
from .planning import solve_control
from .stream import SampleTrace
from .stream import _check_common
from .stream import sample_stream
from .stream import user_samples

__all__ = [
    "COUNT_MODELS",
    "OS_DYNA_VARIANTS",
    "PAPER_BETA",
    "Dyna",
    "MoCoDyna",
    "OSDyna",
    "QLearning",
    "TDLearning",
]

#: The count models' smoothing targets (the official ``model/`` classes).
COUNT_MODELS = ("locally_smoothed", "identity_smoothed", "adversarial")

#: The authors' defaults for the regularisation (code convention) by basis size d.
PAPER_BETA = {1: 1e4, 2: 1.5e4, 3: 2e4}


def _positive_int(name, v):
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
        raise InputError(f"{name} must be a positive int, got {v!r}")
    return int(v)


def _lr(name, v):
    if isinstance(v, bool) or not isinstance(v, int | float) or not (0 < v <= 1):
        raise InputError(f"{name} must be in (0, 1], got {v!r}")
    return float(v)


class _Learner:
    name = "learner"

    def __init__(
        self, *, mode: str = "control", policy: np.ndarray | None = None, eval_every: int = 1000
    ) -> None:
        if mode not in ("pe", "control"):
            raise InputError(f"mode must be 'pe' or 'control', got {mode!r}")
        self.mode = mode
        self.policy = None if policy is None else np.asarray(policy)
        self.eval_every = _positive_int("eval_every", eval_every)

    def run(
        self,
        mdp: TabularMDP,
        n_steps: int | None = None,
        seed: int = 0,
        *,
        samples: object = None,
        callbacks: object = None,
        log_dir: str | os.PathLike | None = None,
    ) -> SampleTrace:
        """Learn from ``n_steps`` samples of ``mdp`` (stream fixed by ``seed``) and return the error trace.

        ``samples``: your own transitions instead of the generated stream (see :func:`user_samples`: three (n,)
        arrays, an (n, 3) array, or a torch Dataset/DataLoader of ``(s, a, s')``; ``n_steps`` then defaults to
        their number). The rewards are ``mdp.R``, and ``mdp`` (the true MDP) scores the errors. The same samples
        as arrays or as a loader give the same trace as the generated stream they came from. ``callbacks`` /
        ``log_dir``: one :class:`~iclr24.paperkit.tracking.StepLog` gets ``{"error": ...}`` at every evaluation
        (every ``eval_every`` samples, as the trace), as the run goes."""
        pi = self.policy
        if self.mode == "pe" and pi is None and isinstance(mdp, TabularMDP):
            pi = solve_control(mdp.P, mdp.R, mdp.gamma)[1]
        stream = None
        if samples is not None:
            if not isinstance(mdp, TabularMDP):
                raise InputError(f"mdp must be a TabularMDP, got {type(mdp).__name__}")
            stream = user_samples(samples, mdp, self.mode, pi)
            if n_steps is None:
                n_steps = len(stream[0])
            elif n_steps != len(stream[0]):
                raise InputError(f"n_steps={n_steps!r} but samples hold {len(stream[0])} transitions")
        _check_common(mdp, n_steps, seed, self.mode)
        if stream is None:
            stream = sample_stream(mdp, int(n_steps), int(seed), self.mode, pi)
        target = (
            evaluate_policy(mdp.P, mdp.R, mdp.gamma, pi)
            if self.mode == "pe"
            else solve_control(mdp.P, mdp.R, mdp.gamma)[0]
        )
        log = ErrorLog(callbacks, log_dir, mdp, self.mode, target)
        try:
            steps, values, policies = self._learn(mdp, stream, pi, int(n_steps), int(seed), log)
        finally:
            log.close()
        steps, values = np.asarray(steps), np.asarray(values)
        if self.mode == "pe":
            errs = normalized_error(values, target)
            return SampleTrace(self.name, "pe", steps, errs, values)
        policies = np.asarray(policies)
        errs = policy_error(mdp.P, mdp.R, mdp.gamma, policies, target)
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

    def _learn(self, mdp, stream, pi, n_steps, seed, log):
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
                log(t, values[-1], pols[-1])
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

    def _learn(self, mdp, stream, pi, n_steps, seed, log):
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
                log(t, values[-1])
            if t == n_steps:
                break
            x = sl[t]
            V[x] += lr * (R[x][al[t]] + g * V[s2l[t]] - V[x])
        return steps, values, None


class _CountModel:
    """Counts N(s, a, s') and the smoothed kernel of the module docstring, kept row by row in ``rows`` (S, A, S).

    ``kind`` is the smoothing target of the official ``model/`` classes: "locally_smoothed" (uniform over the
    observed successors; unvisited rows uniform over all states), "identity_smoothed" (stay in s) or "adversarial"
    (every action moving like action 0 of the true MDP, ``model/CliffWalkAdvModel.py``); for the last two an
    unvisited row is ``(1 - alpha) / S + alpha * target``."""

    def __init__(self, mdp: TabularMDP, alpha: float, kind: str = "locally_smoothed") -> None:
        if kind not in COUNT_MODELS:
            raise InputError(f"unknown count-model kind {kind!r}; expected one of {COUNT_MODELS}")
        S, A = mdp.n_states, mdp.n_actions
        self.N = np.zeros((S, A, S))
        self.alpha = float(alpha)
        self.kind = kind
        self.R = np.zeros((S, A))
        if kind == "identity_smoothed":
            self.target = np.broadcast_to(np.eye(S)[:, None, :], (S, A, S))
        elif kind == "adversarial":
            self.target = adversarial_kernel(mdp.P)
        else:
            self.target = None
        self.rows = self._unvisited()
        self._n = [[0] * A for _ in range(S)]  # visits and distinct successors per pair (for add)
        self._k = [[0] * A for _ in range(S)]

    def _unvisited(self) -> np.ndarray:
        S, A, _ = self.N.shape
        if self.target is None:
            return np.full((S, A, S), 1.0 / S)
        return (1 - self.alpha) / S + self.alpha * self.target

    def update(self, s, a, s2, R) -> None:
        """Absorb a block of samples and refresh every row (vectorised)."""
        np.add.at(self.N, (s, a, s2), 1.0)
        self.R[s, a] = R[s, a]  # deterministic rewards: observed on the first visit
        self.rows = self.kernel()

    def add(self, x: int, y: int, z: int, R) -> None:
        """Absorb one sample (x, y, z) and refresh its row only."""
        cnt = self.N[x, y]
        first = cnt[z] == 0
        cnt[z] += 1.0
        self.R[x, y] = R[x, y]
        n = self._n[x][y] = self._n[x][y] + 1
        if first:
            self._k[x][y] += 1
        row = self.rows[x, y]
        np.multiply(cnt, (1 - self.alpha) / n, out=row)
        if self.target is None:
            row[cnt > 0] += self.alpha / self._k[x][y]
        else:
            row += self.alpha * self.target[x, y]

    def kernel(self) -> np.ndarray:
        S = self.N.shape[0]
        n = self.N.sum(axis=2, keepdims=True)
        emp = np.divide(self.N, n, out=np.full_like(self.N, 1.0 / S), where=n > 0)
        if self.target is None:
            seen = (self.N > 0).astype(np.float64)
            k = seen.sum(axis=2, keepdims=True)
            smooth = np.divide(seen, k, out=np.full_like(self.N, 1.0 / S), where=k > 0)
        else:
            smooth = self.target
        return (1 - self.alpha) * emp + self.alpha * smooth


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.floating) or not (0 <= alpha <= 1):
        raise InputError(f"alpha (the count model's smoothing) must be in [0, 1], got {alpha!r}")
    return float(alpha)


def _check_kind(model):
    if model not in COUNT_MODELS:
        raise InputError(f"model must be one of {COUNT_MODELS} (the count model's smoothing), got {model!r}")
    return model


class MoCoDyna(_Learner):
    """MoCoDyna (the paper's sample-based variant): Dyna with a count model corrected by MoCo with *estimated* psi.

    As the official ``algorithms/MECDyna_Control.py``: a queue of ``d + n_unused`` basis functions (``n_unused = 2``)
    starts with random orthogonal vectors of norm 1000; each has running-mean estimates ``psi_j(s,a)`` of
    ``E[phi_j(s') | s,a]`` from the samples seen since it entered. Every ``val_queue_interval`` samples the current
    value is Gram-Schmidt-orthogonalised against the newest ``d - 1`` bases, scaled to norm 1000 and pushed (the
    oldest is dropped). Every ``planning_interval`` samples the model is corrected with the *oldest* ``d`` bases (the
    newest ``n_unused`` are immature; finite ``beta``, zero warm start) and solved exactly (policy iteration /
    evaluation). Plans and pushes happen after samples 1, 1 + interval, 1 + 2 interval, ... (the official loop acts
    after the sample of index k = 0, interval, ...). Rows without a sample for one of the d bases stay uncorrected.

    The default corrects from the first plan on (the official gate ``len(queue) > n_unused`` holds from the start,
    the random orthogonal bases standing in until values replace them). ``wait_for_values=True`` is the variant
    that plans on the uncorrected model (= Dyna) until ``d + n_unused`` values have been pushed. ``d = 0`` is Dyna.

    Defaults are the paper's for control: plan every 2000 samples, push every 6000 (the official value for d = 2;
    10000 for d = 1, 3), beta by d from :data:`PAPER_BETA`; the paper runs 150k samples. ``model`` is the count
    model's smoothing (:data:`COUNT_MODELS`), ``alpha`` its weight.
    """

    name = "MoCoDyna"
    _offset = 1  # events after samples 1, 1 + interval, ... (the official loop acts after sample k = 0, interval, ...)

    def __init__(
        self,
        d: int = 2,
        *,
        alpha: float = 1.0,
        model: str = "locally_smoothed",
        beta: float | None = None,
        planning_interval: int = 2000,
        val_queue_interval: int = 6000,
        n_unused: int = 2,
        mode: str = "control",
        policy: np.ndarray | None = None,
        eval_every: int = 1000,
        wait_for_values: bool = False,
    ) -> None:
        super().__init__(mode=mode, policy=policy, eval_every=eval_every)
        self.wait_for_values = bool(wait_for_values)
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0:
            raise InputError(f"d must be an int >= 0, got {d!r}")
        self.d = int(d)
        self.alpha = _check_alpha(alpha)
        self.model = _check_kind(model)
        if beta is not None and (isinstance(beta, bool) or not isinstance(beta, int | float | np.floating)):
            raise InputError(f"beta must be a number > 0 or None (the paper's value), got {beta!r}")
        self.beta = PAPER_BETA.get(self.d, 2e4) if beta is None else float(beta)
        if not self.beta > 0:
            raise InputError(
                f"beta must be > 0 (use a large value for nearly exact constraints), got {beta!r}"
            )
        self.planning_interval = _positive_int("planning_interval", planning_interval)
        self.val_queue_interval = _positive_int("val_queue_interval", val_queue_interval)
        if isinstance(n_unused, bool) or not isinstance(n_unused, int | np.integer) or n_unused < 0:
            raise InputError(f"n_unused must be an int >= 0, got {n_unused!r}")
        self.n_unused = int(n_unused)
        self.name = f"MoCoDyna(d={self.d})" if self.d else "Dyna"
        if self.d and self.wait_for_values:
            self.name += ", wait"

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
        P_hat = model.rows
        R_hat = model.R
        S = mdp.n_states
        gate = self.d > 0 and (n_pushed >= self.d + self.n_unused or not self.wait_for_values)
        if self.mode == "pe":
            rows = (np.arange(S), pi)
            P_rows = P_hat[rows]
            if gate:
                P_rows = self._correct_rows(P_rows, queue, [x[rows] for x in sums], [c[rows] for c in counts])
            # V = (I - gamma P_bar^pi)^{-1} r^pi: policy evaluation in the corrected model
            V = np.linalg.solve(np.eye(S) - mdp.gamma * P_rows, R_hat[rows])
            return V, pi
        if gate:
            flat = self._correct_rows(
                P_hat.reshape(-1, S), queue, [x.ravel() for x in sums], [c.ravel() for c in counts]
            )
            P_hat = flat.reshape(P_hat.shape)
        # V_{k+1} = V*(P_bar_k), pi_{k+1} greedy in P_bar_k
        return solve_control(P_hat, R_hat, mdp.gamma)

    def _correct_rows(self, P_rows, queue, sums, counts):
        """Correct the rows that have samples for all of the oldest d bases (estimated psi, finite beta)."""
        d = self.d
        Phi = np.stack(queue[:d], axis=1)
        cnt = np.stack(counts[:d], axis=1)
        ok = (cnt > 0).all(axis=1)
        if not ok.any():
            return P_rows
        # psi_hat(s,a) = running mean of phi(s') over the samples of (s, a) since phi entered the queue
        Psi = np.stack(sums[:d], axis=1)[ok] / cnt[ok]
        out = P_rows.copy()
        # P_bar = MoCo(P_hat, Phi, psi_hat), regularised dual (psi is estimated)
        out[ok] = correct(P_rows[ok], Phi, Psi, self.beta).P_bar
        return out

    def _events(self, n_steps, interval):
        off = self._offset
        return set(range(off, n_steps + 1, interval)) if n_steps >= off else set()

    def _learn(self, mdp, stream, pi, n_steps, seed, log):
        s, a, s2 = stream
        S, A = mdp.n_states, mdp.n_actions
        rng = np.random.default_rng([seed, 7])
        model = _CountModel(mdp, self.alpha, self.model)
        q = self.d + self.n_unused if self.d else 0
        # the official start: q random (uniform) vectors, Gram-Schmidt-orthogonalised, of norm 1000
        queue = list(np.linalg.qr(rng.random((S, max(q, 1))))[0].T[:q] * 1000.0)
        sums = [np.zeros((S, A)) for _ in range(q)]
        counts = [np.zeros((S, A)) for _ in range(q)]
        n_pushed = 0
        V = np.zeros(S)
        pol = pi if self.mode == "pe" else np.argmax(mdp.R, axis=1)
        plans = self._events(n_steps, self.planning_interval)
        pushes = self._events(n_steps, self.val_queue_interval) if q else set()
        checks = set(self._checkpoints(n_steps))
        steps, values, pols = [], [], []
        prev = 0
        for t in sorted(plans | pushes | checks):
            if t > prev:  # absorb the block of samples (prev, t]
                blk = slice(prev, t)
                sb, ab, s2b = s[blk], a[blk], s2[blk]
                model.update(sb, ab, s2b, mdp.R)
                for j in range(q):  # running means of phi_j(s') since phi_j entered the queue
                    np.add.at(sums[j], (sb, ab), queue[j][s2b])
                    np.add.at(counts[j], (sb, ab), 1.0)
                prev = t
            if t in plans:
                V, pol = self._plan(model, mdp, pi, queue, sums, counts, n_pushed)
            if t in pushes:
                queue.append(self._orthonormal_push(V, queue[-(self.d - 1) :] if self.d > 1 else [], rng))
                sums.append(np.zeros((S, A)))
                counts.append(np.zeros((S, A)))
                queue.pop(0), sums.pop(0), counts.pop(0)
                n_pushed += 1
            if t in checks:
                steps.append(t)
                values.append(V.copy())
                pols.append(np.asarray(pol).copy())
                log(t, values[-1], pols[-1])
        return steps, values, pols


class Dyna(MoCoDyna):
    """Dyna: plan on the count model every ``planning_interval`` samples (2000 in the paper); MoCoDyna with d = 0.
    As the official ``algorithms/Dyna_Control.py`` it plans after 0, interval, 2 interval, ... samples."""

    _offset = 0

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        model: str = "locally_smoothed",
        planning_interval: int = 2000,
        mode: str = "control",
        policy: np.ndarray | None = None,
        eval_every: int = 1000,
    ) -> None:
        super().__init__(
            0,
            alpha=alpha,
            model=model,
            beta=math.inf,
            planning_interval=planning_interval,
            mode=mode,
            policy=policy,
            eval_every=eval_every,
        )
        self.name = "Dyna"


#: The OS-Dyna schedules: "official" re-solves the model after every sample (``algorithms/MSDyna_Control.py``),
#: "interval" re-plans every ``planning_interval`` samples (a cheaper variant, not the authors' algorithm).
OS_DYNA_VARIANTS = ("official", "interval")


class OSDyna(_Learner):
    """OS-Dyna (Rakhsha et al., 2022), the sample-based OS-VI, on the official schedule of ``MSDyna_Control.py``.

    At every sample ``(s, a, r, s')``, with ``P_hat`` the count model before the sample and ``V`` the current value:
    ``g(s,a) += lr (r + gamma V(s') - gamma (P_hat V)(s,a) - g(s,a))`` (stochastic approximation of the correction
    reward ``r + gamma (P - P_hat) V``), then ``V`` is re-solved at once: the optimal value in ``P_hat`` for the
    reward ``g`` (policy evaluation of ``pi`` in "pe"). The policy reported at step k is greedy for
    ``g + gamma P_hat V``. The official code re-runs value iteration from zero to 1e-6 after every sample; here the
    exact solution is kept up to date incrementally: each sample changes one reward and one row of the model, a
    rank-one change of ``I - gamma P^pi`` when the policy uses that row (Sherman-Morrison on ``(I - gamma P^pi)^-1``,
    O(S^2)); policy iteration restores optimality when a row starts to beat the policy. That gives the same values
    to round-off at a fraction of the cost, and :meth:`run_many` runs several seeds in lock-step, vectorised.

    ``variant="interval"`` is a cheaper variant (not the authors'): ``g`` is learned the same way but ``V`` is
    re-planned only every ``planning_interval`` samples, so its correction target is stale in between. Learning
    rate: constant ``lr`` (the official schedule's decay has a bug, see the README).
    """

    name = "OS-Dyna"

    def __init__(
        self,
        lr: float = 0.02,
        *,
        alpha: float = 1.0,
        model: str = "locally_smoothed",
        variant: str = "official",
        planning_interval: int = 2000,
        mode: str = "control",
        policy: np.ndarray | None = None,
        eval_every: int = 1000,
    ) -> None:
        super().__init__(mode=mode, policy=policy, eval_every=eval_every)
        self.lr = _lr("lr", lr)
        self.alpha = _check_alpha(alpha)
        self.model = _check_kind(model)
        if variant not in OS_DYNA_VARIANTS:
            raise InputError(f"variant must be one of {OS_DYNA_VARIANTS}, got {variant!r}")
        self.variant = variant
        self.planning_interval = _positive_int("planning_interval", planning_interval)
        if variant == "interval":
            self.name = f"OS-Dyna(every {self.planning_interval})"

    def run_many(
        self,
        mdp: TabularMDP,
        n_steps: int,
        seeds,
        *,
        callbacks: object = None,
        log_dir: str | os.PathLike | None = None,
    ) -> list[SampleTrace]:
        """:meth:`run` for several seeds at once (vectorised over the seeds; the same traces as one run each).
        The step log gets ``error`` (the mean over the seeds) and ``error/seed<s>`` at every evaluation."""
        seeds = list(seeds)
        if not seeds:
            raise InputError("seeds must name at least one seed")
        for sd in seeds:
            _check_common(mdp, n_steps, sd, self.mode)
        return _run_os_dyna(self, mdp, int(n_steps), [int(x) for x in seeds], [self.alpha] * len(seeds),
                            callbacks=callbacks, log_dir=log_dir)  # fmt: skip

    def run(
        self,
        mdp: TabularMDP,
        n_steps: int | None = None,
        seed: int = 0,
        *,
        samples: object = None,
        callbacks: object = None,
        log_dir: str | os.PathLike | None = None,
    ) -> SampleTrace:
        if samples is None:
            return self.run_many(mdp, n_steps, [seed], callbacks=callbacks, log_dir=log_dir)[0]
        if not isinstance(mdp, TabularMDP):
            raise InputError(f"mdp must be a TabularMDP, got {type(mdp).__name__}")
        pi = self.policy
        if self.mode == "pe" and pi is None:
            pi = solve_control(mdp.P, mdp.R, mdp.gamma)[1]
        stream = user_samples(samples, mdp, self.mode, pi)
        if n_steps is not None and n_steps != len(stream[0]):
            raise InputError(f"n_steps={n_steps!r} but samples hold {len(stream[0])} transitions")
        _check_common(mdp, len(stream[0]), seed, self.mode)
        return _run_os_dyna(self, mdp, len(stream[0]), [int(seed)], [self.alpha], streams=[stream],
                            callbacks=callbacks, log_dir=log_dir)[0]  # fmt: skip


def _run_os_dyna(
    algo: OSDyna,
    mdp: TabularMDP,
    n_steps: int,
    seeds: list[int],
    alphas: list[float],
    show: bool = False,
    *,
    streams: list | None = None,
    callbacks: object = None,
    log_dir: str | os.PathLike | None = None,
):
    """OS-Dyna for B (seed, alpha) pairs in lock-step; returns B SampleTraces (see :class:`OSDyna`). ``streams``:
    the B sample streams (default: :func:`sample_stream` of each seed)."""
    control = algo.mode == "control"
    pi = algo.policy
    if not control and pi is None:
        pi = solve_control(mdp.P, mdp.R, mdp.gamma)[1]
    if streams is None:
        streams = [sample_stream(mdp, n_steps, sd, algo.mode, pi) for sd in seeds]
    X = np.stack([st[0] for st in streams])
    Y = np.stack([st[1] for st in streams])
    Z = np.stack([st[2] for st in streams])
    V_star = solve_control(mdp.P, mdp.R, mdp.gamma)[0] if control else None
    V_pi = None if control else evaluate_policy(mdp.P, mdp.R, mdp.gamma, pi)
    labels = [f"seed{sd}" for sd in seeds] if len(set(seeds)) == len(seeds) else None
    log = ErrorLog(callbacks, log_dir, mdp, algo.mode, V_star if control else V_pi, labels)
    try:
        steps, values, pols = _os_dyna_batch(
            algo, mdp, X, Y, Z, np.asarray(alphas, float), pi, show=show, log=log
        )
    finally:
        log.close()
    out = []
    for b in range(len(seeds)):
        vals = values[:, b]
        if control:
            errs = policy_error(mdp.P, mdp.R, mdp.gamma, pols[:, b], V_star)
            out.append(SampleTrace(algo.name, "control", steps, errs, vals, pols[:, b]))
        else:
            out.append(SampleTrace(algo.name, "pe", steps, normalized_error(vals, V_pi), vals))
    return out


def _count_rows(N, n_unv, alpha, target_rows, S):
    """Count-model rows from counts N (n, S) (alpha scalar; target_rows (n, S) or None for locally smoothed)."""
    tot = N.sum(axis=1, keepdims=True)
    emp = np.divide(N, tot, out=np.full_like(N, 1.0 / S), where=tot > 0)
    if target_rows is None:
        seen = (N > 0).astype(np.float64)
        k = seen.sum(axis=1, keepdims=True)
        smooth = np.divide(seen, k, out=np.full_like(N, 1.0 / S), where=k > 0)
    else:
        smooth = target_rows
    return (1 - alpha) * emp + alpha * smooth


def _chunk_rows(N, pair, z, alpha, target, S):
    """The count-model row of each sample's pair before and after the sample, for one problem and one chunk.

    N (S*A, S) counts before the chunk (updated in place), pair (C,) = s * A + a, z (C,) next states. Returns
    before, after (C, S): the row of ``pair[i]`` with the samples < i (resp. <= i) of the stream absorbed."""
    C = pair.size
    order = np.argsort(pair, kind="stable")
    ps, zs = pair[order], z[order]
    onehot = np.zeros((C, S))
    onehot[np.arange(C), zs] = 1.0
    csum = np.cumsum(onehot, axis=0)
    start = np.flatnonzero(np.r_[True, ps[1:] != ps[:-1]])  # first index of each pair's group
    group = np.repeat(start, np.diff(np.r_[start, C]))
    base = np.where(group[:, None] > 0, csum[np.maximum(group - 1, 0)], 0.0)
    within = csum - base  # the counts of this chunk's samples of the pair, up to and including this one
    cnt_after = np.empty((C, S))
    cnt_after[order] = N[ps] + within
    cnt_before = cnt_after.copy()
    cnt_before[np.arange(C), z] -= 1.0
    np.add.at(N, (pair, z), 1.0)
    tr = None if target is None else target[pair]
    return (_count_rows(cnt_before, None, alpha, tr, S), _count_rows(cnt_after, None, alpha, tr, S))


def _os_dyna_batch(algo, mdp, X, Y, Z, alphas, pi, refresh_every: int = 1000, show: bool = False, log=None):
    """The lock-step OS-Dyna loop. X, Y, Z (B, T) sample streams; returns steps (m,), values (m, B, S), policies.

    The count models do not depend on the values, so the rows each sample reads (before it) and writes (after it)
    are computed a chunk at a time, vectorised; the loop over samples only updates the planning state."""
    B, T = X.shape
    S, A, gam, lr = mdp.n_states, mdp.n_actions, mdp.gamma, algo.lr
    control = algo.mode == "control"
    every_sample = algo.variant == "official"
    bi, ar = np.arange(B), np.arange(S)
    kind = algo.model
    R_flat = mdp.R.reshape(-1)
    if kind == "locally_smoothed":
        target = None
    elif kind == "identity_smoothed":
        target = np.repeat(np.eye(S), A, axis=0)  # (S*A, S): row s*A + a is delta_s
    else:
        target = adversarial_kernel(mdp.P).reshape(S * A, S)
    N = np.zeros((B, S * A, S))
    PAIR = X * A + Y

    def full_rows(b):
        return _count_rows(N[b], None, alphas[b], target, S)

    # the planning model lags the count model by one sample (the official solve at step k uses P_hat before the
    # sample of step k): P (B, S*A, S), reward g (B, S*A), policy, M = (I - gamma P^pi)^{-1}, V = M g^pi
    P = np.stack([full_rows(b) for b in range(B)])
    g = np.zeros((B, S * A))
    pol = np.zeros((B, S), dtype=np.int64) if control else np.broadcast_to(np.asarray(pi), (B, S)).copy()
    eye = np.eye(S)
    M = np.zeros((B, S, S))
    V = np.zeros((B, S))
    scale = np.zeros(B)

    def refresh(idx):
        sel = idx[:, None] * 0 + (ar * A)[None, :] + pol[idx]  # (b, S) flat rows of the policy
        P_pi = P[idx[:, None], sel]  # (b, S, S)
        M[idx] = np.linalg.inv(eye - gam * P_pi)
        V[idx] = np.einsum("bst,bt->bs", M[idx], g[idx[:, None], sel])
        scale[idx] = 1e-10 * (1.0 + np.abs(V[idx]).max(axis=1))

    refresh(bi)

    def optimise(b):
        """Policy iteration for problem b until no action beats the policy's (a fresh inverse per switch)."""
        for _ in range(1000):
            Q = (g[b] + gam * (P[b] @ V[b])).reshape(S, A)
            new = Q.argmax(axis=1)
            imp = Q[ar, new] > Q[ar, pol[b]] + scale[b]
            if not imp.any():
                return
            pol[b, imp] = new[imp]
            refresh(np.array([b]))

    cuts = set(algo._checkpoints(T))
    if not every_sample:
        cuts |= set(range(algo.planning_interval, T + 1, algo.planning_interval))
    cuts = sorted(cuts | {0, T})
    steps, values, policies = [], [], []
    prev_after = None  # (B, S): the count row of the previous sample's pair after it (enters P at this step)
    prev_pair = None
    updates = 0
    checkpoints = set(algo._checkpoints(T))
    spans = list(zip(cuts[:-1], cuts[1:])) if T else []
    for c0, c1 in progress(spans, desc=f"{algo.name} x{B}", disable=not show):
        if c0 in checkpoints:
            steps.append(c0)
            values.append(V.copy())
            if control:
                rows = np.stack([full_rows(b) for b in range(B)])  # the count model with the samples < c0
                Q = (g + gam * np.einsum("bkt,bt->bk", rows, V)).reshape(B, S, A)
                policies.append(Q.argmax(axis=2))
            if log is not None:
                log(c0, values[-1], policies[-1] if control else None)
        chunk = [_chunk_rows(N[b], PAIR[b, c0:c1], Z[b, c0:c1], alphas[b], target, S) for b in range(B)]
        before = np.stack([ch[0] for ch in chunk], axis=1)  # (C, B, S)
        after = np.stack([ch[1] for ch in chunk], axis=1)
        for i, t in enumerate(range(c0, c1)):
            pair, x, z = PAIR[:, t], X[:, t], Z[:, t]
            row_b = before[i]
            # Eq. (OS-Dyna): g(s,a) <- g(s,a) + lr (r + gamma V(s') - gamma (P_hat V)(s,a) - g(s,a))
            g_old = g[bi, pair]
            g_new = g_old + lr * (R_flat[pair] + gam * (V[bi, z] - np.einsum("bs,bs->b", row_b, V)) - g_old)
            if every_sample:
                changed = False
                if prev_pair is not None:  # the model row of the previous sample enters the planning model
                    px = prev_pair // A
                    greedy = pol[bi, px] * 1 + px * A == prev_pair
                    if greedy.any():
                        dp = (prev_after - P[bi, prev_pair]) * greedy[:, None]
                        c = M[bi, :, px]
                        w = gam * dp
                        wc = np.einsum("bs,bs->b", w, c)
                        den = 1.0 - wc
                        # V' = V + c xi with xi = w . V' in closed form; M' = M + c (w^T M) / (1 - w . c)
                        V += c * (np.einsum("bs,bs->b", w, V) / den)[:, None]
                        M += c[:, :, None] * (np.einsum("bs,bst->bt", w, M) / den[:, None])[:, None, :]
                        changed = True
                    P[bi, prev_pair] = prev_after
                greedy = pol[bi, x] + x * A == pair
                g[bi, pair] = g_new
                if greedy.any():  # a reward change of the policy's row: V' = V + M e_x dr
                    V += M[bi, :, x] * ((g_new - g_old) * greedy)[:, None]
                    changed = True
                updates += 1
                if updates >= refresh_every:
                    refresh(bi)
                    updates = 0
                if control:
                    if changed:  # is any action now better than the policy's? then policy iteration there
                        Q = (g + gam * np.matmul(P, V[:, :, None])[:, :, 0]).reshape(B, S, A)
                        worse = np.flatnonzero((Q.max(axis=2) - V).max(axis=1) > scale)
                    else:  # V unchanged: only the two changed rows can have started to beat the policy
                        q1 = g[bi, pair] + gam * np.einsum("bs,bs->b", P[bi, pair], V)
                        bad = q1 > V[bi, x] + scale
                        if prev_pair is not None:
                            q2 = g[bi, prev_pair] + gam * np.einsum("bs,bs->b", P[bi, prev_pair], V)
                            bad |= q2 > V[bi, prev_pair // A] + scale
                        worse = np.flatnonzero(bad)
                    for b in worse:
                        optimise(int(b))
            else:
                g[bi, pair] = g_new
            prev_after, prev_pair = after[i], pair
        if not every_sample and c1 % algo.planning_interval == 0:  # the variant: re-plan now and then
            P[...] = np.stack([full_rows(b) for b in range(B)])
            refresh(bi)
            if control:
                for b in range(B):
                    optimise(b)
    if T in checkpoints:
        steps.append(T)
        values.append(V.copy())
        if control:
            rows = np.stack([full_rows(b) for b in range(B)])
            Q = (g + gam * np.einsum("bkt,bt->bk", rows, V)).reshape(B, S, A)
            policies.append(Q.argmax(axis=2))
        if log is not None:
            log(T, values[-1], policies[-1] if control else None)
    return np.asarray(steps), np.asarray(values), (np.asarray(policies) if control else None)
