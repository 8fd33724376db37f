"""F and O: explained variance, low-rank reconstructions, the PC-removal curve and the PC1 x PC2 outlier rule
(acceptance check 5, and outliers on known geometry)."""

import numpy as np
import pytest

from iclr24.sufo.outliers import clusters_1d
from iclr24.sufo.outliers import common_outliers
from iclr24.sufo.outliers import outliers_pc12
from iclr24.sufo.sparsity import center
from iclr24.sufo.sparsity import explained_variance
from iclr24.sufo.sparsity import label_separation
from iclr24.sufo.sparsity import low_rank_approx
from iclr24.sufo.sparsity import pc_removal_curve
from iclr24.sufo.sparsity import rank_1_approx

RNG = np.random.default_rng(0)


def test_rank_one_data_has_pc1_explaining_everything():
    f = np.outer(RNG.standard_normal(50), RNG.standard_normal(8)) + 3.0
    assert explained_variance(f, 1)[0] == pytest.approx(1.0)
    ev = explained_variance(RNG.standard_normal((60, 5)), 5)
    assert ev[-1] == pytest.approx(1.0) and np.all(np.diff(ev) >= 0)


def test_low_rank_and_rank_one_reconstructions():
    f = RNG.standard_normal((30, 6))
    np.testing.assert_allclose(low_rank_approx(f, 0), center(f), atol=1e-12)
    np.testing.assert_allclose(sum(rank_1_approx(f, k) for k in range(6)), center(f), atol=1e-10)
    np.testing.assert_allclose(
        low_rank_approx(f, 2) + rank_1_approx(f, 0) + rank_1_approx(f, 1), center(f), atol=1e-10
    )
    with pytest.raises(ValueError, match="k must be"):
        low_rank_approx(f, 7)


def test_pc_removal_curve_matches_naive_reconstruction():
    f = RNG.standard_normal((80, 5)) * np.array([10, 4, 1, 0.5, 0.1])
    y = (f[:, 0] > f[:, 0].mean()).astype(int)  # a head on centred features, as the official notebook's

    def predict(z):
        return (z[:, 0] > 0).astype(int)

    curve = pc_removal_curve(f, predict, y, ks=[0, 1, 3])
    from sklearn.metrics import f1_score

    # the official notebook feeds the centred reconstructions (no mean added back)
    naive = [f1_score(y, predict(low_rank_approx(f, k)), average="macro") for k in (0, 1, 3)]
    np.testing.assert_allclose(curve, naive)
    assert curve[0] == pytest.approx(1.0) and curve[1] < 0.8  # the label lives on PC1
    shifted = f + np.array([50.0, 0, 0, 0, 0])  # a head trained on raw features needs the mean back
    mu = shifted.mean(0)
    raw_head = lambda z: (z[:, 0] > mu[0]).astype(int)  # noqa: E731
    assert pc_removal_curve(shifted, raw_head, y, [0], mean=mu)[0] == pytest.approx(1.0)
    assert pc_removal_curve(shifted, raw_head, y, [0])[0] < 0.5  # without it every point is class 0
    with pytest.raises(ValueError, match="mean must be a vector"):
        pc_removal_curve(f, predict, y, [0], mean=np.zeros(3))


def test_label_separation_on_separated_clusters():
    y = np.repeat([0, 1], 30)
    f = RNG.standard_normal((60, 4)) + 8 * y[:, None]
    s = label_separation(f, y)
    assert s["silhouette"] > 0.7 and s["knn_accuracy"] == pytest.approx(1.0)


def _clusters_with_outliers():
    centres = np.array([[0, 0], [100, 0], [0, 1]])  # PC scales differ by two orders of magnitude
    y = np.repeat([0, 1, 2], 40)
    pts = centres[y] + RNG.standard_normal((120, 2)) * [1.0, 0.01]
    out = np.array([[50, 0.5], [-60, 2.0], [160, -1.0]])
    return np.vstack([pts, out]), np.r_[np.zeros(120, bool), np.ones(3, bool)]


@pytest.mark.parametrize("rule", ["gap", "kmeans1d"])
def test_outliers_pc12_finds_planted_points_on_known_geometry(rule):
    f, truth = _clusters_with_outliers()
    f = np.hstack([f, RNG.standard_normal((len(f), 3)) * 1e-4])
    rep = outliers_pc12(f, n_classes=3, rule=rule, gap_factor=20.0)
    assert rep.recall(truth) == pytest.approx(1.0)
    assert rep.precision(truth) >= 0.75
    assert len(rep.kept_cells) == 3 and rep.projection.shape == (len(f), 2)
    assert set(common_outliers([rep, rep]).tolist()) == set(rep.outliers.tolist())


def test_clusters_1d_gap_rule():
    z = np.r_[np.linspace(0, 1, 20), np.linspace(50, 51, 20)]
    ids = clusters_1d(z, "gap", gap_factor=10)
    assert set(ids[:20]) == {0} and set(ids[20:]) == {1}
    with pytest.raises(ValueError, match="rule"):
        clusters_1d(z, "dbscan")


def test_bad_features():
    with pytest.raises(ValueError, match="NaN"):
        explained_variance(np.full((4, 3), np.inf))
    with pytest.raises(ValueError, match="identical"):
        explained_variance(np.ones((5, 3)))
    with pytest.raises(ValueError, match="n_classes"):
        outliers_pc12(RNG.standard_normal((10, 3)), 0)
