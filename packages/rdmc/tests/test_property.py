"""Property test of the public API (``iclr24.rdmc.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty inputs,
bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import torch

import iclr24.rdmc as rd
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {"Target": "the abstract target interface", "SampleInfo": "a result record"}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    g = p(rd.gmm2d)
    x = torch.randn(8, 2, dtype=torch.float64)
    bad_x = probe_arrays((8, 2), torch=True, dtype="float64")
    # targets
    p.sweep(
        rd.GaussianMixture,
        0,
        probe_arrays((2, 2), torch=True),
        torch.eye(2).repeat(2, 1, 1),
        torch.ones(2) / 2,
    )
    p.sweep(rd.GaussianMixture, 1, probe_arrays((2, 2, 2), torch=True), torch.zeros(2, 2), torch.ones(2) / 2)
    p.sweep(
        rd.GaussianMixture, 2, probe_arrays((2,), torch=True), torch.zeros(2, 2), torch.eye(2).repeat(2, 1, 1)
    )
    p.sweep(g.log_prob, 0, bad_x)
    p.sweep(g.grad_log_prob, 0, bad_x)
    p.sweep(rd.NealFunnel, 0, probe_sizes())
    p.sweep(rd.NealFunnel, "scale", probe_floats())
    p.sweep(rd.funnel, 0, probe_sizes())
    p.sweep(rd.FunctionTarget, 0, [("not callable", 3)])
    p.sweep(rd.FunctionTarget, "dim", probe_sizes(), lambda z: -(z**2).sum(-1))
    p.sweep(rd.CountedTarget, 0, [("not a target", 3)])
    p.sweep(rd.BayesianLogisticRegression, 0, probe_arrays((10, 3)), (torch.arange(10) % 2).numpy())
    p.sweep(rd.BayesianLogisticRegression, 1, probe_arrays((10,), dtype="int64"), torch.randn(10, 3).numpy())
    p.sweep(rd.BayesianLogisticRegression, "prior_std", probe_floats(), torch.randn(10, 3).numpy(),
            (torch.arange(10) % 2).numpy())  # fmt: skip
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    Xd, yd = torch.randn(10, 3), (torch.arange(10) % 2).float()
    bad_data = [
        ("three fields", TensorDataset(Xd, yd, yd)),
        ("one field", TensorDataset(Xd)),
        ("empty", TensorDataset(Xd[:0], yd[:0])),
        ("nan features", DataLoader(TensorDataset(Xd * float("nan"), yd), batch_size=4)),
        ("labels 2", DataLoader(TensorDataset(Xd, yd + 2), batch_size=4)),
        ("ragged", [(torch.zeros(3), 0), (torch.zeros(2), 1)]),
    ]
    p.sweep(rd.BayesianLogisticRegression, 0, bad_data)
    p.sweep(rd.BayesianLogisticRegression, 1, [("y with a dataset", yd)], TensorDataset(Xd, yd))
    p.sweep(rd.breast_cancer_logreg, "n_features", probe_sizes())
    p.sweep(rd.get_target, 0, [("unknown", "gmm99"), ("int", 3)])
    p(rd.gmm10d)
    # schedules and grids
    p.sweep(rd.reverse_time_grid, 0, probe_floats(), 10)
    p.sweep(rd.reverse_time_grid, 1, probe_sizes(), 2.0)
    p.sweep(rd.reverse_time_grid, "grid", [("unknown", "magic")], 2.0, 10)
    p.sweep(rd.reverse_time_grid, "delta", probe_floats(), 2.0, 10)
    times = rd.reverse_time_grid(2.0, 5)
    p.sweep(
        rd.schedule_weights, 0, [("empty", []), ("negative", [-1.0]), ("nan", [float("nan")]), ("str", "ab")]
    )
    p.sweep(rd.schedule_weights, "schedule", [("unknown", "magic")], times)
    p.sweep(rd.inner_sample_sizes, 1, probe_sizes(), times)
    p.sweep(rd.inner_step_size, 0, probe_floats(), 0.05)
    p.sweep(rd.inner_step_size, 1, probe_floats(), 0.5)
    p.sweep(rd.stream_seed, 0, probe_sizes(), "rdmc")
    p.sweep(rd.stream_seed, 1, [("int", 3)], 0)
    # the estimators
    for f in (rd.tweedie_mean, rd.score_from_posterior_mean):
        p.sweep(f, 0, bad_x, 0.5, x)
        p.sweep(f, 1, probe_floats(), x, x)
        p.sweep(f, 2, bad_x, x, 0.5)
    p.sweep(rd.posterior_gaussian_params, 0, bad_x, 0.5)
    p.sweep(rd.posterior_gaussian_params, 1, probe_floats(), x)
    p.sweep(rd.posterior_grad_log_prob, 0, bad_x, x, 0.5, x)
    p.sweep(rd.posterior_grad_log_prob, 2, probe_floats(), x, x, x)
    p.sweep(rd.exponential_integrator_step, 0, bad_x, x, 0.1, x)
    p.sweep(rd.exponential_integrator_step, 2, probe_floats(), x, x, x)
    for f in (rd.posterior_mean_estimate, rd.score_estimate):
        p.sweep(f, 0, bad_x, 0.5, g, m=4)
        p.sweep(f, 1, probe_floats(), x, g, m=4)
        p.sweep(f, "m", probe_sizes(), x, 0.5, g)
        p.sweep(f, "method", [("unknown", "magic")], x, 0.5, g, m=4)
        p.sweep(f, 2, [("not a target", 3)], x, 0.5, m=4)
    # samplers
    for f in (rd.ula, rd.mala):
        p.sweep(f, 1, probe_sizes(), g, 5)
        p.sweep(f, 2, probe_sizes(), g, 4)
        p.sweep(f, 3, probe_floats(), g, 4, 5)
        p.sweep(f, "x_init", bad_x, g, 8, 2)
        p.sweep(f, 0, [("not a target", 3)], 4, 5)
    p.sweep(rd.rdmc_sample, 1, probe_sizes(), g, K=2, m=4, inner_steps=2)
    p.sweep(rd.rdmc_sample, "T", probe_floats(), g, 4, K=2, m=4, inner_steps=2)
    p.sweep(rd.rdmc_sample, "K", probe_sizes(), g, 4, m=4, inner_steps=2)
    p.sweep(rd.rdmc_sample, "m", probe_sizes(), g, 4, K=2, inner_steps=2)
    p.sweep(rd.rdmc_sample, "estimator", [("unknown", "magic")], g, 4, K=2, m=4)
    p.sweep(rd.rdmc_sample, "x_init", bad_x, g, 8, K=2, m=4, inner_steps=2)
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    for f, a in ((rd.rdmc_sample, (g, 4)), (rd.ula, (g, 4, 3)), (rd.mala, (g, 4, 3))):
        p.sweep(f, "log_dir", [("a file", a_file)], *a, **({"K": 2, "m": 4} if f is rd.rdmc_sample else {}))
        p.sweep(f, "callbacks", [("int", 3), ("list of str", ["x"])], *a)
    for field in ("K", "inner_steps"):
        p.sweep(rd.BudgetSettings, field, probe_sizes())
    for field in ("T", "inner_step", "ula_step", "mala_step", "init_std"):
        p.sweep(rd.BudgetSettings, field, probe_floats())
    p.sweep(rd.budget_settings, 1, probe_sizes(), "rdmc")
    p.sweep(rd.budget_settings, 0, [("unknown", "magic"), ("int", 3)], 1000)
    p.sweep(rd.langevin_steps_for_budget, 1, probe_sizes(), "ula")
    p.sweep(rd.langevin_steps_for_budget, 0, [("unknown", "magic")], 100)
    p.sweep(rd.sample_with_budget, 3, probe_sizes(), g, "ula", 4)
    p.sweep(rd.sample_with_budget, 1, [("unknown", "magic")], g, 4, 100)
    # metrics
    y = torch.randn(8, 2, dtype=torch.float64)
    for f in (rd.mmd2, rd.sliced_w2):
        p.sweep(f, 0, bad_x, y)
        p.sweep(f, 1, bad_x, y)
    p.sweep(rd.mmd2, "bandwidth", probe_floats(), x, y)
    p.sweep(rd.sliced_w2, "n_projections", probe_sizes(), x, y)
    means, weights = g.means, g.weights
    p.sweep(rd.mode_weights, 0, bad_x, means)
    p.sweep(rd.mode_weights, 1, probe_arrays(tuple(means.shape), torch=True, dtype="float64"), x)
    p.sweep(rd.mode_tv, 2, probe_arrays(tuple(weights.shape), torch=True, dtype="float64"), x, means)
    # files
    p.sweep(rd.load_gaussian_mixture, 0, [*probe_files(tmp_path, ".npz"), *probe_files(tmp_path, ".json")])
    p.check()
    p.assert_covers(rd, skip=SKIP)
