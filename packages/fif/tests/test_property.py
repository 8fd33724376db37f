"""Property test of the public API (``iclr24.fif.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty inputs,
bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import torch

import iclr24.fif as fif
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {"NonFiniteLossError": "an error class"}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    x = torch.randn(16, 2)
    bad = probe_arrays((16, 2), torch=True)
    # metrics
    for f in (fif.mmd_rbf, fif.sliced_wasserstein):
        p.sweep(f, 0, bad, x)
        p.sweep(f, 1, bad, x)
    p.sweep(fif.mmd_rbf, "scales", [("empty", ()), ("negative", (-1.0,)), ("nan", (float("nan"),))], x, x)
    p.sweep(fif.mmd_rbf, "max_points", probe_sizes(), x, x)
    p.sweep(fif.sliced_wasserstein, "n_projections", probe_sizes(), x, x)
    # networks and the flow
    p.sweep(fif.resnet_pair, 0, probe_sizes(), 1, n_blocks=1, widths=(8,))
    p.sweep(fif.resnet_pair, 1, probe_sizes(), 2, n_blocks=1, widths=(8,))
    p.sweep(fif.resnet_pair, "n_blocks", probe_sizes(), 2, 1, widths=(8,))
    p.sweep(
        fif.resnet_pair, "widths", [(k, (v,)) for k, v in probe_sizes()] + [("empty", ())], 2, 1, n_blocks=1
    )
    p.sweep(
        fif.conv_pair, 0, [("empty", ()), ("2-d", (8, 8)), ("zero", (0, 8, 8)), ("huge", (1, 10**20, 8))], 4
    )
    p.sweep(fif.conv_pair, 1, probe_sizes(), (1, 8, 8), ch_factor=2, hidden=8)
    enc, dec = fif.resnet_pair(2, 1, n_blocks=1, widths=(8,))
    p.sweep(fif.FreeFormInjectiveFlow, "data_dim", probe_sizes(), enc, dec, latent_dim=1)
    p.sweep(fif.FreeFormInjectiveFlow, "beta", probe_floats(), enc, dec, data_dim=2, latent_dim=1)
    p.sweep(
        fif.FreeFormInjectiveFlow, "hutchinson_samples", probe_sizes(), enc, dec, data_dim=2, latent_dim=1
    )
    p.sweep(fif.FreeFormInjectiveFlow, "log_det", [("unknown", "magic")], enc, dec, data_dim=2, latent_dim=1)
    p.sweep(fif.FreeFormInjectiveFlow, 0, [("not a module", object())], dec, data_dim=2, latent_dim=1)
    model = fif.FreeFormInjectiveFlow(enc, dec, data_dim=2, latent_dim=1)
    for name in ("encode", "decode", "reconstruct", "log_prob", "loss"):
        if hasattr(model, name):
            shape = (16, 1) if name == "decode" else (16, 2)
            p.sweep(getattr(model, name), 0, probe_arrays(shape, torch=True))
    if hasattr(model, "sample"):
        p.sweep(model.sample, 0, probe_sizes())
    p.sweep(fif.fif_loss, 0, bad, enc, dec)
    p.sweep(fif.fif_loss, "beta", probe_floats(), x, enc, dec)
    p.sweep(fif.fif_loss, "hutchinson_samples", probe_sizes(), x, enc, dec)
    p.sweep(fif.fif_loss, 1, [("not callable", 3)], x, dec)
    p.sweep(fif.volume_change_surrogate, 0, bad, enc, dec)
    p.sweep(fif.volume_change_surrogate, "jvp", [("unknown", "magic")], x, enc, dec)
    p.sweep(fif.exact_log_prob, 0, bad, enc, dec)
    p.sweep(fif.exact_log_prob, "jacobian_target", [("unknown", "magic")], x, enc, dec)
    z = torch.randn(16, 1)
    p.sweep(fif.sample_v, 0, probe_arrays((16, 1), torch=True))
    p.sweep(fif.sample_v, 1, probe_sizes(), z)
    # training
    for field in ("steps", "batch_size", "max_skips", "checkpoint_every", "seed"):
        p.sweep(fif.TrainConfig, field, probe_sizes())
    for field in ("lr", "weight_decay", "grad_clip"):
        p.sweep(fif.TrainConfig, field, probe_floats())
    p.sweep(fif.TrainConfig, "on_nonfinite", [("unknown", "ignore")])
    p.sweep(fif.TrainConfig, "warm_up_steps", [("negative", (-1, 0)), ("one", (1,)), ("float", (2.5, 0))])
    cfg = fif.TrainConfig(steps=2, batch_size=8)
    p.sweep(fif.fit, 1, bad, model, cfg, show_progress=False)
    p.sweep(fif.fit, 0, [("not a flow", torch.nn.Linear(2, 2))], x, cfg, show_progress=False)
    p.sweep(fif.fit, "log_every", probe_sizes(), model, x, cfg, show_progress=False)
    # data and files
    p.sweep(fif.toy_dataset, 0, [("unknown", "spiral9"), ("int", 3)], 10)
    p.sweep(fif.toy_dataset, 1, probe_sizes(), "sine")
    p.sweep(fif.toy_splits, 1, probe_sizes(), "sine", 10)
    for suffix in (".npy", ".npz", ".csv", ".pt"):
        files = probe_files(tmp_path, suffix)
        p.sweep(fif.load_array, 0, files)
        p.sweep(fif.load_checkpoint, 0, files, model)
    p.sweep(fif.load_image_folder, 0, probe_files(tmp_path, ""))
    p.sweep(fif.load_image_folder, "size", probe_sizes(), tmp_path)
    p.sweep(fif.load_tabular, 0, [("unknown", "imagenet"), ("int", 3)], tmp_path)
    p.sweep(fif.load_tabular, 1, probe_files(tmp_path, ""), "power")
    p.sweep(fif.save_checkpoint, 0, [("folder", tmp_path)], model)
    p.sweep(fif.save_checkpoint, 1, [("not a flow", object())], tmp_path / "c.pt")
    # the model folder, and your own Dataset / DataLoader as training data
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    p.sweep(fif.FIFModel, "net", [("unknown", "transformer"), ("conv without image_shape", "conv")],
            data_dim=4, latent_dim=2)  # fmt: skip
    p.sweep(fif.FIFModel, "latent_dim", probe_sizes(), data_dim=4, n_blocks=1, widths=[8])
    p.sweep(fif.FIFModel, "image_shape", [("wrong size", [1, 4, 8]), ("2-D", [4, 4])], data_dim=16, latent_dim=2,
            net="conv")  # fmt: skip
    p.sweep(fif.FIFModel.from_pretrained, 0, probe_files(tmp_path, ""))
    p.sweep(model.save_pretrained, 0, [("own nets", tmp_path / "own")])  # your own nets: no config.json
    own = [(f"dataset of {k}", TensorDataset(v)) for k, v in bad if isinstance(v, torch.Tensor) and v.dim() >= 1
           and len(v)]  # fmt: skip
    own += [("empty loader", DataLoader(TensorDataset(torch.rand(0, 2)), batch_size=2))]
    p.sweep(fif.fit, 1, own, model, cfg, show_progress=False)
    p.check()
    p.assert_covers(fif, skip=SKIP)
