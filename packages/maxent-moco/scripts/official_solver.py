"""How far the official MoCoVI solver's answer is from this package's (README, "Differences from the official code").

The official ``MECVI_PE.calc_Pbar_mat`` standardises the basis ((phi - mean) / max(std, 1e-4)) and minimises the
mean over rows of the MoCo dual with ``scipy.optimize.minimize`` at its defaults (BFGS, gtol 1e-5), warm-started
from the previous iteration's multipliers. This script re-implements that solve (written from the description
above, not copied) and runs MoCoVI policy evaluation on CliffWalk with it and with :func:`correct` (SVD + Newton,
tol 1e-11) side by side, each on its own iterates: the official solve's constraint violation (relative to the basis'
range over states, and in the standardised units it works in) and the distance between the two runs' values (L1
over states relative to ||V^pi||_1, and the largest per-state relative difference), iterations 10-15. numpy/scipy
only.

    uv run python packages/maxent-moco/scripts/official_solver.py
"""

from __future__ import annotations

import json

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from iclr24.maxent_moco import MoCoVI
from iclr24.maxent_moco import cliffwalk
from iclr24.maxent_moco import correct
from iclr24.maxent_moco import locally_smoothed
from iclr24.maxent_moco.planning import policy_kernel
from iclr24.maxent_moco.planning import solve_control


def official_style_solve(P_rows, Phi, Psi, lam0):
    """Joint BFGS (scipy defaults) on the mean dual over rows, standardised basis, warm start ``lam0``."""
    n, d = Psi.shape
    mean, std = Phi.mean(axis=0), np.maximum(Phi.std(axis=0), 1e-4)
    Z, Zpsi = (Phi - mean) / std, (Psi - mean) / std
    with np.errstate(divide="ignore"):
        logp = np.log(P_rows)

    def tilt(lam):
        a = np.where(P_rows > 0, logp + lam @ Z.T, -np.inf)
        lse = logsumexp(a, axis=1, keepdims=True)
        return np.exp(a - lse), lse[:, 0]

    def fun(x):
        lam = x.reshape(n, d)
        q, lse = tilt(lam)
        return (lse - (lam * Zpsi).sum(1)).mean(), ((q @ Z - Zpsi) / n).ravel()

    res = minimize(fun, lam0.ravel(), jac=True)  # scipy's defaults: BFGS, gtol 1e-5
    lam = res.x.reshape(n, d)
    q, _ = tilt(lam)
    return q, lam


def compare(lam_model: float, d: int, K: int = 15) -> dict:
    """MoCoVI policy evaluation of the optimal policy, K iterations, with each solver on its own iterates."""
    mdp = cliffwalk()
    P_hat = locally_smoothed(mdp.P, lam_model)
    ours = MoCoVI(P_hat, d).run(mdp, K)  # V_0..V_K and the normalised errors
    _, pi = solve_control(mdp.P, mdp.R, mdp.gamma)
    Phat_pi, rpi = policy_kernel(P_hat, mdp.R, pi)
    Ppi, _ = policy_kernel(mdp.P, mdp.R, pi)
    v_true = np.linalg.solve(np.eye(mdp.n_states) - mdp.gamma * Ppi, rpi)
    V = [np.zeros(mdp.n_states)]
    lam_warm = np.zeros((mdp.n_states, d))
    viol, viol_std, viol_ours = [], [], []
    for k in range(K):
        Phi = np.stack([V[k - i] if k - i >= 0 else np.zeros(mdp.n_states) for i in range(d)], axis=-1)
        Psi = Ppi @ Phi
        q, lam_warm = official_style_solve(Phat_pi, Phi, Psi, lam_warm)
        live = Phi.max(0) - Phi.min(0) > 0
        if live.any():
            rng = (Phi.max(0) - Phi.min(0))[live]
            viol.append(float((np.abs(q @ Phi - Psi)[:, live] / rng).max()))
            std = np.maximum(Phi.std(axis=0), 1e-4)[live]
            viol_ours.append(correct(Phat_pi, Phi, Psi).info.max_violation)
            viol_std.append(float((np.abs(q @ Phi - Psi)[:, live] / std).max()))
        V.append(np.linalg.solve(np.eye(mdp.n_states) - mdp.gamma * q, rpi))
    V = np.array(V)
    scale = np.abs(v_true).sum()
    diff = np.abs(V - ours.values).sum(axis=1) / scale
    err_off = np.abs(V - v_true).sum(axis=1) / scale
    sup = (np.abs(V - ours.values).max(axis=1) / np.abs(v_true).max())[10:]
    per_state = (np.abs(V - ours.values) / np.abs(ours.values).clip(1e-12))[10:].max(axis=1)
    return {
        "lambda": lam_model,
        "d": d,
        "max_violation_official": max(viol),
        "median_violation_official": float(np.median(viol)),
        "max_violation_ours_on_the_official_iterates": max(viol_ours),
        "max_violation_official_standardised_units": max(viol_std),
        "error_k10": {"official": float(err_off[10]), "ours": float(ours.errors[10])},
        "error_K": {"official": float(err_off[K]), "ours": float(ours.errors[K])},
        "value_rel_diff_k10_to_K": [float(diff[10:].min()), float(diff[10:].max())],
        "value_sup_rel_diff_k10_to_K": [float(sup.min()), float(sup.max())],
        "value_max_state_rel_diff_k10_to_K": [float(per_state.min()), float(per_state.max())],
    }


if __name__ == "__main__":
    for lam in (0.1, 0.5, 1.0):
        for d in (1, 2, 3):
            print(json.dumps(compare(lam, d)), flush=True)
