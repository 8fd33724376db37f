"""MoCo: the maximum-entropy model correction (an I-projection of every row of a model onto moment constraints).

For one row (a state, or a state-action pair) with model distribution ``p = P_hat(.|x,a)`` over ``S`` next states,
a basis ``phi: S -> R^d`` and queried expectations ``psi = (P phi)(x,a)``, MoCo solves (the paper's MaxEnt MoCo)

    P_bar(.|x,a) = argmin_{q << p} KL(q || p)   s.t.   E_q[phi] = psi                      (primal)

whose solution is the exponential tilt ``P_bar(y) = p(y) exp(lam^T phi(y) - Lambda(lam))`` with
``Lambda(lam) = log sum_y p(y) exp(lam^T phi(y))`` and ``lam`` the minimiser of the convex dual

    D(lam) = Lambda(lam) - lam^T psi  [+ ||lam||^2 / beta  when psi is estimated]          (dual)

(``beta`` is the code's convention, ``beta_code = 4 / beta_paper**2``; the regularised dual is the dual of
``min_q KL(q||p) + ||E_q phi - psi||^2 / beta_paper**2``.) Its gradient is ``E_q[phi] - psi (+ 2 lam / beta)`` and its
Hessian ``Cov_q[phi] (+ 2 I / beta)``.

The solver here is a robust one: the basis is centred, standardised and orthonormalised by an SVD
(dropping directions whose singular value is below ``1e-8`` of the largest: the span, hence the primal solution, is
unchanged), then every row runs its own Newton iteration with a backtracking line search, all rows at once
(vectorised, float64). ``correct_bfgs`` is the reference approach (one joint BFGS on the mean dual), kept for the
benchmarks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.optimize import minimize

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array

__all__ = [
    "BasisTransform",
    "Correction",
    "CorrectionInfo",
    "beta_from_paper",
    "correct",
    "correct_bfgs",
    "kl_divergence",
    "moment_residual",
]

_SVD_RTOL = 1e-8  # singular values below this fraction of the largest are dropped (collinear bases)
_STD_RTOL = 1e-12  # a column whose std is below this fraction of its magnitude is treated as constant
_MAX_LAM = 1e8  # a row whose multipliers grow past this (in the orthonormal coordinates) is diverging


def beta_from_paper(beta_paper: float) -> float:
    """Convert the paper's regularisation constant to the one used here (and in the authors' code).

    The README of the authors' code states ``beta_code = 4 / beta_paper**2``."""
    if not (isinstance(beta_paper, int | float) and 1e-150 < beta_paper < 1e150):
        raise InputError(f"beta_paper must be a positive finite number, got {beta_paper!r}")
    return 4.0 / float(beta_paper) ** 2


