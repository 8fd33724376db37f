"""Property test of the public API (``iclr24.aemc_ne.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty
inputs, bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import numpy as np

import iclr24.aemc_ne as am
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes


def test_public_api_refuses_bad_input(tmp_path):
    p = Prober()
    d = am.make_synthetic(n_rows=12, n_cols=20, rank=2, seed=0)
    tr = d.train
    n = len(tr)
    # the data container
    ints = probe_arrays((n,), dtype="int64")
    p.sweep(am.Ratings, 0, ints, tr.items, tr.values, tr.n_users, tr.n_items)
    p.sweep(am.Ratings, 2, probe_arrays((n,)), tr.users, tr.items, tr.n_users, tr.n_items)
    p.sweep(am.Ratings, 3, probe_sizes(), tr.users, tr.items, tr.values, tr.n_items)
    x, mask = tr.to_dense()
    p.sweep(am.Ratings.from_dense, 0, probe_arrays(x.shape), mask)
    p.sweep(am.Ratings.from_dense, 1, probe_arrays(mask.shape, dtype="bool"), x)
    p.sweep(tr.split, 0, probe_floats())
    p.sweep(tr.subset, 0, [*ints, ("out of range", np.array([10**6]))])
    p.sweep(tr.to_dense, "fill", probe_floats())
    # generators and configs
    for field in ("n_rows", "n_cols", "rank"):
        p.sweep(am.make_synthetic, field, probe_sizes())
    p.sweep(am.make_synthetic, "obs_rate", probe_floats())
    p.sweep(am.make_synthetic, "response", [("unknown", "nope"), ("int", 3)])
    for field in ("epochs", "eval_every", "batch_size", "patience", "seed"):
        p.sweep(am.FitConfig, field, probe_sizes())
    for field in ("lr", "weight_decay", "l2", "val_fraction"):
        p.sweep(am.FitConfig, field, probe_floats())
    p.sweep(am.FitConfig, "clip", [("nan", (float("nan"), 1.0)), ("reversed", (5, 1)), ("one", (1,))])
    # models: bad architecture, bad data, bad options
    for cls in (am.AEMC, am.AEMCNE):
        p.sweep(cls, "main_hidden", [(k, (v,)) for k, v in probe_sizes()] + [("empty", ())])
        p.sweep(cls, "activation", [("unknown", "nope")])
        p.sweep(cls, "orientation", [("unknown", "diagonal")])
    p.sweep(am.AEMCNE, "skip", probe_floats())
    p.sweep(am.AutoRec, 1, probe_sizes())
    p.sweep(am.MatrixFactorization, "rank", probe_sizes())
    model = am.AEMCNE(main_hidden=(4,), elem_hidden=(3,))
    p.sweep(model.fit, 0, [("dense array", x), ("None", None)])
    p.sweep(model.fit, "epochs", probe_sizes(), tr, quiet=True)
    p.sweep(model.fit, "propensity", probe_arrays(x.shape), tr, epochs=1, quiet=True)
    p.sweep(model.fit, "no_such_option", [("one", 1)], tr, quiet=True)
    model.fit(tr, epochs=2, quiet=True)
    p.sweep(model.predict, 0, ints, tr.items)
    p.sweep(model.predict, 1, [("out of range", np.full(n, 10**6))], tr.users)
    p.sweep(model.response_curve, 0, probe_arrays((5,)))
    p.sweep(model.response_curve, "row", probe_sizes(), np.linspace(-1, 1, 5))
    p.sweep(model.save, 0, [("folder", tmp_path)])
    p.sweep(
        model.save_pretrained, 0, [("a file", probe_files(tmp_path, ".x")[3][1]), ("busy folder", tmp_path)]
    )
    # your own data: loaders and datasets of wrong shapes, dtypes and values
    import torch
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    u, i, v = (torch.from_numpy(a) for a in (tr.users, tr.items, tr.values))
    loaders = [("two fields", TensorDataset(u, i)), ("float ids", TensorDataset(u.float(), i.float(), v)),
               ("2-D fields", DataLoader(TensorDataset(u[:, None], i[:, None], v[:, None]), batch_size=8)),
               ("empty", TensorDataset(u[:0], i[:0], v[:0])), ("inf", TensorDataset(u, i, v * np.inf)),
               ("strings", [("a", "b", "c")])]  # fmt: skip
    p.sweep(model.fit, 0, loaders, epochs=1, quiet=True)
    p.sweep(model.fit, "shape", [("zero", (0, 1)), ("one int", 3), ("too small", (1, 1))], TensorDataset(u, i, v),
            epochs=1, quiet=True)  # fmt: skip
    p.sweep(model.fit, "log_dir", [("a file", probe_files(tmp_path, ".log")[3][1])], tr, epochs=1, quiet=True)
    p.sweep(model.fit, "callbacks", [("not callable", [3])], tr, epochs=1, quiet=True)
    p.sweep(model.fit, "checkpoint", probe_files(tmp_path, ".state"), tr, epochs=1, quiet=True, resume=True)
    for cls in (am.AEMC, am.AEMCNE):
        p.sweep(cls.from_pretrained, 0, probe_files(tmp_path, ""))
    mf = am.MatrixFactorization(rank=2)
    p.sweep(mf.fit, "lr", probe_floats(), tr, epochs=1, quiet=True)
    p.sweep(am.bound_terms, 0, [("mf", mf), ("None", None)])
    p.sweep(am.bound_terms, "zeta", probe_floats(), model)
    # metrics
    for f in (am.rmse, am.relative_rmse):
        p.sweep(f, 0, probe_arrays((6,)), np.ones(6))
        p.sweep(f, 1, probe_arrays((6,)), np.ones(6))
    p(am.relative_rmse, np.ones(4), np.ones(4))  # a constant target: no relative scale
    # loaders on every wrong file kind
    suffixes = (".data", ".base", ".mat", ".pt")
    loaders = (am.load_movielens, am.load_monti, am.movielens_100k_u1, am.movielens_100k_split, am.load_model)
    p.sweep_loaders(loaders, tmp_path, suffixes)
    for suffix in suffixes:
        p.sweep(am.load_movielens_split, 0, probe_files(tmp_path, suffix), tmp_path / "nope.test")
    p.sweep(am.movielens_100k_split, "fold", probe_sizes(), tmp_path)
    p.check()
    p.assert_covers(am)
