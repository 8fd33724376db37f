import numpy as np
import pytest
from scipy.optimize import linprog

from iclr24.maxent_moco import Correction
from iclr24.maxent_moco import beta_from_paper
from iclr24.maxent_moco import correct
from iclr24.maxent_moco import correct_bfgs
from iclr24.maxent_moco import kl_divergence


def _pl(c: Correction):
    """(P_bar, lam) of a Correction record."""
    assert isinstance(c, Correction)
    return c.P_bar, c.lam


def _span_distance(V, Phi):
    """min_{c,w} ||V - c - Phi w||_inf by linear programming (variables c, w, t; minimise t)."""
    S, d = Phi.shape
    ones = np.ones((S, 1))
    A = np.block([[-ones, -Phi, -ones], [ones, Phi, -ones]])
    b = np.concatenate([-V, V])
    cost = np.zeros(d + 2)
    cost[-1] = 1.0
    res = linprog(cost, A_ub=A, b_ub=b, bounds=[(None, None)] * (d + 1) + [(0, None)], method="highs")
    assert res.status == 0
    return res.fun


def test_noop_when_constraints_already_hold(make_instance):
    # check 1: psi = P_hat phi  =>  P_bar = P_hat and lam = 0
    _, P_hat, Phi, _ = make_instance(1)
    P_bar, lam = _pl(correct(P_hat, Phi, P_hat @ Phi))
    assert np.abs(P_bar - P_hat).max() < 1e-10
    assert np.abs(lam).max() < 1e-10


@pytest.mark.parametrize("seed", range(5))
def test_constraints_met_support_kept(make_instance, seed):
    # check 2: |E_P_bar phi - psi| < 1e-8, rows sum to 1, zeros exactly where P_hat = 0
    _, P_hat, Phi, Psi = make_instance(seed, d=1 + seed % 4)
    P_bar, lam = _pl(correct(P_hat, Phi, Psi))
    assert np.abs(P_bar @ Phi - Psi).max() < 1e-8
    assert np.abs(P_bar.sum(axis=1) - 1).max() < 1e-12
    assert np.array_equal(P_bar == 0, P_hat == 0)
    # the solution is the exponential tilt P_hat exp(Phi lam) / Z with the returned multipliers
    tilt = P_hat * np.exp(lam @ Phi.T - (lam @ Phi.T).max(axis=1, keepdims=True))
    assert np.allclose(P_bar, tilt / tilt.sum(axis=1, keepdims=True), atol=1e-10)


@pytest.mark.parametrize("seed", range(5))
def test_pythagorean_identity(make_instance, seed):
    # check 3: KL(P||P_hat) = KL(P||P_bar) + KL(P_bar||P_hat) when P meets the constraints
    P, P_hat, Phi, Psi = make_instance(10 + seed)
    P_bar, _ = _pl(correct(P_hat, Phi, Psi))
    lhs = kl_divergence(P, P_hat)
    rhs = kl_divergence(P, P_bar) + kl_divergence(P_bar, P_hat)
    assert np.abs(lhs - rhs).max() < 1e-8
    assert (kl_divergence(P_bar, P_hat) <= lhs + 1e-12).all()  # the I-projection is the closest feasible q


def test_pinsker_span_bound_on_100_random_cases():
    # check 4: |((P - P_bar) V)(x)| <= sqrt(2 KL(P||P_hat)) * min_{c,w} ||V - c - w^T phi||_inf
    rng = np.random.default_rng(4)
    worst = 0.0
    for case in range(100):
        S, d = rng.integers(3, 12), rng.integers(1, 4)
        mask = rng.random(S) < 0.7
        mask[rng.integers(S)] = True
        P = rng.dirichlet(np.ones(S)) * mask
        P /= P.sum()
        lam = rng.uniform(0.05, 1)
        noise = rng.dirichlet(np.ones(S)) * mask
        P_hat = (1 - lam) * P + lam * noise / noise.sum()
        Phi = rng.normal(size=(S, d))
        V = rng.normal(size=S) * 5
        if case % 3 == 0:  # values close to the span make the bound tight-ish
            V = Phi @ rng.normal(size=d) + 0.1 * V
        P_bar, _ = _pl(correct(P_hat[None], Phi, (P @ Phi)[None]))
        lhs = abs((P - P_bar[0]) @ V)
        rhs = np.sqrt(2 * kl_divergence(P, P_hat)) * _span_distance(V, Phi)
        assert lhs <= rhs + 1e-9, (case, lhs, rhs)
        worst = max(worst, lhs / max(rhs, 1e-300))
    assert worst > 0.01  # the bound is not vacuous on these cases


