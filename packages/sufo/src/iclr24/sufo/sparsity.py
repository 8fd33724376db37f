"""F: feature dynamics and sparsification (paper Sec. 3.3-3.4, official ``PC_intepretation`` notebook).

Features F are (N, d), centred per model before PCA. (The official notebook centres a list of five models' arrays
together, i.e. subtracts the cross-model mean; we centre each model's features on their own sample mean.)
"""

from __future__ import annotations

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

__all__ = [
    "center",
    "principal_components",
    "explained_variance",
    "low_rank_approx",
    "rank_1_approx",
    "pc_removal_curve",
    "label_separation",
]


def _features(f: np.ndarray) -> np.ndarray:
    f = check_array(f, "features", ndim=2, min_rows=2)
    if f.shape[1] == 0:
        raise InputError(f"expected (N, d) features with d >= 1, got shape {f.shape}")
    return f


def center(f: np.ndarray) -> np.ndarray:
    """Subtract the sample mean (per model)."""
    f = _features(f)
    return f - f.mean(0)


def principal_components(f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SVD of the centred features: (U, S, Vt) with F_c = U diag(S) Vt."""
    return np.linalg.svd(center(f), full_matrices=False)


def explained_variance(f: np.ndarray, k: int = 5, cumulative: bool = True) -> np.ndarray:
    """Explained-variance ratio of the top ``k`` PCs (cumulative by default): the paper's sparsification measure
    (a fine-tuned space is dominated by one or two PCs). For rank-1 data PC1 explains 1.0."""
    check_int(k, "k", minimum=1)
    _, s, _ = principal_components(f)
    var = s**2
    total = var.sum()
    if total == 0:
        raise InputError("all features are identical: explained variance is undefined")
    # Eq. (EVR), Sec. 3.3: EVR_k = sum_{i<=k} s_i^2 / sum_i s_i^2, s the singular values of the centred F
    ratio = var[:k] / total
    return np.cumsum(ratio) if cumulative else ratio


def low_rank_approx(f: np.ndarray, k: int) -> np.ndarray:
    """The centred features rebuilt without their top ``k`` PCs (``low_rank_approx(0)`` = the centred features)."""
    u, s, vt = principal_components(f)
    check_int(k, "k")
    if not 0 <= k <= len(s):
        raise InputError(f"k must be in [0, {len(s)}], got {k}")
    # Eq. (PC removal), Sec. 3.3: F_c without its top k PCs = sum_{i>k} s_i u_i v_i^T
    return (u[:, k:] * s[k:]) @ vt[k:]


def rank_1_approx(f: np.ndarray, k: int) -> np.ndarray:
    """The rank-1 reconstruction on PC k (0-based); the sum over all k is the centred features."""
    u, s, vt = principal_components(f)
    check_int(k, "k")
    if not 0 <= k < len(s):
        raise InputError(f"k must be in [0, {len(s)}), got {k}")
    # Eq. (rank-1), Sec. 3.3: the reconstruction on PC k = s_k u_k v_k^T
    return np.outer(u[:, k] * s[k], vt[k])


def pc_removal_curve(
    f: np.ndarray, predict, labels: np.ndarray, ks, mean: np.ndarray | None = None
) -> np.ndarray:
    """Macro-F1 of ``predict(features) -> class ids`` on the centred features with their top k PCs removed, for
    each k in ``ks``, as the official notebook (``PC_intepretation``) feeds them to the model's pooler and
    classifier. The reconstructions share one SVD (each step subtracts one rank-1 term). ``mean``: a vector added
    back before predicting (e.g. the features' own mean, for a head trained on raw features); default none."""
    from sklearn.metrics import f1_score

    f = _features(f)
    labels = check_array(labels, "labels", ndim=1, kind="int")
    if len(labels) != len(f):
        raise InputError(f"labels ({len(labels)}) and features ({len(f)}) differ in length")
    if not callable(predict):
        raise InputError(f"predict must be a function of the features, got {describe(predict)}")
    ks = sorted(
        check_int(k, "each k in ks") for k in check_array(ks, "ks", ndim=1, kind="int", allow_empty=True)
    )
    mu = np.zeros(f.shape[1]) if mean is None else np.asarray(mean, dtype=np.float64)
    if mu.shape != (f.shape[1],):
        raise InputError(f"mean must be a vector of the feature dimension {f.shape[1]}, got shape {mu.shape}")
    u, s, vt = principal_components(f)
    if ks and not 0 <= ks[0] <= ks[-1] <= len(s):
        raise InputError(f"ks must lie in [0, {len(s)}], got {ks[0]}..{ks[-1]}")
    cur = f - f.mean(0)
    done = 0
    out = []
    for k in ks:
        for j in range(done, k):
            cur = cur - np.outer(u[:, j] * s[j], vt[j])
        done = max(done, k)
        out.append(f1_score(labels, predict(cur + mu), average="macro"))
    return np.array(out)


def label_separation(f: np.ndarray, labels: np.ndarray, n_components: int = 2) -> dict[str, float]:
    """How label-wise clustered the top-PC projection is ("disambiguation", quantified): silhouette score by
    label and 5-NN accuracy (leave-one-out) in PC1..PC``n_components``."""
    from sklearn.metrics import silhouette_score
    from sklearn.neighbors import NearestNeighbors

    u, s, _ = principal_components(f)
    check_int(n_components, "n_components", minimum=1, maximum=len(s))
    z = u[:, :n_components] * s[:n_components]
    labels = check_array(labels, "labels", ndim=1, kind="int")
    if len(labels) != len(z) or not 2 <= len(np.unique(labels)) < len(z) or labels.min() < 0:
        raise InputError(
            "label_separation needs one label >= 0 per feature row and 2 to N-1 classes, got "
            f"{len(np.unique(labels))} classes for {len(z)} rows"
        )
    sil = float(silhouette_score(z, labels))
    k = min(6, len(z))
    idx = NearestNeighbors(n_neighbors=k).fit(z).kneighbors(z, return_distance=False)[:, 1:]  # drop self
    votes = np.array([np.bincount(labels[i], minlength=labels.max() + 1).argmax() for i in idx])
    return {"silhouette": sil, "knn_accuracy": float((votes == labels).mean())}
