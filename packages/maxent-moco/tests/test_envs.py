import numpy as np
import pytest

from iclr24.maxent_moco import TabularMDP
from iclr24.maxent_moco import cliffwalk
from iclr24.maxent_moco import garnet
from iclr24.maxent_moco import identity_smoothed
from iclr24.maxent_moco import locally_smoothed
from iclr24.maxent_moco import make_model


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


def test_maze33_as_the_official_code():
    from iclr24.maxent_moco import maze33

    m = maze33()
    assert m.P.shape == (9, 4, 9) and m.start == 0 and np.allclose(m.P.sum(axis=2), 1)
    # walls between 0|1, 1|2, 3|4, 7|8: "right" from 0 is blocked (stay), "down" from 0 reaches 3
    assert m.P[0, 1, 0] == pytest.approx(0.9 + 0.1 / 3 * 2)  # right blocked, up and left hit the border
    assert m.P[0, 2, 3] == pytest.approx(0.9)
    assert m.P[4, 3, 4] == pytest.approx(0.9)  # left from 4 to 3 is walled
    # reward 1 when the intended move lands on the goal (state 2): "up" from 5, and from 2 itself up, right (the
    # border) and left (the wall 1|2) stay there; "right" from 1 is walled
    assert m.R[5, 0] == 1 and m.R[1, 1] == 0 and list(m.R[2]) == [1, 1, 0, 1] and m.R.sum() == 4
    assert not (m.P[np.arange(9), :, np.arange(9)] == 1).all(axis=1).any()  # nothing absorbing


def test_adversarial_model_moves_every_action_like_action_0():
    from iclr24.maxent_moco import adversarial_smoothed

    mdp = cliffwalk()
    Ph = adversarial_smoothed(mdp.P, 1.0)
    assert np.array_equal(Ph[:, 2], mdp.P[:, 0]) and np.allclose(Ph.sum(axis=2), 1)
    assert np.array_equal(make_model(mdp, "adversarial", 0.0), mdp.P)
