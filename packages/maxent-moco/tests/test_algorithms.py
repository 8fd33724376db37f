import numpy as np
import pytest

from iclr24.maxent_moco import OSVI
from iclr24.maxent_moco import MoCoVI
from iclr24.maxent_moco import ModelBasedPlanning
from iclr24.maxent_moco import TabularMDP
from iclr24.maxent_moco import ValueIteration
from iclr24.maxent_moco import cliffwalk
from iclr24.maxent_moco import evaluate_policy
from iclr24.maxent_moco import garnet
from iclr24.maxent_moco import locally_smoothed
from iclr24.maxent_moco import policy_kernel
from iclr24.maxent_moco import solve_control


@pytest.fixture(scope="module")
def cw():
    return cliffwalk()


def test_vi_error_has_the_closed_form(cw):
    # V^pi - V_k = (gamma P^pi)^k V^pi for VI started at 0
    tr = ValueIteration().run(cw, 10)
    _, pi = solve_control(cw.P, cw.R, cw.gamma)
    Ppi, _ = policy_kernel(cw.P, cw.R, pi)
    V = evaluate_policy(cw.P, cw.R, cw.gamma, pi)
    closed = np.abs(np.linalg.matrix_power(cw.gamma * Ppi, 10) @ V).sum() / np.abs(V).sum()
    assert tr.errors[10] == pytest.approx(closed, rel=1e-10)
    assert tr.errors[0] == pytest.approx(1.0)


def test_spec_thresholds_policy_evaluation(cw):
    # check 8 (the spec's section 4): lambda = 1
    P_hat = locally_smoothed(cw.P, 1.0)
    mbrl = ModelBasedPlanning(P_hat).run(cw, 14).errors
    osvi = OSVI(P_hat).run(cw, 14).errors
    vi = ValueIteration().run(cw, 14).errors
    for d in (2, 3):
        assert MoCoVI(P_hat, d).run(cw, 10).errors[10] <= 1e-6
    assert mbrl[10] >= 0.9 and osvi[14] > 1
    for lam in (0.1, 0.5, 1.0):
        P_hat = locally_smoothed(cw.P, lam)
        m2 = MoCoVI(P_hat, 2).run(cw, 10).errors[10]
        assert m2 * 1e3 <= min(vi[10], ModelBasedPlanning(P_hat).run(cw, 1).errors[1])


def test_mocovi_first_iterate_is_the_model_solution_and_d0_is_mbrl(cw):
    P_hat = locally_smoothed(cw.P, 0.5)
    m = MoCoVI(P_hat, 2).run(cw, 3)
    mb = ModelBasedPlanning(P_hat).run(cw, 3)
    assert np.allclose(m.values[1], mb.values[1])  # basis is all-zero at k = 0: P_bar = P_hat
    assert np.allclose(MoCoVI(P_hat, 0).run(cw, 3).values, mb.values)
    assert m.errors[3] < mb.errors[3] * 1e-2


def test_mocovi_exact_model_and_rate_bound():
    # with P_hat = P, MoCoVI returns V^pi at once; on Garnet its error contracts at least at gamma*eps/(1-gamma)
    mdp = garnet(seed=0)
    assert MoCoVI(mdp.P, 1).run(mdp, 2).errors[1] < 1e-10
    tr = MoCoVI(locally_smoothed(mdp.P, 0.1), 1).run(mdp, 6)
    assert (np.diff(np.log(tr.errors[1:5])) < 0).all()


def test_control_mocovi_reaches_the_optimal_policy_vi_does_not(cw):
    P_hat = locally_smoothed(cw.P, 1.0)
    m = MoCoVI(P_hat, 2, mode="control").run(cw, 6)
    vi = ValueIteration(mode="control").run(cw, 6)
    mb = ModelBasedPlanning(P_hat, mode="control").run(cw, 6)
    assert m.errors[4:].max() == pytest.approx(0, abs=1e-12)
    assert vi.errors[4] > 0.05 and mb.errors[6] > 0.5
    assert m.policies.shape == (7, 36)
    V_star, _ = solve_control(cw.P, cw.R, cw.gamma)
    gap = np.abs(m.values[6] - V_star).max() / np.abs(V_star).max()
    assert gap < 1e-3 and gap < 1e-2 * np.abs(vi.values[6] - V_star).max() / np.abs(V_star).max()


def test_user_mdp_and_policy():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(5), size=(5, 2))
    mdp = TabularMDP(P, rng.normal(size=(5, 2)), 0.8)
    pi = np.array([0, 1, 0, 1, 1])
    P_hat = 0.5 * P + 0.5 / 5
    tr = MoCoVI(P_hat, 2, policy=pi).run(mdp, 12)
    assert np.allclose(tr.target, evaluate_policy(mdp.P, mdp.R, mdp.gamma, pi))
    assert tr.errors[12] < 1e-8


def test_bad_input(cw):
    with pytest.raises(ValueError, match="mode"):
        MoCoVI(cw.P, 2, mode="bogus")
    with pytest.raises(ValueError, match="d "):
        MoCoVI(cw.P, -1)
    with pytest.raises(ValueError, match="P_hat must have the MDP's shape"):
        MoCoVI(np.full((3, 4, 3), 1 / 3), 2).run(cw, 2)
    with pytest.raises(ValueError, match="K"):
        ValueIteration().run(cw, -1)
    with pytest.raises(ValueError, match="TabularMDP"):
        ValueIteration().run(cw.P, 2)


def test_model_missing_true_successors_is_detected_and_fallback_runs(cw):
    from iclr24.maxent_moco import identity_smoothed

    P_hat = identity_smoothed(cw.P, 1.0)  # "always stay": the true successors are outside the model's support
    with pytest.raises(ValueError, match="outside the convex hull"):
        MoCoVI(P_hat, 2).run(cw, 3)
    tr = MoCoVI(P_hat, 2, fallback_beta=1e4).run(cw, 3)
    assert np.isfinite(tr.errors).all()
    # with lambda < 1 the support covers the true successors and MoCoVI converges
    assert MoCoVI(identity_smoothed(cw.P, 0.5), 2).run(cw, 15).errors[15] < 1e-6


def test_zero_reward_mdp_reports_absolute_error_not_nan():
    # V_true = 0: the normalised error would be 0/0; it is reported absolute (and is 0 for every method here)
    rng = np.random.default_rng(2)
    mdp = TabularMDP(rng.dirichlet(np.ones(5), size=(5, 2)), np.zeros((5, 2)), 0.9)
    P_hat = locally_smoothed(mdp.P, 0.5)
    for mode in ("pe", "control"):
        tr = MoCoVI(P_hat, 2, mode=mode).run(mdp, 4)
        assert np.isfinite(tr.errors).all() and np.abs(tr.errors).max() == 0
    from iclr24.maxent_moco import error_scale
    from iclr24.maxent_moco import normalized_error

    assert error_scale(np.zeros(3)) == 1.0
    assert normalized_error(np.ones(3), np.zeros(3)) == 3.0
