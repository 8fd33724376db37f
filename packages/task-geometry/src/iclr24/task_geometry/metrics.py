"""Geometry metrics of representations, as plain functions of (representations, conditions).

Notation: ``P`` conditions, condition means ``Z in R^{P x N}`` (one row per condition),
trials ``X in R^{n x N}`` with condition labels ``cond in {0..P-1}^n``, a balanced dichotomy ``y in {0,1}^P`` with
sides ``A = {p : y_p = 0}`` and ``B = {p : y_p = 1}``, ``|A| = |B| = P/2``.

    K       = Z Z^T,   H = I - 1 1^T / P                                                              Eq. (M1)
    CKA     = <H K_a H, H K_b H>_F / (||H K_a H||_F ||H K_b H||_F)                                     Eq. (M2)
    PS      = max_sigma mean_{a != a'} cos(v_a, v_a'),  v_a = z_{sigma(a)} - z_a,  sigma: A -> B bijection Eq. (M3)
    CCGP    = mean over splits (P/4 conditions of A and P/4 of B) of the test accuracy, on the trials of the
              held-out conditions, of a linear classifier trained on the trials of the chosen ones           Eq. (M4)
    SD      = mean over balanced dichotomies of held-out-trial linear decoding accuracy                    Eq. (M5)
    PR      = (tr HKH)^2 / tr((HKH)^2)                                                                  Eq. (M6)

Classifiers: ``"svc"`` is scikit-learn's ``LinearSVC`` (the authors' choice), fitted once per split;
``"ridge"`` is a least-squares classifier on +-1 labels with an unpenalised bias, which CCGP and SD fit for every
split at once from per-condition sufficient statistics (``X_c^T X_c``), the vectorised path.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

__all__ = [
    "CLASSIFIERS",
    "as_matrix",
    "condition_means",
    "kernel",
    "cka",
    "kernel_alignment",
    "balanced_dichotomies",
    "parallelism_score",
    "parallelism_score_naive",
    "ccgp",
    "ccgp_naive",
    "decodability",
    "shattering_dim",
    "participation_ratio",
]

CLASSIFIERS = ("svc", "ridge")
MAX_ENUMERATED = 10**6  # most dichotomies / CCGP splits / bijections enumerated or sampled in one call


def _seed(seed: object) -> int:
    return check_int(seed, "seed", minimum=0, maximum=2**63 - 1)


def _labels_matrix(name: str, D: object, P: int) -> np.ndarray:
    if hasattr(D, "detach"):
        D = D.detach().cpu().numpy()
    try:
        arr = np.atleast_2d(np.asarray(D, dtype=np.float64))
    except (TypeError, ValueError) as e:
        raise InputError(f"{name} must be 0/1 vectors of length P={P}, got {describe(D)}: {e}") from None
    if arr.ndim != 2 or arr.shape[1] != P or arr.shape[0] == 0:
        raise InputError(f"{name} must be (m, P={P}) 0/1 vectors, got shape {arr.shape}")
    return arr


def as_matrix(name: str, Z: object, ndim: int = 2) -> np.ndarray:
    """``Z`` (numpy or torch) as a finite float64 array of ``ndim`` dimensions, or a clear ``ValueError``."""
    if hasattr(Z, "detach"):
        Z = Z.detach().cpu().numpy()
    try:
        arr = np.asarray(Z, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as e:
        raise InputError(f"{name} must be a numeric array, got {type(Z).__name__}: {e}") from None
    if arr.ndim != ndim:
        raise InputError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    if arr.size == 0:
        raise InputError(f"{name} is empty (shape {arr.shape})")
    if not np.isfinite(arr).all():
        bad = int((~np.isfinite(arr)).sum())
        raise InputError(f"{name} contains {bad} NaN/inf values; representations must be finite")
    return arr


def _conditions(cond: object, n: int, n_conditions: int | None) -> tuple[np.ndarray, int]:
    if hasattr(cond, "detach"):
        cond = cond.detach().cpu().numpy()
    c = np.asarray(cond)
    if c.dtype == object or c.dtype.kind in "USVM":
        raise InputError(f"conditions must be integer labels 0..P-1, got dtype {c.dtype}")
    if c.ndim != 1 or c.shape[0] != n:
        raise InputError(f"conditions must be a 1-D array of length {n} (one per row), got shape {c.shape}")
    if not np.issubdtype(c.dtype, np.integer):
        if np.issubdtype(c.dtype, np.floating) and np.isfinite(c).all() and np.all(c == np.round(c)):
            c = c.astype(np.int64)
        else:
            raise InputError(f"conditions must be integer labels 0..P-1, got dtype {c.dtype}")
    if c.min() < 0:
        raise InputError(f"conditions must be labels 0..P-1, got a negative label {int(c.min())}")
    if n_conditions is not None:
        check_int(n_conditions, "n_conditions", minimum=1, maximum=n)
    if int(c.max()) >= n:
        raise InputError(
            f"conditions must be labels 0..P-1 with a row for every condition; label {int(c.max())} needs more "
            f"than the {n} rows given"
        )
    P = int(c.max()) + 1 if n_conditions is None else int(n_conditions)
    if c.max() >= P:
        raise InputError(f"conditions must be in 0..{P - 1}, got label {int(c.max())}")
    missing = np.setdiff1d(np.arange(P), c)
    if missing.size:
        raise InputError(
            f"condition labels do not cover every condition: {missing.size} of {P} have no rows "
            f"(missing {missing[:10].tolist()}{' ...' if missing.size > 10 else ''})"
        )
    return c.astype(np.int64), P


def condition_means(Z: object, cond: object, n_conditions: int | None = None) -> np.ndarray:
    """Mean row of ``Z (n, N)`` per condition: ``(P, N)``. Every condition ``0..P-1`` must have a row."""
    X = as_matrix("representations", Z)
    c, P = _conditions(cond, X.shape[0], n_conditions)
    counts = np.bincount(c, minlength=P).astype(np.float64)
    out = np.zeros((P, X.shape[1]))
    np.add.at(out, c, X)
    return out / counts[:, None]


def kernel(Z: object) -> np.ndarray:
    """Eq. (M1): the linear kernel ``K = Z Z^T`` of condition means ``Z (P, N)``."""
    Z = as_matrix("condition means", Z)
    return Z @ Z.T


def _centre(K: np.ndarray) -> np.ndarray:
    # Eq. (M1): H K H with H = I - 1 1^T / P
    return K - K.mean(0, keepdims=True) - K.mean(1, keepdims=True) + K.mean()


def cka(K_a: object, K_b: object) -> float:
    """Eq. (M2): centred kernel alignment of two ``(P, P)`` kernels, in [-1, 1] (in [0, 1] for PSD kernels)."""
    A = as_matrix("K_a", K_a)
    B = as_matrix("K_b", K_b)
    if A.shape[0] != A.shape[1] or A.shape != B.shape:
        raise InputError(f"kernels must be square and of the same shape, got {A.shape} and {B.shape}")
    A, B = _centre(A), _centre(B)
    na, nb = np.linalg.norm(A), np.linalg.norm(B)
    scale = max(np.abs(A).max(), np.abs(B).max(), 1e-300)
    if na <= 1e-12 * scale * A.shape[0] or nb <= 1e-12 * scale * A.shape[0]:
        raise InputError(
            "a kernel is constant after centring (all conditions share one representation); CKA is undefined"
        )
    # Eq. (M2): <HAH, HBH>_F / (||HAH|| ||HBH||)
    return float(np.sum(A * B) / (na * nb))


def kernel_alignment(Z_a: object, Z_b: object) -> float:
    """CKA of the linear kernels of two sets of condition means ``(P, N_a)`` and ``(P, N_b)``."""
    return cka(kernel(Z_a), kernel(Z_b))


def _dichotomy(y: object, P: int) -> tuple[np.ndarray, np.ndarray]:
    arr = np.asarray(y.detach().cpu().numpy() if hasattr(y, "detach") else y)
    if arr.shape != (P,):
        raise InputError(f"a dichotomy must be a 0/1 vector of length P={P}, got shape {arr.shape}")
    if arr.dtype == object or arr.dtype.kind in "USVM" or not np.isin(arr, (0, 1)).all():
        raise InputError(f"a dichotomy must hold only 0 and 1, got values {np.unique(arr)[:5].tolist()}")
    A, B = np.flatnonzero(arr == 0), np.flatnonzero(arr == 1)
    if A.size != B.size:
        raise InputError(
            f"the dichotomy must be balanced (P/2 conditions per side), got {A.size} vs {B.size}"
        )
    if A.size < 2:
        raise InputError(f"PS and CCGP need at least 2 conditions per side (P >= 4), got P={P}")
    return A, B


def balanced_dichotomies(P: int, max_dichotomies: int | None = None, seed: int = 0) -> np.ndarray:
    """Every balanced dichotomy of ``P`` conditions once (condition 0 always on side 0): ``(C(P-1, P/2), P)``.
    With ``max_dichotomies`` a seeded random subset of that many (for large ``P``)."""
    if isinstance(P, bool) or not isinstance(P, int | np.integer) or P < 2 or P % 2 or P > 2**16:
        raise InputError(f"P must be an even int >= 2 (at most 2**16), got {P!r}")
    P = int(P)
    _seed(seed)
    if max_dichotomies is not None:
        check_int(max_dichotomies, "max_dichotomies", minimum=1, maximum=MAX_ENUMERATED)
    total = math.comb(P - 1, P // 2)
    if max_dichotomies is None and total > MAX_ENUMERATED:
        raise InputError(
            f"P={P} has {total:.3g} balanced dichotomies, too many to enumerate (at most {MAX_ENUMERATED}); "
            "give max_dichotomies for a seeded sample"
        )
    if max_dichotomies is None or max_dichotomies >= total:
        rows = []
        for side in itertools.combinations(range(1, P), P // 2):
            y = np.zeros(P)
            y[list(side)] = 1
            rows.append(y)
        return np.stack(rows)
    if max_dichotomies < 1:
        raise InputError(f"max_dichotomies must be >= 1, got {max_dichotomies}")
    g = np.random.default_rng(seed)
    seen: dict[bytes, np.ndarray] = {}
    while len(seen) < max_dichotomies:
        y = np.zeros(P)
        y[1 + g.permutation(P - 1)[: P // 2]] = 1
        seen.setdefault(y.tobytes(), y)
    return np.stack(list(seen.values()))


def _pairings(h: int, max_pairings: int, seed: int) -> np.ndarray:
    if math.factorial(h) <= max_pairings:
        return np.array(list(itertools.permutations(range(h))), dtype=np.int64)
    g = np.random.default_rng(seed)
    perms = np.argsort(g.random((max_pairings, h)), axis=1)
    perms[0] = np.arange(h)
    return perms


def parallelism_score(
    means: object, dichotomy: object, *, max_pairings: int = 40320, seed: int = 0, return_all: bool = False
):
    """Eq. (M3): the parallelism score of condition means ``(P, N)`` for a balanced dichotomy.

    Vectorised over all ``(P/2)!`` bijections through the Gram matrix of the means, so the cost does not grow with
    ``N``. Above ``max_pairings`` bijections (P > 16) a seeded random sample of that many is used (a lower bound).
    With ``return_all`` the score of every bijection is returned too.
    """
    Z = as_matrix("condition means", means)
    A, B = _dichotomy(dichotomy, Z.shape[0])
    h = A.size
    max_pairings = check_int(max_pairings, "max_pairings", minimum=1, maximum=MAX_ENUMERATED)
    n_perm = max_pairings if h > 12 else min(math.factorial(h), max_pairings)
    if n_perm * h * h > 100 * MAX_ENUMERATED:
        raise InputError(
            f"{n_perm} bijections of {h} conditions per side need more than {100 * MAX_ENUMERATED} cosines; "
            "lower max_pairings"
        )
    perms = _pairings(h, max_pairings, _seed(seed))
    G = Z @ Z.T
    Bs = B[perms]  # (n_perm, h): sigma(a) for each a in A
    a_idx = A[None, :, None]
    a2_idx = A[None, None, :]
    s_idx = Bs[:, :, None]
    s2_idx = Bs[:, None, :]
    # <v_a, v_a'> = G[s a, s a'] - G[s a, a'] - G[a, s a'] + G[a, a'],  v_a = z_{sigma(a)} - z_a
    dots = G[s_idx, s2_idx] - G[s_idx, a2_idx] - G[a_idx, s2_idx] + G[a_idx, a2_idx]
    norms = np.sqrt(np.clip(np.diagonal(dots, axis1=1, axis2=2), 0, None))
    scale = np.sqrt(max(np.abs(np.diag(G)).max(), 1e-300))
    denom = np.maximum(norms[:, :, None] * norms[:, None, :], (1e-12 * scale) ** 2)
    cos = dots / denom
    # Eq. (M3): PS_sigma = mean over a != a' of cos(v_a, v_a'); PS = max over sigma
    ps_all = (cos.sum((1, 2)) - np.trace(cos, axis1=1, axis2=2)) / (h * (h - 1))
    best = float(ps_all.max())
    return (best, ps_all) if return_all else best


def parallelism_score_naive(means: object, dichotomy: object) -> float:
    """Eq. (M3) by a plain loop over bijections and pairs (reference and benchmark baseline; exact, any P)."""
    Z = as_matrix("condition means", means)
    A, B = _dichotomy(dichotomy, Z.shape[0])
    h = A.size
    best = -np.inf
    for perm in itertools.permutations(range(h)):
        V = [Z[B[perm[i]]] - Z[A[i]] for i in range(h)]
        total = 0.0
        for i in range(h):
            for j in range(h):
                if i != j:
                    ni, nj = np.linalg.norm(V[i]), np.linalg.norm(V[j])
                    total += float(V[i] @ V[j] / (ni * nj)) if ni > 0 and nj > 0 else 0.0
        best = max(best, total / (h * (h - 1)))
    return float(best)


def _trials(Z: object, cond: object, n_conditions: int | None, min_per_condition: int):
    X = as_matrix("representations", Z)
    c, P = _conditions(cond, X.shape[0], n_conditions)
    counts = np.bincount(c, minlength=P)
    if counts.min() < min_per_condition:
        raise InputError(
            f"need at least {min_per_condition} trials per condition, got {int(counts.min())} for condition "
            f"{int(counts.argmin())}; draw more noisy trials"
        )
    return X, c, P


def _check_classifier(classifier: str) -> str:
    if not isinstance(classifier, str) or classifier not in CLASSIFIERS:
        raise InputError(f"classifier must be one of {CLASSIFIERS}, got {classifier!r}")
    return classifier


def _check_fit(C: float, ridge: float, seed: int) -> None:
    check_float(C, "C", minimum=0, maximum=1e12, open_min=True)
    check_float(ridge, "ridge", minimum=0, maximum=1e12)
    _seed(seed)


def _svc(C: float, seed: int):
    from sklearn.svm import LinearSVC

    return LinearSVC(C=C, dual="auto", max_iter=5000, random_state=seed)


def _ccgp_splits(
    A: np.ndarray, B: np.ndarray, max_splits: int | None, seed: int, n_train_per_side: int | None = None
) -> list[tuple[np.ndarray, ...]]:
    q = A.size // 2 if n_train_per_side is None else n_train_per_side
    if isinstance(q, bool) or not isinstance(q, int | np.integer) or not 1 <= q < A.size:
        raise InputError(f"n_train_per_side must be an int in [1, P/2 - 1] = [1, {A.size - 1}], got {q!r}")
    if max_splits is not None:
        check_int(max_splits, "max_splits", minimum=1, maximum=MAX_ENUMERATED)
    total = math.comb(A.size, q) ** 2
    if max_splits is None and total > MAX_ENUMERATED:
        raise InputError(
            f"{total:.3g} CCGP splits are too many to enumerate (at most {MAX_ENUMERATED}); give max_splits"
        )
    if max_splits is None or total <= max_splits:
        return [
            (np.array(a), np.array(b))
            for a in itertools.combinations(A, q)
            for b in itertools.combinations(B, q)
        ]
    if max_splits < 1:
        raise InputError(f"max_splits must be >= 1, got {max_splits}")
    # a seeded sample of distinct splits, drawn directly (enumerating C(P/2, P/4)^2 splits is out of reach at P = 32)
    g = np.random.default_rng(seed)
    seen: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
    while len(seen) < max_splits:
        a = np.sort(g.choice(A, size=q, replace=False))
        b = np.sort(g.choice(B, size=q, replace=False))
        seen.setdefault((*a.tolist(), -1, *b.tolist()), (a, b))
    return list(seen.values())


def _ridge_solve(XtX: np.ndarray, Xty: np.ndarray, lam: float | np.ndarray) -> np.ndarray:
    """``w = (X^T X + lam I')^{-1} X^T y`` for one or a stack of problems; ``I'`` leaves the bias unpenalised."""
    eye = np.eye(XtX.shape[-1])
    eye[-1, -1] = 0.0
    reg = np.asarray(lam, dtype=np.float64)[..., None, None] * eye
    return np.linalg.solve(XtX + reg, Xty[..., None])[..., 0]


def _ccgp_inputs(Z, cond, dichotomy, classifier, n_conditions, max_splits, n_train_per_side, C, ridge, seed):
    """The checked inputs of both CCGP estimators: ``(classifier, X, c, P, y_cond, splits)``, where ``y_cond``
    labels each condition by its side of the dichotomy (1 for side B) and ``splits`` are the training splits."""
    classifier = _check_classifier(classifier)
    _check_fit(C, ridge, seed)
    X, c, P = _trials(Z, cond, n_conditions, 2)
    A, B = _dichotomy(dichotomy, P)
    splits = _ccgp_splits(A, B, max_splits, seed, n_train_per_side)
    y_cond = np.zeros(P)
    y_cond[B] = 1
    return classifier, X, c, P, y_cond, splits


def ccgp(
    Z: object,
    cond: object,
    dichotomy: object,
    *,
    classifier: str = "svc",
    n_conditions: int | None = None,
    max_splits: int | None = None,
    n_train_per_side: int | None = None,
    C: float = 1.0,
    ridge: float = 1e-3,
    seed: int = 0,
) -> float:
    """Eq. (M4): cross-condition generalisation performance of a dichotomy, from noisy trials ``Z (n, N)``.

    Every choice of ``P/4`` conditions of each side trains a linear classifier on their trials; it is tested on
    the trials of the other ``P/2`` conditions (36 splits for P = 8; a seeded sample of ``max_splits`` if given).
    ``classifier="ridge"`` fits all splits at once (``ridge`` is the penalty per trial); ``"svc"`` loops.
    ``n_train_per_side`` overrides the ``P/4`` training conditions per side (the authors' ``compute_ccgp``);
    ``P/2 - 1`` is Bernardi et al.'s leave-one-condition-out-per-side variant, under which any factorised
    geometry scores 1 (with ``P/4`` some splits confound the variable with another one).
    """
    classifier, X, c, P, y_cond, splits = _ccgp_inputs(
        Z, cond, dichotomy, classifier, n_conditions, max_splits, n_train_per_side, C, ridge, seed
    )
    # Eq. (M4): CCGP = mean over splits of the held-out-condition accuracy of a classifier fit on the chosen ones
    if classifier == "svc":
        return _ccgp_loop(X, c, P, y_cond, splits, "svc", C, ridge, seed)
    Xa = np.concatenate([X, np.ones((X.shape[0], 1))], axis=1)
    counts = np.bincount(c, minlength=P).astype(np.float64)
    onehot = np.zeros((P, X.shape[0]))
    onehot[c, np.arange(X.shape[0])] = 1.0
    S = np.stack([Xa[c == p].T @ Xa[c == p] for p in range(P)])  # per-condition X_c^T X_c
    s = onehot @ Xa  # per-condition sums
    sign = 2 * y_cond - 1
    accs = []
    for start in range(0, len(splits), 256):
        chunk = splits[start : start + 256]
        train = np.zeros((len(chunk), P))
        for i, (a, b) in enumerate(chunk):
            train[i, a] = 1.0
            train[i, b] = 1.0
        XtX = (train @ S.reshape(P, -1)).reshape(len(chunk), *S.shape[1:])
        Xty = (train * sign[None, :]) @ s
        W = _ridge_solve(XtX, Xty, ridge * (train @ counts))
        correct = ((Xa @ W.T) > 0) == (y_cond[c][:, None] > 0.5)  # (n, splits)
        per_cond = onehot @ correct  # (P, splits)
        test = 1.0 - train
        accs.append((per_cond * test.T).sum(0) / (test @ counts))
    return float(np.concatenate(accs).mean())


def _ccgp_loop(X, c, P, y_cond, splits, classifier, C, ridge, seed) -> float:
    accs = []
    for a, b in splits:
        tr = np.isin(c, np.concatenate([a, b]))
        te = ~tr
        ytr, yte = y_cond[c[tr]], y_cond[c[te]]
        if classifier == "svc":
            pred = _svc(C, seed).fit(X[tr], ytr).predict(X[te])
        else:
            Xa = np.concatenate([X[tr], np.ones((tr.sum(), 1))], axis=1)
            w = _ridge_solve(Xa.T @ Xa, Xa.T @ (2 * ytr - 1), ridge * tr.sum())
            pred = (np.concatenate([X[te], np.ones((te.sum(), 1))], axis=1) @ w > 0).astype(float)
        accs.append(float((pred == yte).mean()))
    return float(np.mean(accs))


def ccgp_naive(
    Z: object,
    cond: object,
    dichotomy: object,
    *,
    classifier: str = "ridge",
    n_conditions: int | None = None,
    max_splits: int | None = None,
    n_train_per_side: int | None = None,
    C: float = 1.0,
    ridge: float = 1e-3,
    seed: int = 0,
) -> float:
    """Eq. (M4) by a plain loop that refits each split from its raw trials (reference and benchmark baseline)."""
    classifier, X, c, P, y_cond, splits = _ccgp_inputs(
        Z, cond, dichotomy, classifier, n_conditions, max_splits, n_train_per_side, C, ridge, seed
    )
    return _ccgp_loop(X, c, P, y_cond, splits, classifier, C, ridge, seed)


def decodability(
    Z: object,
    cond: object,
    dichotomies: object,
    *,
    classifier: str = "svc",
    n_conditions: int | None = None,
    test_fraction: float = 0.5,
    rep_noise: float = 0.0,
    C: float = 1.0,
    ridge: float = 1e-3,
    seed: int = 0,
) -> np.ndarray:
    """Held-out linear decoding accuracy of each dichotomy ``(m, P)`` from trials ``Z (n, N)``: ``(m,)``.

    Each condition's trials are split at random into train and test (``test_fraction``); ``rep_noise`` adds
    isotropic Gaussian noise of that std to the representations first (the authors use 0.2).
    """
    classifier = _check_classifier(classifier)
    _check_fit(C, ridge, seed)
    X, c, P = _trials(Z, cond, n_conditions, 2)
    check_float(test_fraction, "test_fraction", minimum=0, maximum=1, open_min=True, open_max=True)
    D = _labels_matrix("dichotomies", dichotomies, P)
    for y in D:
        _dichotomy(y, P)
    g = np.random.default_rng(seed)
    check_float(rep_noise, "rep_noise", minimum=0, maximum=1e12)
    if rep_noise > 0:
        X = X + rep_noise * g.standard_normal(X.shape)
    test = np.zeros(X.shape[0], dtype=bool)
    for p in range(P):
        idx = np.flatnonzero(c == p)
        n_test = min(max(1, int(round(test_fraction * idx.size))), idx.size - 1)
        test[g.choice(idx, size=n_test, replace=False)] = True
    Ytr, Yte = D[:, c[~test]].T, D[:, c[test]].T  # (n, m)
    if classifier == "ridge":
        Xa = np.concatenate([X, np.ones((X.shape[0], 1))], axis=1)
        W = _ridge_solve_multi(Xa[~test], 2 * Ytr - 1, ridge * (~test).sum())
        return ((Xa[test] @ W > 0) == (Yte > 0.5)).mean(0)
    return np.array(
        [
            float((_svc(C, seed).fit(X[~test], Ytr[:, j]).predict(X[test]) == Yte[:, j]).mean())
            for j in range(len(D))
        ]
    )


def _ridge_solve_multi(Xa: np.ndarray, T: np.ndarray, lam: float) -> np.ndarray:
    d = Xa.shape[1]
    reg = lam * np.eye(d)
    reg[-1, -1] = 0.0
    return np.linalg.solve(Xa.T @ Xa + reg, Xa.T @ T)


def shattering_dim(
    Z: object,
    cond: object,
    *,
    exclude: object | None = None,
    max_dichotomies: int | None = None,
    classifier: str = "svc",
    n_conditions: int | None = None,
    test_fraction: float = 0.5,
    rep_noise: float = 0.0,
    seed: int = 0,
) -> float:
    """Eq. (M5): mean held-out decoding accuracy over all balanced dichotomies (35 for P = 8).

    ``exclude`` (m, P) drops those dichotomies (and their complements), e.g. the trained targets, which gives the
    decodability of *untrained* dichotomies.
    """
    classifier = _check_classifier(classifier)
    X, c, P = _trials(Z, cond, n_conditions, 2)
    # Eq. (M5): SD = mean over the balanced dichotomies of their held-out-trial decoding accuracy
    D = balanced_dichotomies(P, max_dichotomies, seed)
    if exclude is not None:
        E = _labels_matrix("exclude", exclude, P)
        E = np.where(E[:, :1] == 1, 1 - E, E)  # condition 0 on side 0, as in balanced_dichotomies
        keep = ~(D[:, None, :] == E[None, :, :]).all(-1).any(1)
        D = D[keep]
        if len(D) == 0:
            raise InputError("exclude removes every balanced dichotomy; nothing is left to decode")
    return float(
        decodability(
            X,
            c,
            D,
            classifier=classifier,
            n_conditions=P,
            test_fraction=test_fraction,
            rep_noise=rep_noise,
            seed=seed,
        ).mean()
    )


def participation_ratio(means: object) -> float:
    """Eq. (M6): participation ratio of the centred condition means ``(P, N)``, between 1 and ``P - 1``."""
    K = _centre(kernel(means))
    tr2 = float(np.sum(K * K))
    if tr2 <= 0:
        raise InputError("all conditions share one representation; the participation ratio is undefined")
    # Eq. (M6): PR = (tr K)^2 / tr(K^2)
    return float(np.trace(K) ** 2 / tr2)
