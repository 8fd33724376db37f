"""O: outlier analysis in the fine-tuned feature space (paper Fig. 2).

Project the features on PC1 and PC2, cluster each 1-D projection separately (their scales differ by orders of
magnitude, so 2-D Euclidean clustering fails), take the Cartesian product of the 1-D clusters, keep the K largest
cells (K = number of classes): the points outside them are outliers. The 1-D boundary rule is not in the official
code; two are offered: ``gap`` (split sorted projections where a gap exceeds ``gap_factor`` times the median gap)
and ``kmeans1d`` (K-means with K clusters on each axis).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import describe

from .sparsity import principal_components

__all__ = ["OutlierReport", "clusters_1d", "outliers_pc12", "common_outliers"]


def clusters_1d(
    z: np.ndarray, rule: str = "gap", n_clusters: int = 3, gap_factor: float = 10.0
) -> np.ndarray:
    """Cluster ids of a 1-D projection ``z`` (N,), numbered from low to high values."""
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 1 or len(z) < 2:
        raise InputError(f"expected a 1-D projection of at least 2 points, got shape {z.shape}")
    if rule == "gap":
        if gap_factor <= 0:
            raise InputError(f"gap_factor must be > 0, got {gap_factor}")
        order = np.argsort(z)
        gaps = np.diff(z[order])
        med = np.median(gaps[gaps > 0]) if (gaps > 0).any() else 0.0
        cuts = gaps > gap_factor * med if med > 0 else np.zeros_like(gaps, dtype=bool)
        ids_sorted = np.concatenate([[0], np.cumsum(cuts)])
        ids = np.empty(len(z), dtype=np.int64)
        ids[order] = ids_sorted
        return ids
    if rule == "kmeans1d":
        from sklearn.cluster import KMeans

        if n_clusters < 1:
            raise InputError(f"n_clusters must be >= 1, got {n_clusters}")
        k = min(n_clusters, len(np.unique(z)))
        km = KMeans(n_clusters=k, n_init=10, random_state=0).fit(z[:, None])
        rank = np.argsort(np.argsort(km.cluster_centers_[:, 0]))
        return rank[km.labels_].astype(np.int64)
    raise InputError(f"rule must be 'gap' or 'kmeans1d', got {rule!r}")


@dataclass(frozen=True)
class OutlierReport:
    """``outliers``: indices, most isolated first (smallest cell, then farthest from its cell's centre);
    ``projection``: (N, 2) PC1/PC2 coordinates; ``cell``: (N, 2) 1-D cluster ids; ``kept_cells``: the K cells."""

    outliers: np.ndarray
    projection: np.ndarray
    cell: np.ndarray
    kept_cells: list[tuple[int, int]]

    def precision(self, truth: np.ndarray) -> float:
        """Share of the flagged points that are true outliers (nan when none is flagged)."""
        truth = np.asarray(truth, dtype=bool)
        return float(truth[self.outliers].mean()) if len(self.outliers) else float("nan")

    def recall(self, truth: np.ndarray) -> float:
        truth = np.asarray(truth, dtype=bool)
        return float(np.isin(np.flatnonzero(truth), self.outliers).mean()) if truth.any() else float("nan")


def outliers_pc12(
    f: np.ndarray, n_classes: int, rule: str = "gap", gap_factor: float = 10.0
) -> OutlierReport:
    """Outliers of (N, d) features by the PC1 x PC2 cell rule (module docstring)."""
    if isinstance(n_classes, bool) or not isinstance(n_classes, int) or not 1 <= n_classes <= 10**4:
        raise InputError(f"n_classes must be an int in [1, 10**4], got {n_classes!r}")
    check_float(gap_factor, "gap_factor", minimum=0, open_min=True)
    u, s, _ = principal_components(f)
    if len(s) < 2:
        raise InputError("outlier analysis needs features with at least two principal components")
    proj = u[:, :2] * s[:2]
    cell = np.stack(
        [clusters_1d(proj[:, j], rule=rule, n_clusters=n_classes, gap_factor=gap_factor) for j in range(2)], 1
    )
    cells, inverse, counts = np.unique(cell, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    keep = np.argsort(-counts, kind="stable")[:n_classes]
    kept = np.isin(inverse, keep)
    out = np.flatnonzero(~kept)
    if len(out):
        centres = {c: proj[inverse == c].mean(0) for c in np.unique(inverse)}
        size = counts[inverse[out]]
        dist = np.array([np.linalg.norm(proj[i] - centres[inverse[i]]) for i in out])
        out = out[np.lexsort((-dist, size))]
    return OutlierReport(out, proj, cell, [tuple(int(v) for v in cells[c]) for c in keep])


def common_outliers(reports: list[OutlierReport]) -> np.ndarray:
    """Indices flagged by every report (the paper's common outlier modes across models)."""
    if not reports:
        raise InputError("common_outliers needs at least one report")
    if not all(isinstance(r, OutlierReport) for r in reports):
        raise InputError(
            f"common_outliers needs OutlierReports (outliers_pc12), got {describe(list(reports))}"
        )
    common = set(reports[0].outliers.tolist())
    for r in reports[1:]:
        common &= set(r.outliers.tolist())
    return np.array(sorted(common), dtype=np.int64)
