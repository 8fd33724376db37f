"""Property test of the public API (``iclr24.task_geometry.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty
inputs and bad sizes either work or raise InputError; nothing else escapes."""

import numpy as np
import torch

import iclr24.task_geometry as tg
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {
    "ACTIVATIONS": "a table of activation classes (make_activation is probed through MLP/TrainConfig)",
    "AUTHORS": "a TrainConfig constant",
    "Geometry": "a result record (measure is probed)",
    "Student": "a record train_student builds (its representation and accuracy are probed)",
    "Task": "a record walsh_cube/random_kernel build (its trials method is probed)",
}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    rng = np.random.default_rng(0)
    P, N = 4, 5
    cond = np.repeat(np.arange(P), 3)
    Z = rng.standard_normal((len(cond), N))
    means = rng.standard_normal((P, N))
    y = np.array([0, 0, 1, 1])
    K = means @ means.T
    conds = [*probe_arrays((len(cond),), dtype="int64"), ("missing condition", np.zeros(len(cond), dtype=int)),
             ("negative", cond - 1), ("strings", np.array(["a"] * len(cond)))]  # fmt: skip
    dichos = [*probe_arrays((P,), dtype="int64"), ("unbalanced", np.array([0, 1, 1, 1])),
              ("not 0/1", np.array([0, 2, 1, 1]))]  # fmt: skip
    # metrics
    p.sweep(tg.condition_means, 0, probe_arrays(Z.shape), cond)
    p.sweep(tg.condition_means, 1, conds, Z)
    p.sweep(tg.condition_means, 2, probe_sizes(), Z, cond)
    p.sweep(tg.kernel, 0, probe_arrays(means.shape))
    p.sweep(tg.cka, 0, probe_arrays(K.shape), K)
    p.sweep(tg.cka, 1, [*probe_arrays(K.shape), ("constant", np.ones_like(K))], K)
    p.sweep(tg.kernel_alignment, 0, probe_arrays(means.shape), means)
    p.sweep(tg.balanced_dichotomies, 0, probe_sizes())
    p.sweep(tg.balanced_dichotomies, 1, probe_sizes(), 6)
    p.sweep(tg.balanced_dichotomies, "seed", probe_sizes(), 8, 3)
    p.sweep(tg.parallelism_score, 0, probe_arrays(means.shape), y)
    p.sweep(tg.parallelism_score, 1, dichos, means)
    p.sweep(tg.parallelism_score, "max_pairings", probe_sizes(), means, y)
    p.sweep(tg.participation_ratio, 0, [*probe_arrays(means.shape), ("constant", np.ones_like(means))])
    for f in (tg.ccgp, tg.decodability):
        p.sweep(f, 0, probe_arrays(Z.shape), cond, y, classifier="ridge")
        p.sweep(f, 1, conds, Z, y, classifier="ridge")
        p.sweep(f, 2, dichos, Z, cond, classifier="ridge")
        p.sweep(f, "classifier", [("unknown", "knn"), ("int", 3)], Z, cond, y)
        p.sweep(f, "C", probe_floats(), Z, cond, y)
        p.sweep(f, "ridge", probe_floats(), Z, cond, y, classifier="ridge")
        p.sweep(f, "seed", probe_sizes(), Z, cond, y, classifier="ridge")
    p.sweep(tg.ccgp, "max_splits", probe_sizes(), Z, cond, y, classifier="ridge")
    p.sweep(tg.ccgp, "n_train_per_side", probe_sizes(), Z, cond, y, classifier="ridge")
    p.sweep(tg.decodability, "test_fraction", probe_floats(), Z, cond, y, classifier="ridge")
    p.sweep(tg.decodability, "rep_noise", probe_floats(), Z, cond, y, classifier="ridge")
    p.sweep(tg.shattering_dim, 0, probe_arrays(Z.shape), cond, classifier="ridge")
    p.sweep(tg.shattering_dim, 1, conds, Z, classifier="ridge")
    p.sweep(tg.shattering_dim, "exclude", dichos, Z, cond, classifier="ridge")
    p.sweep(tg.shattering_dim, "max_dichotomies", probe_sizes(), Z, cond, classifier="ridge")
    # tasks
    p.sweep(tg.alignment_of_a, 0, probe_floats(), 8, 1)
    p.sweep(tg.alignment_of_a, 1, probe_sizes(), 1.0, 1)
    p.sweep(tg.alignment_of_a, 2, probe_sizes(), 1.0, 8)
    p.sweep(tg.a_of_alignment, 0, probe_floats(), 8, 1)
    p.sweep(tg.a_of_alignment, 1, probe_sizes(), 0.5, 1)
    small = dict(dim=8, n_samples=16)
    p.sweep(tg.walsh_cube, 0, probe_sizes(), **small)
    p.sweep(tg.walsh_cube, 1, probe_sizes(), 2, **small)
    p.sweep(tg.walsh_cube, 2, probe_floats(), 2, 1, **small)
    p.sweep(tg.walsh_cube, "alignment", probe_floats(), 2, 1, **small)
    for field in ("dim", "n_samples", "seed", "expansion_seed"):
        p.sweep(tg.walsh_cube, field, probe_sizes(), 2, 1, **{k: v for k, v in small.items() if k != field})
    p.sweep(tg.walsh_cube, "noise", probe_floats(), 2, 1, **small)
    p.sweep(tg.random_kernel, 0, probe_sizes(), **small)
    p.sweep(tg.random_kernel, 1, probe_sizes(), 4, **small)
    p.sweep(tg.random_kernel, 2, probe_floats(), 4, 1, **small)
    p.sweep(tg.random_kernel, "max_rank", probe_sizes(), 4, 1, **small)
    p.sweep(tg.random_kernel, "noise", probe_floats(), 4, 1, **small)
    for field in ("dim", "n_samples", "seed"):
        p.sweep(
            tg.random_kernel, field, probe_sizes(), 4, 1, **{k: v for k, v in small.items() if k != field}
        )
    p(tg.cube_dichotomy_classes)
    task = tg.walsh_cube(2, 1, **small)
    p.sweep(task.trials, 0, probe_sizes())
    p.sweep(task.trials, "noise", probe_floats(), 2)
    # students
    for field in ("width", "depth", "batch_size", "epochs", "record_every"):
        p.sweep(tg.TrainConfig, field, probe_sizes())
    p.sweep(tg.TrainConfig, "lr", probe_floats())
    p.sweep(tg.TrainConfig, "stop_tol", probe_floats())
    p.sweep(tg.balanced_readout, 0, probe_sizes(), 8)
    p.sweep(tg.balanced_readout, 1, probe_sizes(), 2)
    p.sweep(tg.MLP, 0, probe_sizes(), 1, width=4)
    p.sweep(tg.MLP, 1, probe_sizes(), 4, width=4)
    p.sweep(tg.MLP, "width", probe_sizes(), 4, 1)
    p.sweep(tg.MLP, "depth", probe_sizes(), 4, 1, width=4)
    p.sweep(tg.MLP, "act", [("unknown", "gelu7"), ("int", 3)], 4, 1, width=4)
    mlp = tg.MLP(8, 1, width=4)
    p.sweep(mlp, 0, probe_arrays((6, 8), torch=True))
    p.sweep(mlp.representation, 0, probe_arrays((6, 8)))
    p.sweep(mlp.representation, "layer", probe_sizes(), task.X[:6])
    cfg = tg.TrainConfig(width=4, epochs=1, batch_size=8)
    X, Y = task.X, task.Y
    p.sweep(tg.train_student, 0, [*((k, (v, Y)) for k, v in probe_arrays(tuple(X.shape), torch=True)),
                                  ("not a task", object()), ("wrong targets", (X, Y * 2))], "tanh", cfg)  # fmt: skip
    p.sweep(tg.train_student, 1, [("unknown", "gelu7"), ("int", 3)], task, cfg)
    p.sweep(tg.train_student, 2, [("not a config", {"epochs": 1})], task, "tanh")
    p.sweep(tg.train_student, "seed", probe_sizes(), task, "tanh", cfg)
    p.sweep(tg.train_students, 0, [("empty", []), ("not a list", task)], ["tanh"], [0], cfg)
    p.sweep(tg.train_students, 2, [("float", [1.5]), ("string", ["a"])], [task], ["tanh"], cfg)
    # your own data, logging, resume, model folders
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    loaders = [("3 fields", DataLoader(TensorDataset(X, Y, Y), batch_size=8)),
               ("ragged", [torch.zeros(3, 2), torch.zeros(4, 2)]),
               ("wrong targets", DataLoader(TensorDataset(X, Y * 3), batch_size=8)),
               ("empty", TensorDataset(X[:0], Y[:0]))]  # fmt: skip
    p.sweep(tg.train_student, 0, loaders, "tanh", cfg)
    (tmp_path / "a-file").write_text("x")
    p.sweep(tg.train_student, "log_dir", [("a file", tmp_path / "a-file")], task, "tanh", cfg)
    p.sweep(tg.train_student, "checkpoint", [("a folder", tmp_path), *probe_files(tmp_path, ".pt")[2:]], task,
            "tanh", cfg, resume=True)  # fmt: skip
    p.sweep(tg.Student.from_pretrained, 0, probe_files(tmp_path, ""))
    p.sweep(tg.MLP.from_pretrained, 0, probe_files(tmp_path, ""))
    p.sweep(tg.SmallCNN.from_pretrained, 0, probe_files(tmp_path, ""))
    st = tg.train_student(task, "tanh", cfg)
    p.sweep(st.save_pretrained, 0, [("a file", tmp_path / "a-file"), ("non-empty folder", tmp_path)])
    p.sweep(st.accuracy, 0, probe_arrays(tuple(X.shape), torch=True), Y)
    p.sweep(st.accuracy, 1, probe_arrays(tuple(Y.shape), torch=True), X)
    # measure
    p.sweep(tg.measure, 0, probe_arrays(Z.shape), cond, targets=y, classifier="ridge")
    p.sweep(tg.measure, 1, conds, Z, targets=y, classifier="ridge")
    p.sweep(tg.measure, "targets", dichos, Z, cond, classifier="ridge")
    p.sweep(tg.measure, "means", probe_arrays(means.shape), Z, cond, targets=y, classifier="ridge")
    p.sweep(tg.measure, "input_kernel", probe_arrays(K.shape), Z, cond, targets=y, classifier="ridge")
    p.sweep(tg.measure, "inputs", probe_arrays(Z.shape), Z, cond, targets=y, classifier="ridge")
    xt, ct = task.trials(3)
    p.sweep(
        tg.measure, "layer", [("unknown", "nope"), ("int", 0)], mlp, ct, targets=y[:, None][:4], inputs=xt
    )
    p.sweep(tg.activations, 0, [("not a model", object())], xt, "hidden")
    p.sweep(tg.activations, 1, probe_arrays(tuple(xt.shape), torch=True), mlp, "hidden")
    p.sweep(tg.activations, "batch_size", probe_sizes(), mlp, xt, "hidden")
    # CNN
    p(tg.digit_dichotomies)
    p.sweep(tg.SmallCNN, 0, probe_sizes(), side=8, width=4)
    p.sweep(tg.SmallCNN, "side", probe_sizes(), 2, width=4)
    p.sweep(tg.SmallCNN, "width", probe_sizes(), 2, side=8)
    p.sweep(tg.SmallCNN, "in_channels", probe_sizes(), 2, side=8, width=4)
    p.sweep(tg.SmallCNN, "act", [("unknown", "gelu7")], 2, side=8, width=4)
    cnn = tg.SmallCNN(2, side=8, width=4)
    p.sweep(cnn, 0, probe_arrays((6, 1, 8, 8), torch=True))
    imgs, labels, targets = rng.random((10, 64)).astype(np.float32), np.arange(10), tg.digit_dichotomies()
    small_cnn = dict(side=8, epochs=1, batch_size=5)
    p.sweep(tg.train_cnn, 0, probe_arrays(imgs.shape), labels, targets, **small_cnn)
    p.sweep(tg.train_cnn, 1, probe_arrays((10,), dtype="int64"), imgs, targets, **small_cnn)
    p.sweep(tg.train_cnn, 2, probe_arrays(targets.shape), imgs, labels, **small_cnn)
    for field in ("epochs", "batch_size", "seed", "in_channels"):
        p.sweep(
            tg.train_cnn,
            field,
            probe_sizes(),
            imgs,
            labels,
            targets,
            **{k: v for k, v in small_cnn.items() if k != field},
        )
    p.sweep(tg.train_cnn, "lr", probe_floats(), imgs, labels, targets, **small_cnn)
    pairs = TensorDataset(torch.as_tensor(imgs), torch.as_tensor(labels))
    p.sweep(tg.train_cnn, 0, [("3 fields", TensorDataset(torch.as_tensor(imgs), *[torch.as_tensor(labels)] * 2)),
                              ("float labels", TensorDataset(torch.as_tensor(imgs), torch.zeros(10)))],
            None, targets, **small_cnn)  # fmt: skip
    p.sweep(tg.train_cnn, 1, [("labels and a dataset", labels)], pairs, targets, **small_cnn)
    p.sweep(tg.train_cnn, 2, [("None", None)], pairs, None, **small_cnn)
    p.sweep(tg.measure_cnn, 0, [("not a model", object())], imgs, labels, targets)
    p.sweep(tg.measure_cnn, 1, probe_arrays(imgs.shape), cnn, labels, targets)
    p.sweep(tg.measure_cnn, 2, probe_arrays((10,), dtype="int64"), cnn, imgs, targets)
    # sweeps and plots
    p.sweep(tg.SweepConfig, "cells", [("empty", ()), ("not pairs", ((1,),)), ("bad k", ((99, 1.0),)),
                                      ("not a tuple", 3)])  # fmt: skip
    p.sweep(tg.SweepConfig, "acts", [("empty", ()), ("unknown", ("gelu7",)), ("a string", "tanh")])
    p.sweep(tg.SweepConfig, "seeds", [("empty", ()), ("float", (1.5,))])
    for field in ("n_bits", "dim", "n_samples", "trials_per_condition"):
        p.sweep(tg.SweepConfig, field, probe_sizes())
    for field in ("noise", "test_noise", "rep_noise"):
        p.sweep(tg.SweepConfig, field, probe_floats())
    p.sweep(tg.SweepConfig, "classifier", [("unknown", "knn")])
    p.sweep(tg.SweepConfig, "train", [("not a config", {"epochs": 1})])
    p.sweep(tg.run_sweep, 0, [("not a config", {"cells": ()})], show_progress=False)
    p.sweep(tg.summarise, 0, [("empty", []), ("not rows", [1, 2]), ("missing keys", [{"k": 1}])])
    p.sweep(tg.plot_alignment_sweep, 0, [("empty", {}), ("not a summary", [1])])
    p.sweep(
        tg.plot_alignment_sweep, "metrics", [("unknown", ("nope",))], {(1, 0.0, "tanh"): {"alignment": 0.1}}
    )
    p.sweep(
        tg.plot_condition_means, 0, [("empty", {}), *((k, {"a": v}) for k, v in probe_arrays(means.shape))], y
    )
    p.sweep(tg.plot_condition_means, 1, probe_arrays((P,)), {"a": means})
    p.check()
    p.assert_covers(tg, skip=SKIP)
