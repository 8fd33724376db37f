"""U: RSA and linear CKA against their invariances and the official RDM order (acceptance checks 1-3)."""

import numpy as np
import pytest
from scipy.spatial.distance import pdist
from scipy.stats import special_ortho_group

from iclr24.sufo.similarity import layerwise_rsa
from iclr24.sufo.similarity import linear_cka
from iclr24.sufo.similarity import rdm
from iclr24.sufo.similarity import rsa


@pytest.fixture
def x():
    return np.random.default_rng(0).standard_normal((40, 6))


def test_rsa_is_one_for_identical_and_rotated_scaled_spaces(x):
    q = special_ortho_group.rvs(6, random_state=1)
    assert rsa(x, x) == pytest.approx(1.0)
    assert rsa(x, 3.5 * x @ q) == pytest.approx(1.0)
    assert rsa(x, np.random.default_rng(2).standard_normal((40, 6))) < 0.5


def test_linear_cka_invariances(x):
    q = special_ortho_group.rvs(6, random_state=3)
    assert linear_cka(x, x @ q) == pytest.approx(1.0)
    assert linear_cka(x, 7.0 * x) == pytest.approx(1.0)
    assert linear_cka(x, x + 5.0) == pytest.approx(1.0)  # centred
    assert 0.0 <= linear_cka(x, np.random.default_rng(4).standard_normal((40, 6))) < 0.6


def test_rdm_length_and_order_match_triu_indices(x):
    d = rdm(x)
    n = len(x)
    assert d.shape == (n * (n - 1) // 2,)
    i, j = np.triu_indices(n, 1)
    np.testing.assert_allclose(d, np.linalg.norm(x[i] - x[j], axis=1))
    np.testing.assert_allclose(rdm(x, "cosine"), pdist(x, "cosine"))


def test_layerwise_rsa_and_constant_layer_is_nan(x):
    stack = np.stack([np.ones_like(x), x, 2 * x])
    r = layerwise_rsa(stack, stack)
    assert np.isnan(r[0]) and r[1:] == pytest.approx([1.0, 1.0])


@pytest.mark.parametrize(
    "a,b,msg",
    [
        (np.zeros((5, 2)), np.zeros((6, 2)), "same N"),
        (np.zeros(5), np.zeros(5), r"\(N, d\)"),
        (np.full((5, 2), np.nan), np.zeros((5, 2)), "NaN"),
        (np.zeros((2, 2)), np.zeros((2, 2)), "at least 3"),
    ],
)
def test_bad_input(a, b, msg):
    with pytest.raises(ValueError, match=msg):
        rsa(a, b)
    with pytest.raises(ValueError, match=msg):
        linear_cka(a, b)


def test_rdm_bad_metric(x):
    with pytest.raises(ValueError, match="metric"):
        rdm(x, "manhattan")


def test_cka_of_a_constant_layer_is_refused_or_nan_per_layer(x):
    """Zero-variance features (the [CLS] state of layer 0) have no CKA: linear_cka says why, layerwise_cka gives
    NaN for that layer as layerwise_rsa does."""
    from iclr24.sufo.similarity import constant_features
    from iclr24.sufo.similarity import layerwise_cka

    const = np.ones_like(x)
    with pytest.raises(ValueError, match="zero variance .* CKA is undefined"):
        linear_cka(const, x)
    with pytest.raises(ValueError, match="y has zero variance"):
        linear_cka(x, const)
    stack = np.stack([const, x, 2 * x])
    c = layerwise_cka(stack, stack)
    assert np.isnan(c[0]) and c[1:] == pytest.approx([1.0, 1.0])
    assert constant_features(const) and not constant_features(x)


def test_cosine_rsa_uses_cosine_distance_on_both_sides(x):
    """The package's cosine RSA: Spearman of cosine distances of both spaces (the official calculate_geometry
    mixes cosine similarity with Euclidean distance, which flips the sign; see the README's differences)."""
    from scipy.stats import spearmanr

    y = x + 0.3 * np.random.default_rng(5).standard_normal(x.shape)
    want = spearmanr(pdist(x, "cosine"), pdist(y, "cosine")).statistic
    assert rsa(x, y, "cosine") == pytest.approx(want)
    mixed = spearmanr(1 - pdist(x, "cosine"), pdist(y)).statistic  # the official mix: similarity vs distance
    assert mixed < 0 < rsa(x, y, "cosine")
