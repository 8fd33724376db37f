import numpy as np
import pytest

from iclr24.paperkit.metrics import frechet_distance


def with_exact_moments(mean: np.ndarray, cov: np.ndarray, n: int, seed: int) -> np.ndarray:
    """n samples whose sample mean and unbiased sample covariance are exactly ``mean`` and ``cov``."""
    z = np.random.default_rng(seed).normal(size=(n, len(mean)))
    z -= z.mean(axis=0)
    z = (
        z @ np.linalg.inv(np.linalg.cholesky(np.atleast_2d(np.cov(z, rowvar=False)))).T
    )  # whitened: cov(z) = I
    return z @ np.linalg.cholesky(cov).T + mean


def psd_sqrt(s: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(s)
    return (v * np.sqrt(np.clip(w, 0, None))) @ v.T


def reference(mu_a, s_a, mu_b, s_b) -> float:
    """d^2 with Tr((S_a S_b)^{1/2}) = Tr((S_a^{1/2} S_b S_a^{1/2})^{1/2}), computed by symmetric eigendecompositions."""
    r = psd_sqrt(s_a)
    return float(np.sum((mu_a - mu_b) ** 2) + np.trace(s_a + s_b) - 2 * np.trace(psd_sqrt(r @ s_b @ r)))


def test_diagonal_gaussians_closed_form():
    # commuting covariances: d^2 = ||mu_a - mu_b||^2 + sum_i (sigma_a,i - sigma_b,i)^2
    mu_a, mu_b = np.array([0.0, 1.0, -2.0]), np.array([1.0, 1.0, 0.0])
    sd_a, sd_b = np.array([1.0, 2.0, 0.5]), np.array([3.0, 1.0, 0.5])
    a = with_exact_moments(mu_a, np.diag(sd_a**2), 400, seed=0)
    b = with_exact_moments(mu_b, np.diag(sd_b**2), 300, seed=1)
    expected = 1 + 0 + 4 + (2**2 + 1**2 + 0)
    assert frechet_distance(a, b) == pytest.approx(expected, rel=1e-9)


def test_full_covariances_against_symmetric_form():
    rng = np.random.default_rng(2)
    m_a, m_b = rng.normal(size=(5, 5)), rng.normal(size=(5, 5))
    s_a, s_b = m_a @ m_a.T + 0.1 * np.eye(5), m_b @ m_b.T + 0.1 * np.eye(5)
    mu_a, mu_b = rng.normal(size=5), rng.normal(size=5)
    a, b = with_exact_moments(mu_a, s_a, 200, 3), with_exact_moments(mu_b, s_b, 250, 4)
    assert frechet_distance(a, b) == pytest.approx(reference(mu_a, s_a, mu_b, s_b), rel=1e-8)
    assert frechet_distance(a, b) == pytest.approx(frechet_distance(b, a), rel=1e-8)  # symmetric


def test_identical_sets_and_one_dimension():
    a = np.random.default_rng(5).normal(size=(300, 16))
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-8)
    assert frechet_distance(a, a + 2.0) == pytest.approx(16 * 4.0, rel=1e-8)  # a pure shift: ||mu||^2
    # D = 1: (m_a - m_b)^2 + (s_a - s_b)^2
    x = with_exact_moments(np.array([1.0]), np.array([[4.0]]), 50, 6)
    y = with_exact_moments(np.array([-1.0]), np.array([[0.25]]), 80, 7)
    assert frechet_distance(x, y) == pytest.approx(4.0 + 1.5**2, rel=1e-9)


def test_singular_covariances_stay_finite():
    rng = np.random.default_rng(8)
    a, b = rng.normal(size=(5, 20)), rng.normal(size=(6, 20))  # fewer samples than dimensions: rank-deficient
    d = frechet_distance(a, b)
    assert np.isfinite(d) and d > 0
    c = np.zeros((10, 3))  # zero covariance: the distance is the squared mean difference
    assert frechet_distance(c, c + 1.0) == pytest.approx(3.0, abs=1e-5)


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [
        (np.full((4, 2), np.nan), np.ones((4, 2)), "non-finite"),
        (np.ones((4, 2)), np.array([[1.0, np.inf]] * 4), "non-finite"),
        (np.ones((4, 2)), np.ones((4, 3)), "dimensions differ"),
        (np.zeros((0, 2)), np.ones((4, 2)), "at least 2 rows"),
        (np.ones((1, 2)), np.ones((4, 2)), "at least 2 rows"),
        (np.ones(4), np.ones(4), r"2-D \(N, D\)"),
        (np.ones((2, 2, 2)), np.ones((2, 2, 2)), r"2-D \(N, D\)"),
        ([["a", "b"], ["c", "d"]], np.ones((2, 2)), "numeric"),
    ],
)
def test_bad_features(a, b, match):
    with pytest.raises(ValueError, match=match):
        frechet_distance(a, b)


def test_bad_eps():
    with pytest.raises(ValueError, match="eps"):
        frechet_distance(np.ones((3, 2)), np.ones((3, 2)), eps=0.0)
