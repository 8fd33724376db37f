"""Clustering and coherence metrics: ACC with Hungarian matching (rectangular when the number of clusters differs
from the number of classes), NMI and ARI (scikit-learn), and the coherence of generated modalities."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import describe

__all__ = ["cluster_accuracy", "clustering_scores", "unconditional_coherence", "conditional_coherence"]


def _labels(name: str, a) -> np.ndarray:
    x = np.asarray(a)
    if x.ndim != 1:
        raise InputError(f"{name} must be a 1-D array of integer labels, got shape {x.shape}")
    if x.size == 0:
        raise InputError(f"{name} is empty")
    if not np.issubdtype(x.dtype, np.integer):
        if not np.all(np.isfinite(x)) or not np.all(x == np.round(x)):
            raise InputError(f"{name} must hold integer labels, got dtype {x.dtype}")
        x = x.astype(np.int64)
    return x


def cluster_accuracy(labels, clusters) -> float:
    """ACC = max over one-to-one maps of cluster -> class of the fraction matched (Hungarian algorithm,
    ``scipy.optimize.linear_sum_assignment`` on the contingency table; with more clusters than classes the extra
    clusters stay unmatched and count as errors, and vice versa)."""
    from scipy.optimize import linear_sum_assignment

    y, c = _labels("labels", labels), _labels("clusters", clusters)
    if y.shape != c.shape:
        raise InputError(f"labels and clusters differ in length: {y.shape[0]} vs {c.shape[0]}")
    _, yi = np.unique(y, return_inverse=True)
    _, ci = np.unique(c, return_inverse=True)
    table = np.zeros((ci.max() + 1, yi.max() + 1), dtype=np.int64)
    np.add.at(table, (ci, yi), 1)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum() / y.size)


def clustering_scores(labels, clusters) -> dict[str, float]:
    """{"acc", "nmi", "ari"} of a clustering against the true labels."""
    from sklearn.metrics import adjusted_rand_score
    from sklearn.metrics import normalized_mutual_info_score

    y, c = _labels("labels", labels), _labels("clusters", clusters)
    return {
        "acc": cluster_accuracy(y, c),
        "nmi": float(normalized_mutual_info_score(y, c)),
        "ari": float(adjusted_rand_score(y, c)),
    }


def _stack_predictions(predictions: object) -> np.ndarray:
    if isinstance(predictions, str | bytes) or not isinstance(predictions, Sequence) or not len(predictions):
        raise InputError(
            f"predictions must be a non-empty list of per-modality class arrays, got {describe(predictions)}"
        )
    arrs = [check_array(q, "predictions", kind="int", ndim=1, allow_empty=True) for q in predictions]
    if len({a.shape for a in arrs}) != 1:
        raise InputError(
            f"every modality needs one prediction per sample, got shapes {[a.shape for a in arrs]}"
        )
    return np.stack(arrs)


def unconditional_coherence(predictions: Sequence[np.ndarray]) -> float:
    """Fraction of generated tuples whose M classifier predictions all agree."""
    p = _stack_predictions(predictions)
    if p.ndim != 2 or p.shape[0] < 2 or p.shape[1] == 0:
        raise InputError(
            f"expected predictions for at least 2 modalities of the same samples, got shape {p.shape}"
        )
    return float((p == p[0]).all(0).mean())


def conditional_coherence(predictions: Sequence[np.ndarray], labels) -> float:
    """Fraction of cross-generated modalities classified as the label of the conditioning tuple."""
    y = _labels("labels", labels)
    p = _stack_predictions(predictions)
    if p.shape[-1] != y.shape[0]:
        raise InputError(f"predictions have {p.shape[-1]} samples but labels {y.shape[0]}")
    return float((p == y).mean())
