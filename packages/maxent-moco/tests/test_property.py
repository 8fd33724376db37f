"""Property test of the public API (``iclr24.maxent_moco.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty
inputs and bad sizes either work or raise InputError; nothing else escapes."""

import numpy as np

import iclr24.maxent_moco as mm
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {
    "Correction": "a result record (correct is probed)",
    "CorrectionInfo": "a result record",
    "Trace": "a result record (the planners' run is probed)",
    "SampleTrace": "a result record (the learners' run is probed)",
}


def test_public_api_refuses_bad_input(tmp_path):
    p = Prober()
    mdp = mm.garnet(seed=0, n_states=5, n_actions=2, branching=2, n_rewards=2)
    P, R, g = mdp.P, mdp.R, mdp.gamma
    S, A = R.shape
    V = np.zeros(S)
    pi = np.full((S, A), 1.0 / A)
    bad_P = probe_arrays(P.shape)
    bad_R = probe_arrays(R.shape)
    # the MDP and the exact solvers
    p.sweep(mm.TabularMDP, 0, bad_P, R, g)
    p.sweep(mm.TabularMDP, 1, bad_R, P, g)
    p.sweep(mm.TabularMDP, 2, probe_floats(), P, R)
    p.sweep(mm.TabularMDP, "start", probe_sizes(), P, R, g)
    for f in (mm.q_values, mm.greedy_policy):
        p.sweep(f, 0, bad_P, R, g, V)
        p.sweep(f, 3, probe_arrays((S,)), P, R, g)
    p.sweep(mm.evaluate_policy, 3, probe_arrays(pi.shape), P, R, g)
    p.sweep(mm.evaluate_policy, 2, probe_floats(), P, R, pi)
    p.sweep(mm.policy_kernel, 2, probe_arrays(pi.shape), P, R)
    p.sweep(mm.solve_control, 0, bad_P, R, g)
    p.sweep(mm.solve_control, "max_iter", probe_sizes(), P, R, g)
    p.sweep(mm.policy_error, 3, probe_arrays((3, S, A)), P, R, g, V)
    p.sweep(mm.normalized_error, 0, probe_arrays((S,)), V + 1)
    p.sweep(mm.error_scale, 0, probe_arrays((S,)))
    p.sweep(mm.kl_divergence, 0, probe_arrays(P.shape), P)
    # environments and models
    for f in (mm.cliffwalk, mm.maze33):
        p.sweep(f, 0, probe_floats())
        p.sweep(f, "gamma", probe_floats())
    for field in ("n_states", "n_actions", "branching", "n_rewards"):
        p.sweep(mm.garnet, field, probe_sizes())
    p.sweep(mm.garnet, "gamma", probe_floats())
    for f in (mm.locally_smoothed, mm.identity_smoothed, mm.adversarial_smoothed):
        p.sweep(f, 0, bad_P, 0.5)
        p.sweep(f, 1, probe_floats(), P)
    p.sweep(mm.make_model, 1, [("unknown", "magic"), ("int", 3)], mdp, 0.5)
    p.sweep(mm.make_model, 0, [("not an mdp", P)], "locally_smoothed", 0.5)
    p.sweep(mm.beta_from_paper, 0, probe_floats())
    # moment correction
    Phi = np.random.default_rng(0).standard_normal((S, 2))
    Psi = np.zeros((S * A, 2))
    P_hat = mm.locally_smoothed(mdp, 0.5)
    p.sweep(mm.correct, 0, probe_arrays(P_hat.shape), Phi, Psi)
    p.sweep(mm.correct, 1, probe_arrays(Phi.shape), P_hat, Psi)
    p.sweep(mm.correct, 3, probe_floats(), P_hat, Phi, Psi)
    p.sweep(mm.correct, "max_iter", probe_sizes(), P_hat, Phi, Psi)
    p.sweep(mm.correct_bfgs, 1, probe_arrays(Phi.shape), P_hat, Psi)
    p.sweep(mm.moment_residual, 1, probe_arrays(Phi.shape), P_hat, Psi)
    # planners and learners
    p.sweep(mm.ValueIteration, "mode", [("unknown", "magic")])
    p.sweep(mm.ValueIteration, "policy", probe_arrays(pi.shape), mode="pe")
    for cls in (mm.ModelBasedPlanning, mm.OSVI):
        p.sweep(cls, 0, probe_arrays(P_hat.shape))
    p.sweep(mm.MoCoVI, 0, probe_arrays(P_hat.shape))
    p.sweep(mm.MoCoVI, 1, probe_sizes(), P_hat)
    p.sweep(mm.MoCoVI, "beta", probe_floats(), P_hat)
    p.sweep(mm.ValueIteration(mode="control").run, "K", probe_sizes(), mdp)
    p.sweep(mm.ValueIteration(mode="control").run, 0, [("not an mdp", P)])
    for cls in (mm.QLearning, mm.TDLearning, mm.OSDyna):
        p.sweep(cls, 0, probe_floats())
    p.sweep(mm.QLearning, "eval_every", probe_sizes())
    p.sweep(mm.Dyna, "alpha", probe_floats())
    p.sweep(mm.Dyna, "planning_interval", probe_sizes())
    p.sweep(mm.Dyna, "model", [("unknown", "magic")])
    p.sweep(mm.MoCoDyna, 0, probe_sizes())
    p.sweep(mm.MoCoDyna, "val_queue_interval", probe_sizes())
    p.sweep(mm.OSDyna, "variant", [("unknown", "magic")])
    p.sweep(mm.QLearning().run, 1, probe_sizes(), mdp)
    p.sweep(mm.QLearning().run, 0, [("not an mdp", P)], 10)
    p.sweep(mm.sample_stream, 1, probe_sizes(), mdp, 0)
    p.sweep(mm.sample_stream, "mode", [("unknown", "magic")], mdp, 10, 0)
    p.sweep(mm.sample_stream, "policy", probe_arrays(pi.shape), mdp, 10, 0, mode="pe")
    # your own samples and the step log
    (tmp_path / "a-file").write_text("x")
    good = mm.sample_stream(mdp, 6, 0)
    bad_samples = [*probe_arrays((6, 3), dtype="int64"), ("out of range", np.array([[0, 0, S]])),
                   ("negative", np.array([[-1, 0, 0]])), ("two columns", good[:2]), ("ragged", (good[0], good[1][:3], good[2])),
                   ("floats", tuple(x + 0.5 for x in good)), ("a dict", {"s": good[0]}), ("str", "samples.npz")]  # fmt: skip
    p.sweep(mm.user_samples, 0, bad_samples, mdp)
    p.sweep(mm.user_samples, "policy", [("other actions", (good[1] + 1) % A)], good, mdp, mode="pe")
    for learner in (mm.QLearning(), mm.MoCoDyna(1, planning_interval=2), mm.OSDyna()):
        p.sweep(learner.run, "samples", bad_samples[:4], mdp)
        p.sweep(learner.run, "log_dir", [("a file", tmp_path / "a-file")], mdp, 6)
    p.sweep(mm.QLearning().run, 1, [("not the samples' length", 7)], mdp, samples=good)
    p.sweep(mm.MoCoVI(P, 1).run, "log_dir", [("a file", tmp_path / "a-file")], mdp, 2)
    p.sweep(mm.MoCoVI(P, 1).run, "callbacks", [("not callable", 3)], mdp, 2)
    # files
    from iclr24.maxent_moco.data import load_mdp

    p.sweep(load_mdp, 0, probe_files(tmp_path, ".npz"))
    p.check()
    p.assert_covers(mm, skip=SKIP)