def kl_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise ``KL(p || q) = sum_y p(y) log(p(y)/q(y))`` for arrays of shape (..., S); inf where p is not << q."""
    p = check_array(p, "p")
    q = check_array(q, "q")
    if p.shape != q.shape:
        raise InputError(f"p and q must have one shape (..., S), got {p.shape} and {q.shape}")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - np.log(q)), 0.0)
    return terms.sum(axis=-1)


def moment_residual(P_bar: np.ndarray, Phi: np.ndarray, Psi: np.ndarray) -> np.ndarray:
    """``E_{P_bar}[phi] - psi`` for every row: P_bar (..., S), Phi (S, d) or (S,), Psi (..., d) -> (..., d)."""
    P_bar = check_array(P_bar, "P_bar", ndim=(2, 3))
    Phi = check_array(Phi, "Phi", ndim=(1, 2))
    if Phi.shape[0] != P_bar.shape[-1]:
        raise InputError(f"Phi must have one row per state ({P_bar.shape[-1]}), got shape {Phi.shape}")
    Phi2 = Phi.reshape(Phi.shape[0], -1)
    Psi = check_array(Psi, "Psi")
    if Psi.size != math.prod(P_bar.shape[:-1]) * Phi2.shape[1]:
        raise InputError(
            f"Psi must be (..., d) = {(*P_bar.shape[:-1], Phi2.shape[1])}, got shape {Psi.shape}"
        )
    Psi2 = Psi.reshape(*P_bar.shape[:-1], Phi2.shape[1])
    return P_bar @ Phi2 - Psi2


@dataclass(frozen=True)
class BasisTransform:
    """The affine map from the user's basis to the one the solver works with.

    ``Z = (Phi - mean) / std`` (constant columns zeroed), ``Z = U diag(sigma) V^T`` (thin SVD), and the solver basis is
    ``Phi_t = sqrt(S) U_r`` (orthonormal columns of unit mean square) for the ``r`` kept singular values. A multiplier
    ``lam_t`` on ``Phi_t`` is ``lam_std = W lam_t`` on ``Z`` with ``W = sqrt(S) V_r diag(1/sigma_r)`` (d x r), and
    ``lam = lam_std / std`` on ``Phi``.
    """

    mean: np.ndarray  # (d,)
    std: np.ndarray  # (d,), 1 for constant columns
    constant: np.ndarray  # (d,) bool
    W: np.ndarray  # (d, r)
    sigma: np.ndarray  # (r,)
    Phi_t: np.ndarray  # (S, r)

    @classmethod
    def fit(cls, Phi: np.ndarray) -> BasisTransform:
        S, d = Phi.shape
        mean = Phi.mean(axis=0)
        std = Phi.std(axis=0)
        mag = np.maximum(np.abs(Phi).max(axis=0), 1.0)
        constant = std <= _STD_RTOL * mag
        std = np.where(constant, 1.0, std)
        # standardise over states as the official calc_Pbar_mat, then orthonormalise: the span {1, phi} is kept
        Z = (Phi - mean) / std
        Z[:, constant] = 0.0
        U, sig, Vt = np.linalg.svd(Z, full_matrices=False)
        keep = sig > _SVD_RTOL * sig.max() if sig.size and sig.max() > 0 else np.zeros(sig.shape, bool)
        root = math.sqrt(S)
        W = Vt[keep].T * (root / sig[keep])
        return cls(mean=mean, std=std, constant=constant, W=W, sigma=sig[keep], Phi_t=U[:, keep] * root)

    @property
    def rank(self) -> int:
        return int(self.W.shape[1])

    def transform_psi(self, Psi: np.ndarray) -> np.ndarray:
        """psi (n, d) in the user's basis -> psi_t (n, r) for the solver basis (the same affine map as Phi)."""
        Zpsi = (Psi - self.mean) / self.std
        Zpsi[:, self.constant] = 0.0
        return Zpsi @ self.W

    def multipliers(self, lam_t: np.ndarray) -> np.ndarray:
        """lam_t (n, r) on the solver basis -> lam (n, d) with ``P_bar ~ P_hat exp(Phi lam)``."""
        lam = (lam_t @ self.W.T) / self.std
        lam[:, self.constant] = 0.0
        return lam

    def penalty_weights(self) -> np.ndarray:
        """``||lam_std||^2 = sum_k w_k lam_t[k]^2`` with ``w = S / sigma^2`` (W^T W is diagonal)."""
        return (self.Phi_t.shape[0] / self.sigma**2) if self.rank else np.zeros(0)


@dataclass(frozen=True)
class CorrectionInfo:
    """What the solver did: Newton iterations, the largest dual gradient left (solver coordinates), the largest
    constraint violation ``|E_{P_bar} phi - psi|`` relative to each column's range, the basis rank kept after the
    SVD, and the rows solved with the fallback regularised dual (when ``fallback_beta`` was used)."""

    iterations: int
    max_grad: float
    max_violation: float
    rank: int
    fallback_rows: np.ndarray


@dataclass(frozen=True)
class Correction:
    """What :func:`correct` returns: the corrected model ``P_bar`` (same shape as ``P_hat``), the multipliers ``lam``
    (shape (..., d); ``P_bar = P_hat * exp(Phi @ lam - Lambda)`` row-wise) and the solver's :class:`CorrectionInfo`."""

    P_bar: np.ndarray
    lam: np.ndarray
    info: CorrectionInfo


