"""Property test of the public API (``iclr24.opposing_signals.__all__``): seeded wrong shapes, dtypes, NaN/inf,
empty inputs, bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import torch

import iclr24.opposing_signals as os_
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {
    "OpposingGroups": "a result record (find_opposing_groups is probed)",
    "EoSReport": "a result record (edge_of_stability_report is probed)",
    "History": "a result record (train is probed)",
    "OpposingDigits": "a dataset record (make_opposing_digits is probed)",
}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    x, y = torch.randn(12, 6), torch.arange(12) % 3
    model = os_.make_mlp(d_in=6, width=8, depth=1, n_classes=3)
    bad_x = probe_arrays((12, 6), torch=True)
    bad_y = probe_arrays((12,), torch=True, dtype="int64")
    # the model and its losses
    for field in ("d_in", "width", "depth", "n_classes"):
        p.sweep(os_.make_mlp, field, probe_sizes())
    p.sweep(model, 0, bad_x)
    out = model(x)
    p.sweep(os_.per_example_loss, 0, probe_arrays((12, 3), torch=True), y)
    p.sweep(os_.per_example_loss, 1, bad_y, out)
    p.sweep(os_.per_example_loss, "loss", [("unknown", "hinge")], out, y)
    p.sweep(os_.mean_loss, 0, [("unknown", "hinge"), ("int", 3)])
    # series statistics
    for f in (os_.pearson,):
        p.sweep(f, 0, probe_arrays((10,), torch=True), torch.randn(10))
        p(f, torch.ones(10), torch.randn(10))  # constant: no correlation
    p.sweep(os_.loss_increase_steps, 0, [*probe_arrays((10,)), ("str", "abc")])
    p.sweep(os_.loss_increase_steps, "tol", probe_floats(), [1.0, 0.5, 0.7])
    p.sweep(os_.stability_threshold, 0, probe_floats())
    p.sweep(os_.stability_threshold, "momentum", probe_floats(), 0.1)
    p.sweep(os_.scalar_net_hessian, 0, probe_floats(), 1.0)
    # training
    for field in ("steps", "sharpness_every", "sharpness_iters", "seed", "batch_size"):
        p.sweep(os_.TrainConfig, field, probe_sizes())
    for field in ("lr", "momentum"):
        p.sweep(os_.TrainConfig, field, probe_floats())
    p.sweep(os_.TrainConfig, "optimizer", [("unknown", "lbfgs")])
    cfg = os_.TrainConfig(steps=2, sharpness_every=0, lr=0.1)
    p.sweep(os_.train, 1, bad_x, model, y, cfg)
    p.sweep(os_.train, 2, bad_y, model, x, cfg)
    p.sweep(os_.train, 0, [("not a model", object())], x, y, cfg)
    p.sweep(os_.train, "steps", probe_sizes(), model, x, y)
    hist = os_.train(model, x, y, cfg)
    p.sweep(os_.edge_of_stability_report, 0, [("not a history", [1, 2]), ("None", None)], lr=0.1)
    p.sweep(os_.edge_of_stability_report, "lr", probe_floats(), hist)
    p.sweep(os_.sharpness, "iters", probe_sizes(), model, os_.mean_loss("ce"), (x, y))
    p.sweep(os_.sharpness, "method", [("unknown", "power2")], model, os_.mean_loss("ce"), (x, y))
    p.sweep(os_.sharpness, 2, [(k, (v, y)) for k, v in bad_x], model, os_.mean_loss("ce"))
    # tracking and groups
    p.sweep(os_.LossTracker, 1, [(k, (v, y)) for k, v in bad_x], model)
    p.sweep(os_.LossTracker, "every", probe_sizes(), model, (x, y))
    p.sweep(os_.LossTracker, "loss", [("unknown", "hinge")], model, (x, y))
    tracker = os_.LossTracker(model, (x, y), loss="ce")
    for step in range(6):
        tracker.record(step)
    p.sweep(os_.find_opposing_groups, 0, [("not a tracker", object())])
    p.sweep(os_.find_opposing_groups, "k", probe_sizes(), tracker)
    p.sweep(os_.find_opposing_groups, "window", probe_sizes(), tracker)
    p.sweep(os_.find_opposing_groups, "cluster", [("unknown", "spectral")], tracker)
    ga, gb = torch.arange(4), torch.arange(4, 8)
    p.sweep(os_.group_gradient_cosine, 3, [*bad_y, ("out of range", torch.tensor([99]))], model, x, y, gb)
    p.sweep(os_.group_gradient_cosine, 1, bad_x, model, y, ga, gb)
    # data
    p.sweep(os_.make_opposing_digits, "alpha", probe_floats())
    p.sweep(os_.make_opposing_digits, "n_a", probe_sizes())
    p.sweep(os_.make_opposing_digits, "n_train", probe_sizes())
    p.sweep(os_.make_opposing_digits, "patch", [("out of range", (99,)), ("empty", ()), ("negative", (-1,))])
    for field in ("d", "n"):
        p.sweep(os_.make_toy_linear, field, probe_sizes())
    for field in ("alpha", "p", "noise"):
        p.sweep(os_.make_toy_linear, field, probe_floats())
    p.sweep(os_.mnist_subset, 0, probe_files(tmp_path, ""))
    p.sweep(os_.mnist_subset, "n", probe_sizes(), tmp_path)
    for suffix in ("", ".npz", ".tar.gz"):
        p.sweep(os_.cifar10_subset, 0, probe_files(tmp_path, suffix))
    # the whole experiment
    for field in ("steps", "width", "depth", "k"):
        p.sweep(os_.ExperimentConfig, field, probe_sizes())
    p.sweep(os_.ExperimentConfig, "lr", probe_floats())
    ecfg = os_.ExperimentConfig(steps=2, width=8, depth=1, k=3, sharpness_every=0)
    p.sweep(os_.run_experiment, 0, bad_x, y, ecfg)
    p.sweep(os_.run_experiment, 1, bad_y, x, ecfg)
    p.sweep(os_.run_experiment, "group_a", [*bad_y, ("out of range", torch.tensor([99]))], x, y, ecfg,
            group_b=gb)  # fmt: skip
    # the model folder and your own data
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    for field in ("d_in", "width", "depth", "n_classes"):
        p.sweep(
            os_.MLP,
            field,
            probe_sizes(),
            **{k: 2 for k in ("d_in", "width", "depth", "n_classes") if k != field},
        )
    p.sweep(os_.MLP.from_pretrained, 0, probe_files(tmp_path, ""))
    p.sweep(
        model.save_pretrained, 0, [("a file", probe_files(tmp_path, ".x")[3][1]), ("busy folder", tmp_path)]
    )
    loaders = [(k, TensorDataset(v, y)) for k, v in bad_x if v.ndim and v.shape[0] == 12]
    loaders += [
        (k, DataLoader(TensorDataset(x, v), batch_size=5)) for k, v in bad_y if v.ndim and v.shape[0] == 12
    ]
    loaders += [("one field", TensorDataset(x)), ("three fields", TensorDataset(x, y, y))]
    p.sweep(os_.train, 1, loaders, model, None, cfg)
    p.sweep(os_.train, "log_dir", [("a file", probe_files(tmp_path, ".log")[3][1])], model, x, y, cfg)
    p.sweep(os_.train, "callbacks", [("int", [3]), ("str", "abc"), ("one arg", [lambda a: None])], model, x, y,
            cfg)  # fmt: skip
    p.check()
    p.assert_covers(os_, skip=SKIP)
