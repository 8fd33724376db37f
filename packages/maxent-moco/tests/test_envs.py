import numpy as np
import pytest

from iclr24.maxent_moco import TabularMDP, cliffwalk, garnet, identity_smoothed, locally_smoothed, make_model


def test_cliffwalk_layout():
    mdp = cliffwalk()
    assert mdp.P.shape == (36, 4, 36) and mdp.gamma == 0.9 and mdp.start == 0
    assert np.allclose(mdp.P.sum(axis=2), 1)
    assert mdp.R[5, 0] == 20 and mdp.P[5, 2, 5] == 1  # goal absorbing
    for row, r in ((0, -32), (2, -16), (4, -8)):
        for col in range(1, 5):
            s = 6 * row + col
            assert mdp.R[s, 1] == r and mdp.P[s, 3, s] == 1
    assert mdp.R[6, 0] == -1
    # from state 6 (row 1, col 0) "right" reaches 7 w.p. 0.9, the others 0.1/3 each (left hits the wall: stay)
    assert mdp.P[6, 1, 7] == pytest.approx(0.9)
    assert mdp.P[6, 1, 0] == pytest.approx(0.1 / 3) and mdp.P[6, 1, 6] == pytest.approx(0.1 / 3)


def test_garnet_is_seeded_and_has_the_stated_structure():
    g1, g2, g3 = garnet(seed=0), garnet(seed=0), garnet(seed=1)
    assert np.array_equal(g1.P, g2.P) and not np.array_equal(g1.P, g3.P)
    assert ((g1.P > 0).sum(axis=2) == 12).all()
    assert (g1.R[:, 0] > 0).sum() == 12 and np.array_equal(g1.R[:, 0], g1.R[:, 3])


def test_model_error_makers():
    mdp = cliffwalk()
    for lam in (0.0, 0.3, 1.0):
        Ph = locally_smoothed(mdp.P, lam)
        assert np.allclose(Ph.sum(axis=2), 1) and np.array_equal(Ph > 0, mdp.P > 0)
        Pi = identity_smoothed(mdp.P, lam)
        assert np.allclose(Pi.sum(axis=2), 1)
        assert np.allclose(Pi[7, 1, 7], (1 - lam) * mdp.P[7, 1, 7] + lam)
    assert np.array_equal(locally_smoothed(mdp.P, 0.0), mdp.P)
    assert np.allclose(locally_smoothed(mdp.P, 1.0)[6, 1, 7], 1 / 4)  # uniform over the 4 successors
    assert np.array_equal(make_model(mdp, "identity_smoothed", 0.5), identity_smoothed(mdp.P, 0.5))
    with pytest.raises(ValueError, match="lam must be in"):
        locally_smoothed(mdp.P, 1.5)
    with pytest.raises(ValueError, match="unknown model-error kind"):
        make_model(mdp, "bogus", 0.5)


def test_user_arrays_are_validated():
    P = np.full((3, 2, 3), 1 / 3)
    mdp = TabularMDP(P, np.zeros(3), 0.5)
    assert mdp.R.shape == (3, 2)
    with pytest.raises(ValueError, match="shape"):
        TabularMDP(np.ones((3, 3)), np.zeros(3), 0.5)
    with pytest.raises(ValueError, match="probability distribution"):
        TabularMDP(P * 2, np.zeros(3), 0.5)
    with pytest.raises(ValueError, match="gamma"):
        TabularMDP(P, np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="R must have shape"):
        TabularMDP(P, np.zeros((2, 2)), 0.5)
