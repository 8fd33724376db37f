"""Property test of the public API (``iclr24.tab_snn.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty inputs,
bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import torch

import iclr24.tab_snn as ts
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {"TrainResult": "a result record (train_model is probed)"}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    T = 2
    # neurons and norms
    p.sweep(ts.LIF, 0, probe_floats())
    p.sweep(ts.LIF, 1, probe_floats())
    p.sweep(ts.LIF, "surrogate", [("unknown", "magic")])
    p.sweep(ts.LIF, "layout", [("unknown", "XY")])
    lif = ts.LIF()
    p.sweep(lif, 0, probe_arrays((T, 3, 4), torch=True))
    for cls in (ts.TAB, ts.BNTT, ts.TDBN, ts.TEBN, ts.SeqBN):
        p.sweep(cls, 0, probe_sizes(), T)
        p.sweep(cls, 1, probe_sizes(), 4)
        p.sweep(cls, "eps", probe_floats(), 4, T)
        p.sweep(cls, "momentum", probe_floats(), 4, T)
        norm = cls(4, T)
        p.sweep(norm, 0, probe_arrays((3 * T, 4), torch=True))
    p.sweep(ts.make_norm, 0, [("unknown", "layernorm"), ("int", 3)], 4, T)
    p.sweep(ts.make_norm, 1, probe_sizes(), "tab", T)
    p.sweep(ts.ReadoutIntegrator, "layout", [("unknown", "XY")])
    p.sweep(ts.ReadoutIntegrator(), 0, probe_arrays((3 * T, 4), torch=True))
    p.sweep(ts.direct_encoding, 0, probe_arrays((3, 4), torch=True), T)
    p.sweep(ts.direct_encoding, 1, probe_sizes(), torch.rand(3, 4))
    # models
    p.sweep(ts.SpikingMLP, 0, probe_sizes(), 3, T, hidden=(8,))
    p.sweep(ts.SpikingMLP, 2, probe_sizes(), 4, 3, hidden=(8,))
    p.sweep(ts.SpikingMLP, "hidden", [(k, (v,)) for k, v in probe_sizes()] + [("empty", ())], 4, 3, T)
    p.sweep(ts.SpikingMLP, "norm", [("unknown", "layernorm")], 4, 3, T, hidden=(8,))
    p.sweep(ts.SpikingMLP, "tau", probe_floats(), 4, 3, T, hidden=(8,))
    for cls in (ts.SpikingVGG9, ts.SpikingResNet19):
        p.sweep(cls, "width", probe_floats(), 3, T, input_size=8)
        p.sweep(cls, "input_size", probe_sizes(), 3, T, width=0.125)
        p.sweep(cls, "dropout", probe_floats(), 3, T, input_size=8, width=0.125)
    p.sweep(ts.build_model, 0, [("unknown", "resnet50"), ("int", 3)], num_classes=3, T=T)
    mlp = ts.SpikingMLP(4, 3, T, hidden=(8,))
    p.sweep(mlp, 0, probe_arrays((3, 4), torch=True))
    p.sweep(ts.firing_rates, 0, [("not a model", object())])
    p(ts.firing_rates, mlp)
    x, y = torch.rand(12, 4), torch.arange(12) % 3
    p.sweep(ts.evaluate, 1, probe_arrays((12, 4), torch=True), mlp, y)
    p.sweep(
        ts.evaluate, 2, [*probe_arrays((12,), torch=True, dtype="int64"), ("out of range", y + 9)], mlp, x
    )
    p.sweep(ts.evaluate, "batch_size", probe_sizes(), mlp, x, y)
    # training
    for field in ("epochs", "batch_size", "seed"):
        p.sweep(ts.TrainConfig, field, probe_sizes())
    for field in ("lr", "momentum", "weight_decay"):
        p.sweep(ts.TrainConfig, field, probe_floats())
    cfg = ts.TrainConfig(epochs=1, batch_size=6)
    p.sweep(ts.train_model, 1, probe_arrays((12, 4), torch=True), mlp, y, x, y, cfg, progress=False)
    p.sweep(
        ts.train_model, 2, probe_arrays((12,), torch=True, dtype="int64"), mlp, x, x, y, cfg, progress=False
    )
    p.sweep(ts.train_model, 0, [("not a model", object())], x, y, x, y, cfg, progress=False)
    # your own Dataset/DataLoader, the step log, resume, model folders
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    loaders = [("3 fields", TensorDataset(x, y, y)), ("float labels", DataLoader(TensorDataset(x, y.float()), 4)),
               ("ragged", [x[:2], x[:3]]), ("empty", TensorDataset(x[:0], y[:0]))]  # fmt: skip
    p.sweep(ts.train_model, 1, loaders, mlp, None, x, y, cfg, progress=False)
    p.sweep(
        ts.train_model, 2, [("labels and a loader", y)], mlp, TensorDataset(x, y), x, y, cfg, progress=False
    )
    (tmp_path / "a-file").write_text("x")
    p.sweep(
        ts.train_model, "log_dir", [("a file", tmp_path / "a-file")], mlp, x, y, x, y, cfg, progress=False
    )
    p.sweep(ts.train_model, "checkpoint", [("a folder", tmp_path), *probe_files(tmp_path, ".pt")[2:]], mlp, x, y,
            x, y, cfg, progress=False, resume=True)  # fmt: skip
    for cls in (ts.SpikingMLP, ts.SpikingVGG9, ts.SpikingResNet19):
        p.sweep(cls.from_pretrained, 0, probe_files(tmp_path, ""))
    p.sweep(mlp.save_pretrained, 0, [("a file", tmp_path / "a-file"), ("non-empty folder", tmp_path)])
    data = ts.static_digits(T=T)
    small = ts.TemporalData(
        "d", data.x_train[:12], data.y_train[:12], data.x_test[:6], data.y_test[:6], 10, T
    )
    p.sweep(ts.TemporalData, 1, probe_arrays(tuple(small.x_train.shape), torch=True), "d", small.y_train,
            small.x_test, small.y_test, 10, T)  # fmt: skip
    p.sweep(ts.TemporalData, 2, [*probe_arrays((12,), torch=True, dtype="int64"), ("out of range", small.y_train + 10)],
            "d", small.x_train, small.x_test, small.y_test, 10, T)  # fmt: skip
    p.sweep(
        ts.TemporalData, "T", probe_sizes(), "d", small.x_train, small.y_train, small.x_test, small.y_test, 10
    )
    p.sweep(ts.train_on, 1, [("unknown", "layernorm")], small, cfg, hidden=(8,), progress=False)
    p.sweep(ts.train_on, 0, [("not data", (x, y))], "tab", cfg, progress=False)
    p.sweep(ts.train_packed, 1, [("empty", []), ("unknown", ["layernorm"])], small, [0], cfg, hidden=(8,),
            progress=False)  # fmt: skip
    p.sweep(ts.train_packed, 2, [("empty", []), ("not ints", [1.5])], small, ["tab"], cfg, hidden=(8,),
            progress=False)  # fmt: skip
    # data
    p.sweep(ts.static_digits, 0, probe_sizes())
    p.sweep(ts.static_digits, "test_fraction", probe_floats())
    p.sweep(ts.seq_digits, "test_fraction", probe_floats())
    p.sweep(ts.seq_mnist, 0, probe_files(tmp_path, ""))
    p.sweep(ts.seq_mnist, "n_train", probe_sizes(), tmp_path)
    p.sweep(ts.load_cifar, 0, probe_files(tmp_path, ""))
    p.sweep(ts.load_cifar, "num_classes", probe_sizes(), tmp_path)
    p.sweep(ts.load_dvs_cifar10, 0, probe_files(tmp_path, ""))
    p.sweep(ts.load_dvs_cifar10, "T", probe_sizes(), tmp_path)
    p.check()
    p.assert_covers(ts, skip=SKIP)
