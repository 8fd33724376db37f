import math

import numpy as np
import pytest

from iclr24.task_geometry.metrics import cka
from iclr24.task_geometry.tasks import a_of_alignment
from iclr24.task_geometry.tasks import alignment_of_a
from iclr24.task_geometry.tasks import cube_dichotomy_classes
from iclr24.task_geometry.tasks import linear_expansion
from iclr24.task_geometry.tasks import random_kernel
from iclr24.task_geometry.tasks import walsh_cube
from iclr24.task_geometry.tasks import walsh_functions


def test_walsh_functions_orthogonal_and_ordered():
    H, subsets = walsh_functions(3)
    Phi = 2 * H - 1
    np.testing.assert_array_equal(Phi.T @ Phi, 8 * np.eye(7))
    assert subsets[:3] == [(0,), (1,), (2,)]  # popcount first: the faces
    assert [len(s) for s in subsets] == [1, 1, 1, 2, 2, 2, 3]
    # the first three columns are the single bits (MSB first)
    np.testing.assert_array_equal(H[:, 0], [0, 0, 0, 0, 1, 1, 1, 1])


@pytest.mark.parametrize(
    ("k", "a", "c"),
    [(1, 1.0, 1 / math.sqrt(7)), (3, 1.0, math.sqrt(3 / 7)), (1, 3.5, 0.9258200997725514), (1, 0.0, 0.0)],
)
def test_generator_alignment_matches_closed_form(k, a, c):
    t = walsh_cube(3, k=k, a=a, n_samples=64)
    assert alignment_of_a(a, 8, k) == pytest.approx(c, abs=1e-12)
    assert t.alignment == pytest.approx(c, abs=1e-6)
    # the means after the linear expansion keep the same kernel up to the factor D
    assert cka(t.means @ t.means.T, t.K_y) == pytest.approx(c, abs=1e-6)
    np.testing.assert_allclose(t.means @ t.means.T, 100 * t.K_x, atol=1e-8)


def test_alignment_extremes_and_inverse():
    assert alignment_of_a(7.0, 8, 1) == pytest.approx(1.0)
    for c in (0.0, 0.2, 0.5, 0.93, 1.0):
        assert alignment_of_a(a_of_alignment(c, 8, 2), 8, 2) == pytest.approx(c, abs=1e-12)
    t = walsh_cube(3, k=2, alignment=0.8, n_samples=16)
    assert t.alignment == pytest.approx(0.8, abs=1e-9)


def test_linear_expansion_orthonormal_rows():
    Q = linear_expansion(7, 100, seed=0)
    np.testing.assert_allclose(Q @ Q.T, 100 * np.eye(7), atol=1e-9)
    np.testing.assert_array_equal(Q, linear_expansion(7, 100, seed=0))


def test_samples_and_trials():
    t = walsh_cube(3, k=1, a=1.0, noise=1.0, n_samples=5000, seed=3)
    assert t.X.shape == (5000, 100) and t.Y.shape == (5000, 1)
    resid = t.X.numpy() - t.means[t.cond.numpy()]
    assert resid.std() == pytest.approx(1.0, abs=0.02)
    np.testing.assert_array_equal(t.Y.numpy()[:, 0], t.targets[t.cond.numpy(), 0])
    X, cond = t.trials(10, noise=0.0)
    np.testing.assert_allclose(X.numpy(), t.means[cond.numpy()], atol=1e-5)
    assert np.bincount(cond.numpy()).tolist() == [10] * 8


@pytest.mark.parametrize("c", [0.0, 0.3, 0.9, 1.0])
def test_random_kernel_hits_alignment(c):
    t = random_kernel(16, 3, c, seed=2, n_samples=32)
    assert t.alignment == pytest.approx(c, abs=1e-9)
    assert np.linalg.eigvalsh(t.K_x).min() > -1e-8  # PSD
    assert t.targets.sum(0).tolist() == [8, 8, 8]  # balanced
    assert np.trace(t.K_x) == pytest.approx(16 * 15)


def test_cube_dichotomy_classes_partition_all_35():
    cl = cube_dichotomy_classes()
    assert {k: len(v) for k, v in cl.items()} == {
        "face": 3,
        "corner": 4,
        "snake": 12,
        "net": 12,
        "xor2": 3,
        "xor3": 1,
    }
    rows = {tuple(y) for v in cl.values() for y in v}
    assert len(rows) == 35
    H, _ = walsh_functions(3)
    faces = {tuple(1 - h) if h[0] else tuple(h) for h in H[:, :3].T.astype(float)}
    assert faces == {tuple(y) for y in cl["face"]}
    assert {tuple(y) for y in cl["xor3"]} == {tuple(H[:, 6].astype(float))}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_bits": 3, "k": 7}, "k must be between"),
        ({"n_bits": 3, "k": 1, "a": 9.0}, "a must be in"),
        ({"n_bits": 3, "k": 1, "a": -1.0}, "finite number >= 0"),
        ({"n_bits": 3, "k": 1, "noise": float("nan")}, "noise"),
        ({"n_bits": 3, "k": 1, "dim": 5}, "dim must be >="),
        ({"n_bits": 3, "k": 1, "alignment": 1.5}, "alignment must be in"),
    ],
)
def test_walsh_cube_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        walsh_cube(**kwargs)


def test_power_of_two_required():
    with pytest.raises(ValueError, match="power of two"):
        alignment_of_a(1.0, 12, 1)
    with pytest.raises(ValueError, match="P must be even"):
        random_kernel(7, 1, 0.5)