def _tilt(logp: np.ndarray, Phi_t: np.ndarray, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """q = p exp(Phi_t lam - Lambda): returns (q (n,S), Lambda (n,)). ``logp`` is -inf off the support."""
    # Eq. (MoCo solution): P_bar(y|x,a) = P_hat(y|x,a) exp(lam^T phi(y) - Lambda(lam)), Lambda = log E_P_hat e^{lam^T phi}
    logits = logp + lam @ Phi_t.T
    mx = logits.max(axis=1, keepdims=True)
    w = np.exp(logits - mx)
    z = w.sum(axis=1, keepdims=True)
    return w / z, (mx + np.log(z))[:, 0]


def _dual_parts(logp, Phi_t, psi_t, lam, pen):
    """Dual value (n,), gradient (n,r) and tilted distribution for rows; pen (r,) = 2/beta * w (0 when exact)."""
    q, Lam = _tilt(logp, Phi_t, lam)
    # Dual: D(lam) = Lambda(lam) - lam^T psi + (1/beta) sum_k w_k lam_k^2
    # Eq. (MoCo dual): lam* = argmin_lam Lambda(lam) - lam^T psi (+ ||lam||^2 / beta for estimated psi)
    f = Lam - np.einsum("nr,nr->n", lam, psi_t) + 0.5 * (lam**2 @ pen)
    # Gradient: E_q[phi] - psi + (2/beta) w * lam
    # Eq. (MoCo dual gradient): E_{P_bar_lam}[phi] - psi (+ 2 lam / beta)
    g = q @ Phi_t - psi_t + lam * pen
    return f, g, q


def _newton(logp, Phi_t, psi_t, pen, tol, max_iter):
    """Batched per-row Newton with backtracking on the dual. Returns (lam (n,r), iterations, max |grad|)."""
    n, r = psi_t.shape
    lam = np.zeros((n, r))
    if r == 0 or n == 0:
        return lam, 0, 0.0
    f, g, q = _dual_parts(logp, Phi_t, psi_t, lam, pen)
    active = np.abs(g).max(axis=1) > tol
    it = 0
    while active.any() and it < max_iter:
        it += 1
        idx = np.flatnonzero(active)
        qa, ga, fa, la = q[idx], g[idx], f[idx], lam[idx]
        mean = qa @ Phi_t
        # Hessian: Cov_q[phi] + (2/beta) diag(w)
        # Eq. (MoCo dual Hessian): Cov_{P_bar_lam}[phi] (+ 2 I / beta)
        H = np.einsum("ns,sk,sl->nkl", qa, Phi_t, Phi_t) - mean[:, :, None] * mean[:, None, :]
        H[:, np.arange(r), np.arange(r)] += pen
        ev, Q = np.linalg.eigh(H)
        cut = 1e-14 * (1.0 + np.abs(ev).max(axis=1, keepdims=True))
        inv = np.where(ev > cut, 1.0 / np.where(ev > cut, ev, 1.0), 0.0)
        # Newton step: -H^+ g (pseudo-inverse: directions of zero variance on the support cannot move)
        step = -np.einsum("nkl,nl,nml,nm->nk", Q, inv, Q, ga)
        slope = np.einsum("nk,nk->n", ga, step)
        t = np.ones(idx.size)
        pending = np.ones(idx.size, bool)
        new_l, new_f, new_g, new_q = la.copy(), fa.copy(), ga.copy(), qa.copy()
        for _ in range(60):
            p = np.flatnonzero(pending)
            if p.size == 0:
                break
            cand = la[p] + t[p, None] * step[p]
            fc, gc, qc = _dual_parts(logp[idx[p]], Phi_t, psi_t[idx[p]], cand, pen)
            armijo = fc <= fa[p] + 1e-4 * t[p] * slope[p]
            # near the optimum the decrease drowns in round-off: accept a step that does not raise D and
            # shrinks the gradient
            flat = (fc <= fa[p] + 1e-13 * (1.0 + np.abs(fa[p]))) & (
                np.abs(gc).max(axis=1) < np.abs(ga[p]).max(axis=1)
            )
            ok = (armijo | flat) & np.isfinite(fc)
            acc = p[ok]
            new_l[acc], new_f[acc], new_g[acc], new_q[acc] = cand[ok], fc[ok], gc[ok], qc[ok]
            pending[acc] = False
            t[p[~ok]] *= 0.5
        lam[idx], f[idx], g[idx], q[idx] = new_l, new_f, new_g, new_q
        moved = ~pending & (np.abs(t[:, None] * step).max(axis=1) > 1e-15 * (1.0 + np.abs(la).max(axis=1)))
        done = (np.abs(new_g).max(axis=1) <= tol) | ~moved | (np.abs(new_l).max(axis=1) > _MAX_LAM)
        active[idx[done]] = False
    return lam, it, float(np.abs(g).max()) if g.size else 0.0


def _as_rows(P_hat, Phi, Psi):
    """Validate and flatten: returns (P (n,S), Phi (S,d), Psi (n,d), lead shape, d_was_vector)."""
    P = np.asarray(P_hat, dtype=np.float64)
    if P.ndim < 1 or P.shape[-1] == 0:
        raise InputError(f"P_hat must have shape (..., S) with S >= 1 next states, got shape {P.shape}")
    S = P.shape[-1]
    if not np.isfinite(P).all():
        raise InputError("P_hat contains NaN or inf; expected rows of probabilities")
    if (P < -1e-12).any():
        raise InputError(f"P_hat has negative entries (min {P.min():.3g}); expected rows of probabilities")
    sums = P.sum(axis=-1)
    if np.abs(sums - 1.0).max(initial=0.0) > 1e-6:
        bad = np.unravel_index(np.abs(sums - 1.0).argmax(), sums.shape)
        raise InputError(
            f"every row of P_hat must sum to 1 (a distribution over the {S} next states); row "
            f"{tuple(int(i) for i in bad)} sums to {sums[bad]:.6g}. Normalise the model first."
        )
    P = np.clip(P, 0.0, None)
    Phi_a = np.asarray(Phi, dtype=np.float64)
    vec = Phi_a.ndim == 1
    if vec:
        Phi_a = Phi_a[:, None]
    if Phi_a.ndim != 2 or Phi_a.shape[0] != S:
        raise InputError(
            f"Phi must have shape (S, d) or (S,) with S = {S} (the last axis of P_hat), "
            f"got shape {np.shape(Phi)}"
        )
    if not np.isfinite(Phi_a).all():
        raise InputError("Phi (the basis) contains NaN or inf; every basis function must be finite")
    d = Phi_a.shape[1]
    lead = P.shape[:-1]
    Psi_a = np.asarray(Psi, dtype=np.float64)
    want = (*lead, d)
    if Psi_a.shape != want and not (vec and Psi_a.shape == lead):
        raise InputError(
            f"Psi must have shape {want} (one expectation of each of the d = {d} basis functions "
            f"per row of P_hat), got shape {Psi_a.shape}"
        )
    if not np.isfinite(Psi_a).all():
        raise InputError("Psi (the queried expectations) contains NaN or inf")
    n = int(np.prod(lead)) if lead else 1
    return P.reshape(n, S), Phi_a, Psi_a.reshape(n, d), lead, vec


def _check_beta(beta, name):
    if beta is None:
        return math.inf
    if isinstance(beta, bool) or not isinstance(beta, int | float | np.floating) or not beta >= 0:
        raise InputError(f"{name} must be None (exact constraints) or a number >= 0, got {beta!r}")
    return float(beta)


def _feasible_lp(p: np.ndarray, Phi: np.ndarray, psi: np.ndarray) -> bool:
    """Is there a distribution q on supp(p) with E_q[phi] = psi? (one LP, used only to explain a failure)."""
    supp = np.flatnonzero(p > 0)
    A = np.vstack([Phi[supp].T, np.ones((1, supp.size))])
    b = np.concatenate([psi, [1.0]])
    scale = np.maximum(np.abs(A).max(axis=1), 1.0)
    res = linprog(
        np.zeros(supp.size), A_eq=A / scale[:, None], b_eq=b / scale, bounds=(0, None), method="highs"
    )
    return res.status == 0


def correct(
    P_hat: np.ndarray,
    Phi: np.ndarray,
    Psi: np.ndarray,
    beta: float | None = None,
    *,
    fallback_beta: float | None = None,
    tol: float = 1e-11,
    max_iter: int = 100,
) -> Correction:
    """MoCo: the I-projection of every row of ``P_hat`` onto ``{q : E_q[phi] = psi}`` (MaxEnt MoCo: primal above, dual solved).

    Args:
        P_hat: the approximate model, shape (..., S), every row a distribution (e.g. (S, A, S) or (S, S)).
        Phi: the basis, shape (S, d) (or (S,) for d = 1): ``phi_j(y)`` for every next state y.
        Psi: the queried expectations ``(P phi_j)(row)``, shape (..., d) matching the rows of ``P_hat``.
        beta: ``None`` or ``inf`` for the exact constraints; a finite ``beta >= 0`` solves the regularised dual
            ``Lambda(lam) - lam^T psi + ||lam||^2 / beta`` (for estimated ``psi``), with ``lam`` the multipliers of
            the standardised basis (each column centred and scaled to unit std over states, as in the authors'
            code). ``beta -> inf`` is the exact projection, ``beta = 0`` returns ``P_hat``.
        fallback_beta: with exact constraints, rows whose constraints cannot be met on the support of ``P_hat``
            are an error unless this is given; then those rows (only) are solved with the regularised dual.
        tol: the largest dual gradient accepted (in the orthonormal solver coordinates).
        max_iter: the most Newton iterations.

    Returns:
        A :class:`Correction`: ``.P_bar`` the corrected model, same shape as ``P_hat`` (same support, rows sum to
        1), ``.lam`` the multipliers, shape (..., d), with ``P_bar = P_hat * exp(Phi @ lam - Lambda)`` row-wise, and
        ``.info`` what the solver did.

    Raises:
        ValueError: malformed inputs, or (exact constraints, no ``fallback_beta``) constraints that no distribution
            on the support of ``P_hat`` satisfies.
    """
    P, Phi2, Psi2, lead, vec = _as_rows(P_hat, Phi, Psi)
    beta_v = _check_beta(beta, "beta")
    fb = None if fallback_beta is None else _check_beta(fallback_beta, "fallback_beta")
    if not (isinstance(tol, int | float) and tol > 0):
        raise InputError(f"tol must be a positive number, got {tol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise InputError(f"max_iter must be a positive int, got {max_iter!r}")
    n, S = P.shape
    d = Phi2.shape[1]
    basis = BasisTransform.fit(Phi2)
    with np.errstate(divide="ignore"):
        logp = np.log(P)
    lam_t = np.zeros((n, basis.rank))
    iters, gmax = 0, 0.0
    fallback_rows = np.zeros(0, dtype=np.int64)
    if beta_v > 0 and basis.rank:
        psi_t = basis.transform_psi(Psi2)
        pen = (2.0 / beta_v) * basis.penalty_weights() if math.isfinite(beta_v) else np.zeros(basis.rank)
        lam_t, iters, gmax = _newton(logp, basis.Phi_t, psi_t, pen, tol, max_iter)
    q, _ = _tilt(logp, basis.Phi_t, lam_t)
    untouched = ~lam_t.any(axis=1)
    q[untouched] = P[untouched]  # lam = 0 is P_hat itself, without the round-off of exp(log p)
    rng = np.maximum(Phi2.max(axis=0) - Phi2.min(axis=0), 1e-300)
    viol = np.abs(q @ Phi2 - Psi2) / np.maximum(rng, np.abs(Phi2).max(axis=0) * 1e-12 + 1e-300)
    viol = np.where(np.isfinite(viol), viol, np.inf)
    if math.isinf(beta_v):
        bad = np.flatnonzero(viol.max(axis=1, initial=0.0) > 1e-7)
        if bad.size:
            if fb is None:
                row = int(bad[0])
                feas = _feasible_lp(P[row], Phi2, Psi2[row])
                where = np.unravel_index(row, lead) if lead else ()
                why = (
                    "no distribution supported where P_hat > 0 has these expectations (psi lies outside the convex "
                    "hull of phi over the support)"
                    if not feas
                    else "the solver did not converge (psi is at the edge of what the support allows)"
                )
                raise InputError(
                    f"MoCo constraints cannot be met for {bad.size} of {n} rows (first: row "
                    f"{tuple(int(i) for i in where)}, relative violation {viol[row].max():.3g}): {why}. "
                    "Pass beta=<finite> for the regularised dual (estimated psi), or fallback_beta=<finite> to "
                    "regularise only the failing rows."
                )
            if fb > 0:
                psi_t = basis.transform_psi(Psi2[bad])
                pen = (2.0 / fb) * basis.penalty_weights()
                lam_b, it_b, g_b = _newton(logp[bad], basis.Phi_t, psi_t, pen, tol, max_iter)
                iters = max(iters, it_b)
                lam_t[bad] = lam_b
            else:
                lam_t[bad] = 0.0
            q[bad], _ = _tilt(logp[bad], basis.Phi_t, lam_t[bad])
            viol[bad] = np.abs(q[bad] @ Phi2 - Psi2[bad]) / rng
            fallback_rows = bad
    lam = basis.multipliers(lam_t)
    P_bar = q.reshape(*lead, S) if lead else q[0]
    lam_out = lam.reshape(*lead, d) if lead else lam[0]
    if vec:
        lam_out = lam_out[..., 0]
    info = CorrectionInfo(
        iterations=iters,
        max_grad=gmax,
        max_violation=float(viol.max(initial=0.0)),
        rank=basis.rank,
        fallback_rows=fallback_rows,
    )
    return Correction(P_bar, lam_out, info)


def correct_bfgs(
    P_hat: np.ndarray,
    Phi: np.ndarray,
    Psi: np.ndarray,
    beta: float | None = None,
    *,
    gtol: float = 1e-10,
    max_iter: int = 2000,
) -> Correction:
    """The reference approach, for comparison: standardise the basis (``(phi - mean) / max(std, 1e-4)``) and minimise
    the mean over rows of the dual with one joint BFGS (scipy) on all ``n * d`` multipliers.

    Same arguments and return (a :class:`Correction`) as :func:`correct` (no infeasibility handling). It stalls on nearly collinear bases,
    which is why :func:`correct` orthonormalises first.
    """
    P, Phi2, Psi2, lead, vec = _as_rows(P_hat, Phi, Psi)
    beta_v = _check_beta(beta, "beta")
    n, S = P.shape
    d = Phi2.shape[1]
    mean, std = Phi2.mean(axis=0), np.maximum(Phi2.std(axis=0), 1e-4)
    Z, Zpsi = (Phi2 - mean) / std, (Psi2 - mean) / std
    with np.errstate(divide="ignore"):
        logp = np.log(P)
    c = 0.0 if math.isinf(beta_v) else 1.0 / max(beta_v, 1e-300)

    def fun(x):
        lam = x.reshape(n, d)
        q, Lam = _tilt(logp, Z, lam)
        f = (Lam - np.einsum("nd,nd->n", lam, Zpsi)).mean() + c * (lam**2).sum() / n
        g = (q @ Z - Zpsi + 2 * c * lam) / n
        return f, g.ravel()

    nit = 0
    if beta_v == 0:
        lam = np.zeros((n, d))
    else:
        res = minimize(
            fun, np.zeros(n * d), jac=True, method="BFGS", options={"gtol": gtol / n, "maxiter": max_iter}
        )
        lam, nit = res.x.reshape(n, d), int(res.nit)
    q, _ = _tilt(logp, Z, lam)
    grad = np.abs(q @ Z - Zpsi).max(initial=0.0)
    rng = np.maximum(Phi2.max(axis=0) - Phi2.min(axis=0), 1e-300)
    viol = float((np.abs(q @ Phi2 - Psi2) / rng).max(initial=0.0))
    lam = lam / std
    P_bar = q.reshape(*lead, S) if lead else q[0]
    lam_out = lam.reshape(*lead, d) if lead else lam[0]
    info = CorrectionInfo(
        iterations=nit, max_grad=float(grad), max_violation=viol, rank=d, fallback_rows=np.zeros(0, np.int64)
    )
    return Correction(P_bar, lam_out[..., 0] if vec else lam_out, info)
