"""Property test of the public API (``iclr24.srigl.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty
inputs, bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import torch

import iclr24.srigl as sr
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {
    "NonFiniteError": "an error class",
    "TrainResult": "a result record",
    "SparseLayer": "the sparsifier's own per-layer record (built by Sparsifier)",
}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    g = torch.Generator().manual_seed(0)
    # masks and budgets
    for i in range(3):
        args = [6, 8, 3]
        p.sweep(sr.random_constant_fan_in_mask, i, probe_sizes(), *args[:i], *args[i + 1 :], generator=g)
        p.sweep(sr.random_unstructured_mask, i, probe_sizes(), *args[:i], *args[i + 1 :], generator=g)
    for i in range(3):
        args = [24, 6, 8]
        p.sweep(sr.constant_fan_in, i, probe_sizes(), *args[:i], *args[i + 1 :])
    p.sweep(sr.layer_budget, 0, probe_sizes(), 0.5)
    p.sweep(sr.layer_budget, 1, probe_floats(), 100)
    p.sweep(
        sr.erk_densities,
        0,
        [("empty", []), ("ragged", [[3, 4], [5]]), ("zero", [[0, 4]]), ("str", "ab")],
        0.5,
    )
    p.sweep(sr.erk_densities, 1, probe_floats(), [[4, 8], [8, 2]])
    p.sweep(sr.cosine_drop_fraction, 0, probe_sizes(), 0.3, 100)
    p.sweep(sr.cosine_drop_fraction, 1, probe_floats(), 5, 100)
    p.sweep(sr.cosine_drop_fraction, 2, probe_sizes(), 5, 0.3)
    p.sweep(sr.is_update_step, 1, probe_sizes(), 5, 100)
    p.sweep(sr.auto_variant, 0, probe_floats(), 64, False)
    p.sweep(sr.auto_variant, 1, probe_sizes(), 0.1, False)
    # the update rules on (out, in) weights
    w = torch.randn(6, 8)
    mask = sr.random_constant_fan_in_mask(6, 8, 3, generator=g)
    bad_w = probe_arrays((6, 8), torch=True)
    bad_mask = probe_arrays((6, 8), torch=True, dtype="bool")
    p.sweep(sr.rigl_update, 0, bad_w, w, mask, 0.3)
    p.sweep(sr.rigl_update, 1, bad_w, w, mask, 0.3)
    p.sweep(sr.rigl_update, 2, bad_mask, w, w, 0.3)
    p.sweep(sr.rigl_update, 3, probe_floats(), w, w, mask)
    p.sweep(sr.srigl_update, 0, bad_w, w, mask, 0.3, 18, 3)
    p.sweep(sr.srigl_update, 2, bad_mask, w, w, 0.3, 18, 3)
    p.sweep(sr.srigl_update, 4, probe_sizes(), w, w, mask, 0.3, 3)
    p.sweep(sr.srigl_update, "gamma_sal", probe_floats(), w, w, mask, 0.3, 18, 3)
    p.sweep(sr.ablate_neurons, 0, bad_w, w, mask, 4, 1, 0.3, 3, 18)
    p.sweep(sr.ablate_neurons, 3, probe_sizes(), w, w, mask, 1, 0.3, 3, 18)
    # condensed layers
    values, indices = torch.randn(6, 3), torch.randint(0, 8, (6, 3))
    x = torch.randn(4, 8)
    p.sweep(sr.condensed_linear, 0, probe_arrays((4, 8), torch=True), values, indices)
    p.sweep(sr.condensed_linear, 1, probe_arrays((6, 3), torch=True), x, indices)
    p.sweep(sr.condensed_linear, 2, [*probe_arrays((6, 3), torch=True, dtype="int64"), ("out of range", indices + 99)],
            x, values)  # fmt: skip
    p.sweep(sr.condensed_linear, "variant", [("unknown", "magic")], x, values, indices)
    p.sweep(sr.CondensedLinear, 0, probe_arrays((6, 3), torch=True), indices, None, 8, torch.arange(6))
    p.sweep(sr.CondensedLinear, 3, probe_sizes(), values, indices, None, torch.arange(6))
    lin = sr.CondensedLinear(values, indices, None, 8, torch.arange(6))
    p.sweep(lin, 0, probe_arrays((4, 8), torch=True))
    p.sweep(sr.CondensedConv2d, 1, probe_sizes(), lin, 3, 1, 0, 1)
    # models, sparsifiers, training
    p.sweep(sr.mlp, 0, probe_sizes())
    p.sweep(sr.mlp, 1, [(k, (v,)) for k, v in probe_sizes()])
    p.sweep(sr.build_model, 0, [("unknown", "transformer"), ("int", 3)], (64,), 10)
    p.sweep(sr.build_model, 1, [("empty", ()), ("negative", (-1,)), ("huge", (10**20,))], "mlp", 10)
    p.sweep(sr.build_model, 2, probe_sizes(), "mlp", (64,))
    model = sr.mlp(8, (16,), 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for cls in (sr.RigL, sr.SRigL, sr.StaticSparse, sr.Sparsifier):
        p.sweep(cls, 2, probe_floats(), model, opt, 100)
        p.sweep(cls, 3, probe_sizes(), model, opt, 0.5)
    p.sweep(sr.RigL, "delta_t", probe_sizes(), model, opt, 0.5, 100)
    p.sweep(sr.RigL, "distribution", [("unknown", "magic")], model, opt, 0.5, 100)
    p.sweep(sr.Dense, 0, [("not a model", object())], opt)
    p.sweep(sr.make_sparsifier, 0, [("unknown", "magic")], model, opt, 0.5, 100)
    p.sweep(sr.StaticSparse, "structure", [("unknown", "diagonal")], model, opt, 0.5, 100)
    p.sweep(sr.condense, 0, [("not a model", object())])
    p.sweep(sr.condense, "variant", [("unknown", "magic")], model)
    data = sr.digits_split(0)
    small = sr.Split(data.x_train[:40], data.y_train[:40], data.x_test[:20], data.y_test[:20], 10, "digits")
    p.sweep(sr.Split, 0, probe_arrays((40, 64), torch=True), small.y_train, small.x_test, small.y_test, 10)
    p.sweep(
        sr.Split,
        1,
        probe_arrays((40,), torch=True, dtype="int64"),
        small.x_train,
        small.x_test,
        small.y_test,
        10,
    )
    p.sweep(sr.Split, 4, probe_sizes(), small.x_train, small.y_train, small.x_test, small.y_test)
    p.sweep(sr.evaluate, 1, probe_arrays((20, 64), torch=True), sr.mlp(64, (8,), 10), small.y_test)
    p.sweep(sr.evaluate, "batch_size", probe_sizes(), sr.mlp(64, (8,), 10), small.x_test, small.y_test)
    for field in ("epochs", "batch_size", "delta_t", "seed", "warmup_epochs"):
        p.sweep(sr.TrainConfig, field, probe_sizes())
    for field in ("sparsity", "lr", "momentum", "alpha", "gamma_sal", "label_smoothing", "t_end_fraction"):
        p.sweep(sr.TrainConfig, field, probe_floats())
    p.sweep(sr.TrainConfig, "method", [("unknown", "magic")])
    p.sweep(sr.TrainConfig, "hidden", [("empty", ()), ("zero", (0,)), ("huge", (10**20,))])
    cfg = sr.TrainConfig(epochs=1, hidden=(8,), batch_size=16, delta_t=2)
    p.sweep(sr.train, 1, [("not a split", (data.x_train, data.y_train))], cfg)
    # loaders
    p.sweep(sr.digits_split, 0, [("negative", -1), ("float", 2.5), ("huge", 10**20)])
    p.sweep(sr.load_npz, 0, [*probe_files(tmp_path, ".npz"), *probe_files(tmp_path, ".txt")])
    p.sweep(sr.load_data, 0, [("unknown", "imagenet"), ("int", 3), ("missing npz", str(tmp_path / "x.npz"))],
            data_dir=tmp_path)  # fmt: skip
    # the model folder and your own data
    p.sweep(sr.SparseModel.from_pretrained, 0, probe_files(tmp_path, ""))
    p.sweep(sr.SparseModel, "model", [("unknown", "transformer"), ("int", 3)])
    p.sweep(sr.SparseModel, "masked", [("unknown", ["nope.weight"]), ("str", "0.weight"), ("ints", [1, 2])])
    p.sweep(sr.SparseModel, "input_shape", [("empty", ()), ("negative", (-1,))])
    test = (small.x_test, small.y_test)
    p.sweep(sr.Split.from_data, 0, [*probe_arrays((40, 64), torch=True), *probe_sizes()], test)
    p.sweep(sr.train, 1, [(f"train {k}", (v, test)) for k, v in probe_arrays((40, 64), torch=True)], cfg)
    p.sweep(sr.train, "checkpoint", probe_files(tmp_path, ".pt"), cfg, small, resume=True)
    p.check()
    p.assert_covers(sr, skip=SKIP)
