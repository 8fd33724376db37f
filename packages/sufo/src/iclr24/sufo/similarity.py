"""U: unsupervised similarity of feature spaces (paper Sec. 3.2, official ``compute_RSA``).

Notation: X, Y are (N, d) features of the same N stimuli from two models (or layers, or checkpoints).
"""

from __future__ import annotations

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array

__all__ = ["rdm", "rsa", "layerwise_rsa", "linear_cka", "layerwise_cka", "constant_features"]


def _check_pair(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = check_array(x, "x", allow_empty=True, finite=False)
    y = check_array(y, "y", allow_empty=True, finite=False)
    if x.ndim != 2 or y.ndim != 2:
        raise InputError(f"expected two (N, d) feature arrays, got shapes {x.shape} and {y.shape}")
    if len(x) != len(y):
        raise InputError(f"both feature arrays must describe the same N stimuli, got {len(x)} and {len(y)}")
    if len(x) < 3:
        raise InputError(f"need at least 3 stimuli, got {len(x)}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise InputError("features contain NaN or inf")
    return x, y


def rdm(x: np.ndarray, metric: str = "euclidean") -> np.ndarray:
    """Representational dissimilarity matrix as its upper triangle (the order of ``np.triu_indices(N, 1)``, as
    ``scipy.spatial.distance.pdist``): length N(N-1)/2. ``metric``: euclidean (the official default) or cosine
    (cosine *distance*, used on both spaces by :func:`rsa`; the official ``calculate_geometry`` takes cosine
    similarity on the fine-tuned side and Euclidean distance on the other, see the README's differences)."""
    from scipy.spatial.distance import pdist

    x = check_array(x, "x", ndim=2, min_rows=2)
    if metric not in ("euclidean", "cosine"):
        raise InputError(f"metric must be 'euclidean' or 'cosine', got {metric!r}")
    # Eq. (RDM), Sec. 3.2: RDM(X) = (||x_i - x_j||_2)_{i<j}, the upper triangle in np.triu_indices(N, 1) order
    return pdist(x, metric=metric)


def rsa(x: np.ndarray, y: np.ndarray, metric: str = "euclidean") -> float:
    """RSA = Spearman rho between the two RDMs (official ``compute_RSA``). Invariant to orthogonal maps and uniform
    scaling of either space. A constant RDM (e.g. all-equal embeddings) has no rank correlation: InputError
    (:func:`layerwise_rsa` gives NaN for such a layer)."""
    x, y = _check_pair(x, y)
    r = _rsa_or_nan(x, y, metric)
    if np.isnan(r):
        raise InputError(
            "an RDM is constant (every pair equally far apart, e.g. all-equal embeddings): RSA is undefined"
        )
    return r


def _rsa_or_nan(x: np.ndarray, y: np.ndarray, metric: str) -> float:
    from scipy.stats import spearmanr

    a, b = rdm(x, metric), rdm(y, metric)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    # Eq. (RSA), Sec. 3.2: RSA(X, Y) = Spearman rho(RDM(X), RDM(Y))
    return float(spearmanr(a, b).statistic)


def layerwise_rsa(fa: np.ndarray, fb: np.ndarray, metric: str = "euclidean") -> np.ndarray:
    """RSA per layer of two (L+1, N, d) feature stacks (layer 0 = embeddings): shape (L+1,), NaN for a layer whose
    RDM is constant."""
    fa, fb = check_array(fa, "fa", ndim=3), check_array(fb, "fb", ndim=3)
    if fa.ndim != 3 or fb.ndim != 3 or fa.shape[:2] != fb.shape[:2]:
        raise InputError(
            f"expected two (L+1, N, d) stacks with equal L+1 and N, got {fa.shape} and {fb.shape}"
        )
    return np.array([_rsa_or_nan(*_check_pair(fa[k], fb[k]), metric) for k in range(len(fa))])


def constant_features(x: np.ndarray) -> bool:
    """True when every row of (N, d) features is the same point (zero variance), e.g. the layer-0 [CLS] state,
    which is the [CLS] token's embedding whatever the text: no dissimilarity or similarity is defined on it."""
    x = check_array(x, "x", ndim=2, allow_empty=True, finite=False)
    return bool(np.ptp(x, axis=0).max() == 0) if x.size else True


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA (an extension; not in the official code): ||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F) on centred
    X, Y. Invariant to orthogonal maps and isotropic scaling; 1 for identical spaces. Features with zero variance
    (every row the same point) are refused: CKA divides by their norm, which is 0."""
    x, y = _check_pair(x, y)
    for name, a in (("x", x), ("y", y)):
        if constant_features(a):
            raise InputError(
                f"{name} has zero variance (all {len(a)} rows are the same point): linear CKA is undefined for it"
            )
    x = x - x.mean(0)
    y = y - y.mean(0)
    # Eq. (CKA), extension: CKA(X, Y) = ||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F), X and Y centred
    num = np.linalg.norm(y.T @ x, "fro") ** 2
    den = np.linalg.norm(x.T @ x, "fro") * np.linalg.norm(y.T @ y, "fro")
    return float(num / den)


def layerwise_cka(fa: np.ndarray, fb: np.ndarray) -> np.ndarray:
    """``linear_cka`` per layer of two (L+1, N, d) stacks: shape (L+1,), NaN where a layer's features of either
    stack are constant (as :func:`layerwise_rsa`; :func:`constant_features` tells which)."""
    fa, fb = check_array(fa, "fa", ndim=3), check_array(fb, "fb", ndim=3)
    if fa.ndim != 3 or fb.ndim != 3 or fa.shape[:2] != fb.shape[:2]:
        raise InputError(
            f"expected two (L+1, N, d) stacks with equal L+1 and N, got {fa.shape} and {fb.shape}"
        )
    return np.array(
        [
            float("nan") if constant_features(a) or constant_features(b) else linear_cka(a, b)
            for a, b in zip(fa, fb, strict=True)
        ]
    )
