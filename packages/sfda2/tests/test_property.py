"""Property test of the public API (``iclr24.sfda2.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty inputs,
bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import torch

import iclr24.sfda2 as sf
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {
    "AdaptResult": "a result record (adapt is probed)",
    "paper_scale": "a dry-run planner of the paper's ImageNet-scale runs (tested in test_paper_scale)",
    "split_timm": "builds a timm backbone (tested in test_models); its num_classes is probed below",
    "mnist_to_digits": "needs MNIST in the data folder; its folder argument is probed below",
}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    pred, labels = torch.randint(0, 3, (12,)), torch.randint(0, 3, (12,))
    ints = probe_arrays((12,), torch=True, dtype="int64")
    # metrics
    for f in (sf.accuracy, sf.per_class_accuracy):
        p.sweep(f, 0, ints, labels)
        p.sweep(f, 1, ints, pred)
    p.sweep(sf.per_class_accuracy, "num_classes", probe_sizes(), pred, labels)
    p.sweep(sf.rsut_indices, 0, ints, labels)
    p.sweep(sf.rsut_indices, "imbalance_ratio", probe_floats(), labels, labels)
    # models
    p.sweep(sf.digits_model, "num_classes", probe_sizes())
    p.sweep(sf.digits_model, "bottleneck_dim", probe_sizes())
    p.sweep(sf.digits_model, "width", probe_sizes())
    p.sweep(sf.pointnet_model, "width", probe_sizes())
    p.sweep(sf.SFDAModel, 0, [("not a module", object())], torch.nn.Identity(), torch.nn.Identity())
    p.sweep(sf.split_timm, 1, [("zero", 0), ("negative", -1), ("float", 2.5)], "resnet18")
    model = sf.digits_model(num_classes=3, bottleneck_dim=8, width=4)
    x = torch.rand(12, 1, 8, 8)
    p.sweep(model, 0, probe_arrays((12, 1, 8, 8), torch=True))
    p.sweep(sf.predict, 1, probe_arrays((12, 1, 8, 8), torch=True), model)
    p.sweep(sf.predict, "batch_size", probe_sizes(), model, x)
    # losses and configs
    p.sweep(sf.SFDA2Loss, 0, probe_sizes(), 8)
    p.sweep(sf.SFDA2Loss, 1, probe_sizes(), 3)
    p.sweep(sf.SFDA2Loss, "K", probe_sizes(), 3, 8)
    p.sweep(sf.SFDA2Loss, "alpha_1", probe_floats(), 3, 8)
    for field in ("batch_size", "max_epoch", "K", "interval"):
        p.sweep(sf.SFDA2Config, field, probe_sizes())
    for field in ("lr", "alpha_1", "alpha_2", "lambda_0", "momentum", "weight_decay"):
        p.sweep(sf.SFDA2Config, field, probe_floats())
    p.sweep(sf.SFDA2Config, "method", [("unknown", "magic")])
    for field in ("epochs", "batch_size"):
        p.sweep(sf.SourceConfig, field, probe_sizes())
    for field in ("lr", "label_smoothing", "backbone_lr_mult"):
        p.sweep(sf.SourceConfig, field, probe_floats())
    scfg = sf.SourceConfig(epochs=1, batch_size=6)
    p.sweep(sf.train_source, 1, probe_arrays((12, 1, 8, 8), torch=True), model, labels, scfg)
    p.sweep(sf.train_source, 2, [*ints, ("out of range", labels + 9)], model, x, scfg)
    p.sweep(sf.train_source, 0, [("not a model", torch.nn.Linear(2, 2))], x, labels, scfg)
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    bad_data = [
        ("no labels", TensorDataset(x)),
        ("float labels", TensorDataset(x, labels.float())),
        ("empty", TensorDataset(x[:0], labels[:0])),
        ("3 channels", DataLoader(TensorDataset(torch.rand(12, 3, 8, 8), labels), batch_size=4)),
        ("labels out of range", [(x[i], 7) for i in range(12)]),
        ("bare images", [x[i] for i in range(12)]),
    ]
    p.sweep(sf.train_source, 1, bad_data, model, config=scfg)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for f, args in (
        (sf.train_source, (model, x, labels, scfg)),
        (sf.adapt, (model, x, sf.SFDA2Config(batch_size=6, max_epoch=1, K=2))),
    ):
        p.sweep(f, "checkpoint", [("a folder", tmp_path)], *args)
        p.sweep(f, "resume", [("str", "yes"), ("without a checkpoint", True)], *args)
        p.sweep(f, "callbacks", [("int", 3), ("list of int", [3])], *args)
        p.sweep(f, "log_dir", [("a file", a_file)], *args)
    p.sweep(
        sf.SFDAModel,
        "arch",
        [("unknown", "vgg"), ("int", 3), ("empty timm", "timm:"), ("bad timm", "timm:nope")],
    )
    p.sweep(sf.SFDAModel, "class_names", [("str", "abc"), ("ints", [1, 2, 3]), ("too few", ["a"])], arch="digits",
            num_classes=3)  # fmt: skip
    p.sweep(sf.SFDAModel.from_pretrained, 0, [*probe_files(tmp_path, ""), *probe_files(tmp_path, ".json")])
    acfg = sf.SFDA2Config(batch_size=6, max_epoch=1, K=2)
    p.sweep(sf.adapt, 1, probe_arrays((12, 1, 8, 8), torch=True), model, acfg)
    p.sweep(sf.adapt, 0, [("not a model", torch.nn.Linear(2, 2))], x, acfg)
    p.sweep(sf.adapt, "labels", ints, model, x, acfg)
    p.sweep(sf.Adapter, 2, probe_sizes(), model, acfg, torch.rand(12, 8), torch.rand(12, 3))
    p.sweep(sf.Adapter, 3, probe_arrays((12, 8), torch=True), model, acfg, 10, torch.rand(12, 3))
    # transforms and data
    for f in (sf.eval_transform, sf.train_transform):
        p.sweep(f, 0, probe_sizes())
        p.sweep(f, 1, probe_sizes(), 32)
    p.sweep(sf.digits_domains, "noise_std", probe_floats())
    p.sweep(sf.digits_domains, "test_fraction", probe_floats())
    p.sweep(
        sf.digits_domains,
        "angle",
        [("reversed", (35.0, 20.0)), ("nan", (float("nan"), 1.0)), ("one", (1.0,))],
    )
    folders = probe_files(tmp_path, "")
    p.sweep(sf.ImageFolderDataset, 0, folders)
    p.sweep(sf.image_folder_domain, 0, folders)
    p.sweep(sf.image_folder_domain, "size", probe_sizes(), tmp_path)
    p.sweep(sf.point_cloud_folder, 0, folders)
    p.sweep(sf.point_cloud_folder, "num_points", probe_sizes(), tmp_path)
    p.sweep(sf.mnist_to_digits, 0, folders)
    p.sweep(sf.synthetic_visda_folder, "n_images", probe_sizes(), tmp_path / "v")
    p.sweep(sf.synthetic_visda_folder, 0, [("a file", tmp_path / "probe-files-0" / "text")], n_images=2)
    p.sweep(sf.load_shot_checkpoint, 0, folders, model)
    p.sweep(sf.load_shot_checkpoint, 1, [("not a model", object())], tmp_path)
    p.check()
    p.assert_covers(sf, skip=SKIP)
