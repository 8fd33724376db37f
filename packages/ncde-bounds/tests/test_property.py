"""Property test of the public API (``iclr24.ncde_bounds.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty
inputs, bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import torch

import iclr24.ncde_bounds as nb
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {"solve_cde": "takes a Control built by the model (probed through NCDE and fit)"}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    times, values = nb.brownian_paths(6, n_fine=16, seed=0)
    targets = torch.randn(6)
    bad_values = probe_arrays(tuple(values.shape), torch=True)
    bad_times = probe_arrays(tuple(times.shape), torch=True)
    # paths
    p.sweep(nb.brownian_paths, 0, probe_sizes(), n_fine=16)
    p.sweep(nb.brownian_paths, "n_fine", probe_sizes(), 4)
    p.sweep(nb.smooth_paths, 0, probe_sizes(), n_fine=16)
    p.sweep(nb.add_time_channel, 0, bad_times, values)
    p.sweep(nb.add_time_channel, 1, bad_values, times)
    p.sweep(nb.total_variation, 0, bad_values)
    p.sweep(nb.total_variation, "lengths", probe_arrays((6,), torch=True, dtype="int64"), values)
    p.sweep(nb.sampling_gap, 0, bad_times)
    p.sweep(nb.uniform_grid_indices, 0, probe_sizes(), 4)
    p.sweep(nb.uniform_grid_indices, 1, probe_sizes(), 16)
    p.sweep(nb.irregular_grid_indices, 2, probe_sizes(), 16, 4)
    idx = nb.uniform_grid_indices(16, 4)
    p.sweep(nb.subsample, 2, [*probe_arrays(tuple(idx.shape), torch=True, dtype="int64"), ("out of range", idx + 99)],
            times, values)  # fmt: skip
    p.sweep(
        nb.pad_series, 0, [("empty", []), ("ragged", [torch.zeros(3)]), ("str", "abc")], [torch.zeros(3, 1)]
    )
    # bounds
    for f, args in ((nb.gronwall_factor, (1.0, 1.0)),):
        p.sweep(f, 0, probe_floats(), *args[1:])
        p.sweep(f, 1, probe_floats(), args[0])
    kw = dict(lipschitz=1.0, max_total_variation=1.0, n=100, readout_norm=1.0)
    for field in ("lipschitz", "max_total_variation", "readout_norm", "delta", "loss_bound"):
        p.sweep(nb.generalization_bound, field, probe_floats(), **{k: v for k, v in kw.items() if k != field})
    p.sweep(nb.generalization_bound, "n", probe_sizes(), **{k: v for k, v in kw.items() if k != "n"})
    p.sweep(nb.risk_decomposition, 0, probe_floats(), 0.1)
    p.sweep(nb.risk_decomposition, 1, probe_floats(), 0.1)
    # models and training
    p.sweep(nb.VectorField, 0, probe_sizes(), 2)
    p.sweep(nb.VectorField, "width", probe_sizes(), 4, 2)
    p.sweep(nb.VectorField, "depth", probe_sizes(), 4, 2)
    p.sweep(nb.lipschitz_upper, 0, [("not a field", torch.nn.Linear(2, 2))])
    p(nb.lipschitz_upper, nb.VectorField(4, 2, width=4))
    p.sweep(nb.NCDE, 0, probe_sizes())
    p.sweep(nb.NCDE, "hidden", probe_sizes(), 1)
    p.sweep(nb.NCDE, "substeps", probe_sizes(), 1)
    p.sweep(nb.NCDE, "solver", [("unknown", "euler9")], 1)
    p.sweep(nb.NCDE, "rtol", probe_floats(), 1, solver="dopri5")
    model = nb.NCDE(values.shape[-1], hidden=4, vector_field_width=4)
    p.sweep(model, 0, bad_times, values)
    p.sweep(model, 1, bad_values, times)
    for field in ("hidden", "width", "depth", "substeps", "epochs", "batch_size"):
        p.sweep(nb.TrainConfig, field, probe_sizes())
    for field in ("lr", "lr_final"):
        p.sweep(nb.TrainConfig, field, probe_floats())
    p.sweep(nb.TrainConfig, "loss", [("unknown", "hinge")])
    cfg = nb.TrainConfig(hidden=4, width=4, epochs=1)
    p.sweep(nb.fit, 1, bad_times, model, values, targets, cfg)
    p.sweep(nb.fit, 2, bad_values, model, times, targets, cfg)
    p.sweep(nb.fit, 3, probe_arrays((6,), torch=True), model, times, values, cfg)
    p.sweep(nb.fit, 0, [("not a model", object())], times, values, targets, cfg)
    p.sweep(nb.evaluate, 3, probe_arrays((6,), torch=True), model, times, values)
    p.sweep(nb.evaluate, "loss", [("unknown", "hinge")], model, times, values, targets)
    # your own Dataset/DataLoader, the step log, resume, model folders
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    tt = times if times.dim() == 2 else times.expand(values.shape[0], -1)
    loaders = [("2 fields", TensorDataset(tt, values)), ("6 fields", TensorDataset(tt, values, *[targets] * 4)),
               ("empty", TensorDataset(tt[:0], values[:0], targets[:0])),
               ("ragged", [(tt[0], values[0], targets[0]), (tt[0, :2], values[0, :2], targets[0])]),
               ("nan values", DataLoader(TensorDataset(tt, values * float("nan"), targets), batch_size=3))]  # fmt: skip
    p.sweep(nb.fit, 1, loaders, model, config=cfg)
    p.sweep(nb.evaluate, 1, loaders, model)
    p.sweep(
        nb.fit, 2, [("values and a loader", values)], model, TensorDataset(tt, values, targets), config=cfg
    )
    p.sweep(nb.fit, 2, [("None", None)], model, times, targets, cfg)
    (tmp_path / "a-file").write_text("x")
    p.sweep(nb.fit, "log_dir", [("a file", tmp_path / "a-file")], model, times, values, targets, cfg)
    p.sweep(nb.fit, "checkpoint", [("a folder", tmp_path), *probe_files(tmp_path, ".pt")[2:]], model, times,
            values, targets, cfg, resume=True)  # fmt: skip
    p.sweep(nb.NCDE.from_pretrained, 0, probe_files(tmp_path, ""))
    p.sweep(model.save_pretrained, 0, [("a file", tmp_path / "a-file"), ("non-empty folder", tmp_path)])
    # the teacher CDE
    p.sweep(nb.true_cde, 0, probe_sizes())
    p.sweep(nb.true_cde, "weight_scale", probe_floats(), 3, 2)
    teacher = nb.true_cde(3, values.shape[-1] - 1 if values.shape[-1] > 1 else 1)
    p.sweep(nb.sampling_bias_oracle, 2, bad_values, teacher, times, {"u": idx})
    p.sweep(nb.sampling_bias_oracle, 3, [("empty", {}), ("not indices", {"u": torch.rand(4)})], teacher, times,
            values)  # fmt: skip
    p.sweep(nb.sampling_bias_oracle, "substeps", probe_sizes(), teacher, times, values, {"u": idx})
    # files
    p.sweep(nb.load_ts, 0, [*probe_files(tmp_path, ".ts"), *probe_files(tmp_path, ".txt")])
    p.sweep(nb.load_aeon, 0, [("unknown", "NoSuchSet"), ("int", 3)], data_dir=tmp_path)
    p.sweep(nb.load_aeon, "split", [("unknown", "dev")], "BasicMotions", data_dir=tmp_path)
    p.check()
    p.assert_covers(nb, skip=SKIP)