def test_exact_recovery_when_value_in_span():
    # check 5: basis = V^pi  =>  policy evaluation in P_bar returns V^pi (Garnet, lambda = 1)
    from iclr24.maxent_moco import evaluate_policy
    from iclr24.maxent_moco import garnet
    from iclr24.maxent_moco import locally_smoothed
    from iclr24.maxent_moco import policy_kernel
    from iclr24.maxent_moco import solve_control

    mdp = garnet(seed=0)
    P_hat = locally_smoothed(mdp.P, 1.0)
    _, pi = solve_control(mdp.P, mdp.R, mdp.gamma)
    V = evaluate_policy(mdp.P, mdp.R, mdp.gamma, pi)
    Ppi, rpi = policy_kernel(mdp.P, mdp.R, pi)
    Phat_pi, _ = policy_kernel(P_hat, mdp.R, pi)
    P_bar, _ = _pl(correct(Phat_pi, V, Ppi @ V))
    V_bar = np.linalg.solve(np.eye(mdp.n_states) - mdp.gamma * P_bar, rpi)
    assert np.abs(V_bar - V).max() < 1e-8
    V_hat = np.linalg.solve(np.eye(mdp.n_states) - mdp.gamma * Phat_pi, rpi)
    assert np.abs(V_hat - V).max() > 1e-2  # without the correction the model is wrong


@pytest.mark.parametrize("seed", range(3))
def test_invariance_to_affine_rescaling_and_mixing(make_instance, seed):
    # check 6: Phi -> Phi M + 1 b^T (invertible M), Psi -> Psi M + b leaves P_bar unchanged
    rng = np.random.default_rng(100 + seed)
    _, P_hat, Phi, Psi = make_instance(20 + seed)
    M = rng.normal(size=(3, 3)) * 100 + np.eye(3)
    b = rng.normal(size=3) * 1e3
    P1, _ = _pl(correct(P_hat, Phi, Psi))
    P2, _ = _pl(correct(P_hat, Phi @ M + b, Psi @ M + b))
    P3, _ = _pl(correct(P_hat, Phi * [1e-3, 1.0, 1e4], Psi * [1e-3, 1.0, 1e4]))
    assert np.abs(P1 - P2).max() < 1e-8
    assert np.abs(P1 - P3).max() < 1e-8


def test_beta_limits(make_instance):
    # check 7: beta -> inf gives the exact solution, beta -> 0 gives P_hat; the violation shrinks as beta grows
    _, P_hat, Phi, Psi = make_instance(3)
    exact, _ = _pl(correct(P_hat, Phi, Psi))
    assert np.array_equal(correct(P_hat, Phi, Psi, beta=np.inf).P_bar, exact)
    assert np.abs(correct(P_hat, Phi, Psi, beta=1e14).P_bar - exact).max() < 1e-8
    assert np.abs(correct(P_hat, Phi, Psi, beta=1e-14).P_bar - P_hat).max() < 1e-8
    assert np.array_equal(correct(P_hat, Phi, Psi, beta=0).P_bar, P_hat)
    viol = [np.abs(correct(P_hat, Phi, Psi, beta=b).P_bar @ Phi - Psi).max() for b in (1e-2, 1, 1e2, 1e4)]
    assert all(v1 > v2 for v1, v2 in zip(viol, viol[1:]))
    assert beta_from_paper(0.02) == pytest.approx(1e4)


def test_collinear_basis_reaches_high_accuracy(make_instance):
    # nearly collinear past values (as late MoCoVI iterations produce): the SVD keeps the span, Newton converges
    P, P_hat, Phi, _ = make_instance(5)
    B = np.column_stack([Phi[:, 0], Phi[:, 0] * (1 + 1e-10) + 1e-10 * Phi[:, 1], Phi[:, 1]])
    _c = correct(P_hat, B, P @ B)
    P_bar, info = _c.P_bar, _c.info
    assert info.rank == 2
    assert np.abs(P_bar @ B - P @ B).max() < 1e-8 * np.abs(B).max()


def test_matches_reference_bfgs_on_a_well_conditioned_case(make_instance):
    _, P_hat, Phi, Psi = make_instance(6, S=10, n=8, d=2)
    P1, lam1 = _pl(correct(P_hat, Phi, Psi))
    P2, lam2 = _pl(correct_bfgs(P_hat, Phi, Psi))
    assert np.abs(P1 - P2).max() < 1e-5
    assert np.abs(P1 @ Phi - P2 @ Phi).max() < 1e-4


def test_shapes_sa_rows_and_vector_basis(make_instance):
    P, P_hat, Phi, Psi = make_instance(7, S=12, n=12)
    P_bar, lam = _pl(correct(P_hat.reshape(4, 3, 12), Phi, Psi.reshape(4, 3, -1)))
    assert P_bar.shape == (4, 3, 12) and lam.shape == (4, 3, 3)
    P_bar1, lam1 = _pl(correct(P_hat, Phi[:, 0], Psi[:, 0]))
    assert lam1.shape == (12,)
    assert np.abs(P_bar1 @ Phi[:, 0] - Psi[:, 0]).max() < 1e-8
    P_row, lam_row = _pl(correct(P_hat[0], Phi, Psi[0]))
    assert P_row.shape == (12,) and np.allclose(P_row, correct(P_hat, Phi, Psi).P_bar[0])


def test_degenerate_rows_and_zero_basis():
    # absorbing rows (one next state) and an all-zero basis (MoCoVI's first iteration) are left as they are
    P_hat = np.array([[1.0, 0, 0], [0.2, 0.3, 0.5]])
    Phi = np.array([[1.0, 0.0], [2.0, 1.0], [4.0, 0.0]])
    Psi = np.array([[1.0, 0.0], [3.0, 0.3]])
    P_bar, _ = _pl(correct(P_hat, Phi, Psi))
    assert np.array_equal(P_bar[0], P_hat[0])
    assert np.abs(P_bar[1] @ Phi - Psi[1]).max() < 1e-9
    P0, lam0 = _pl(correct(P_hat, np.zeros((3, 2)), np.zeros((2, 2))))
    assert np.array_equal(P0, P_hat) and not lam0.any()


# ---- bad input -----------------------------------------------------------------------------------------------


def test_rows_not_distributions():
    Phi = np.ones((3, 1))
    with pytest.raises(ValueError, match="sum to 1"):
        correct(np.array([[0.5, 0.2, 0.2]]), Phi, [[1.0]])
    with pytest.raises(ValueError, match="negative"):
        correct(np.array([[1.5, -0.5, 0.0]]), Phi, [[1.0]])
    with pytest.raises(ValueError, match="NaN"):
        correct(np.array([[np.nan, 0.5, 0.5]]), Phi, [[1.0]])


def test_basis_with_nan_and_mismatched_shapes():
    P_hat = np.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match="NaN"):
        correct(P_hat, np.array([[0.0], [np.nan], [1.0]]), np.zeros((2, 1)))
    with pytest.raises(ValueError, match=r"Phi must have shape \(S, d\)"):
        correct(P_hat, np.zeros((4, 1)), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="Psi must have shape"):
        correct(P_hat, np.zeros((3, 2)), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="beta"):
        correct(P_hat, np.zeros((3, 1)), np.zeros((2, 1)), beta=-1.0)


def test_infeasible_constraints_detected_and_fallback_only_when_allowed():
    # row 1 only reaches states 0 and 1, where phi is 0 and 1: psi = 2 is outside the hull of the support
    P_hat = np.array([[0.2, 0.3, 0.5], [0.5, 0.5, 0.0]])
    Phi = np.array([0.0, 1.0, 2.0])
    Psi = np.array([1.5, 2.0])
    with pytest.raises(
        ValueError, match=r"cannot be met for 1 of 2 rows.*outside the convex hull.*fallback_beta"
    ):
        correct(P_hat, Phi, Psi)
    _c = correct(P_hat, Phi, Psi, fallback_beta=1e3)
    P_bar, info = _c.P_bar, _c.info
    assert list(info.fallback_rows) == [1]
    assert abs(P_bar[0] @ Phi - 1.5) < 1e-9  # the feasible row is still exact
    assert P_bar[1, 2] == 0.0 and P_bar[1, 1] > 0.9  # the regularised row moves toward psi, support kept
    P_reg = correct(P_hat, Phi, Psi, beta=1e3).P_bar  # a finite beta never raises
    assert np.isfinite(P_reg).all()


def test_correct_returns_one_record_with_solver_info(make_instance):
    _, P_hat, Phi, Psi = make_instance(8)
    c = correct(P_hat, Phi, Psi)
    assert isinstance(c, Correction) and c.P_bar.shape == P_hat.shape and c.lam.shape == Psi.shape
    assert c.info.rank == 3 and c.info.max_violation < 1e-8 and c.info.iterations >= 1
    b = correct_bfgs(P_hat, Phi, Psi)
    assert isinstance(b, Correction) and b.info.rank == 3
