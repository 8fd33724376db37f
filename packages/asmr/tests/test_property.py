"""Property test of the public API (``iclr24.asmr.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty inputs,
bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import numpy as np
import torch

import iclr24.asmr as asmr
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {
    "FitResult": "a result record (fit is probed)",
    "Signal": "a loader's record (the loaders are probed)",
}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    img = np.random.default_rng(0).random((8, 8))
    # metrics
    for f in (asmr.psnr, asmr.ssim):
        p.sweep(f, 0, probe_arrays((8, 8)), img)
        p.sweep(f, 1, probe_arrays((8, 8), torch=True), torch.from_numpy(img))
        p.sweep(f, 2, probe_floats(), img, img * 0.9)
    p.sweep(asmr.ssim, "n_spatial", probe_sizes(), img, img * 0.9)
    # bases and coordinates
    bases = [[2, 2, 2], [2, 2, 2]]
    p.sweep(
        asmr.parse_bases,
        0,
        [("empty", ""), ("words", "a,b"), ("zero", "0x2"), ("int", 3), ("huge", "9" * 30)],
    )
    p.sweep(
        asmr.validate_bases, 0, [("empty", []), ("zero", [[0, 2]]), ("ragged", [[2], [2, 2]]), ("str", "2")]
    )
    p.sweep(asmr.validate_bases, 1, [("mismatch", (7, 7)), ("negative", (-8, 8))], bases)
    p.sweep(asmr.suggest_bases, 0, probe_sizes(), 3)
    p.sweep(asmr.suggest_bases, 1, probe_sizes(), 64)
    p.sweep(asmr.level_strides, 0, [("empty", []), ("zero", [[0]])])
    p.sweep(asmr.grid_coords, 0, [(k, (v, 4)) for k, v in probe_sizes()] + [("empty", ())])
    coords = asmr.grid_coords((8, 8))
    p.sweep(asmr.decompose_coords, 0, probe_arrays(tuple(coords.shape), torch=True), bases)
    digits = asmr.decompose_coords(coords, bases)
    p.sweep(asmr.normalize_digits, 0, probe_arrays(tuple(digits.shape), torch=True, dtype="int64"), bases)
    p.sweep(asmr.compose_digits, 0, probe_arrays(tuple(digits.shape), torch=True, dtype="int64"), bases)
    # models and MACs
    p.sweep(asmr.ASMR, 0, probe_sizes(), 1, (8, 8), bases, hidden=8)
    p.sweep(asmr.ASMR, "hidden", probe_sizes(), 2, 1, (8, 8), bases)
    p.sweep(asmr.ASMR, "omega0", probe_floats(), 2, 1, (8, 8), bases, hidden=8)
    p.sweep(asmr.ASMR, "modulator", [("unknown", "magic")], 2, 1, (8, 8), bases, hidden=8)
    p.sweep(asmr.SIREN, "hidden", probe_sizes(), 2, 1, (8, 8))
    p.sweep(asmr.SIREN, "n_layers", probe_sizes(), 2, 1, (8, 8), hidden=8)
    p.sweep(asmr.SIREN, 2, [("empty", ()), ("zero", (0, 8)), ("huge", (10**20, 8))], 2, 1, hidden=8)
    p.sweep(asmr.build_model, 0, [("empty", {}), ("unknown", {"model": "nerf"}), ("not a dict", 3)])
    model = asmr.ASMR(2, 1, (8, 8), bases, hidden=8)
    p.sweep(model, 0, probe_arrays((5, 2), torch=True))
    p.sweep(asmr.mlp_macs_per_point, 0, probe_sizes(), 8, 3)
    p.sweep(asmr.asmr_macs_per_point, 0, [("empty", []), ("zero", [[0]])], 8)
    p.sweep(asmr.asmr_macs_per_point, 1, probe_sizes(), bases)
    p.sweep(asmr.asmr_macs_per_point, "convention", [("unknown", "magic")], bases, 8)
    p.sweep(asmr.macs_per_point, 0, [("not a model", object())])
    p.sweep(asmr.macs_per_point, "convention", [("unknown", "magic")], model)
    p.sweep(asmr.count_linear_macs, 0, [("not a model", object())], lambda: None)
    p.sweep(asmr.count_linear_macs, 1, [("not callable", 3)], model)
    # fitting
    p.sweep(asmr.fit, 1, probe_arrays((8, 8)), model, steps=1)
    p.sweep(asmr.fit, "steps", probe_sizes(), model, img)
    p.sweep(asmr.fit, "lr", probe_floats(), model, img, steps=1)
    p.sweep(asmr.fit, "batch_size", probe_sizes(), model, img, steps=1)
    p.sweep(asmr.fit, "value_range", [("reversed", (1.0, 0.0)), ("nan", (float("nan"), 1.0)), ("one", (1.0,))],
            model, img, steps=1)  # fmt: skip
    p.sweep(asmr.fit, 0, [("not a model", torch.nn.Linear(2, 1))], img, steps=1)
    p.sweep(asmr.fit, "sampler", [("unknown", "sobol")], model, img, steps=1, batch_size=16)
    p.sweep(asmr.fit, "grid_cells", [("ragged", (4,)), ("zero", (0, 4)), ("not dividing", (3, 3))], model, img,
            steps=4, batch_size=16, sampler="grid")  # fmt: skip
    # the uniform grid sampler
    p.sweep(asmr.uniform_grid_batches, 0, [(k, (v, 16)) for k, v in probe_sizes()] + [("empty", ())], 256)
    p.sweep(asmr.uniform_grid_batches, 1, probe_sizes(), (32, 32))
    p.sweep(
        asmr.uniform_grid_batches, 2, [("ragged", (16,)), ("zero", (0, 16)), ("str", "16")], (32, 32), 256
    )
    # built-in data and files
    p.sweep(asmr.camera_image, 0, probe_sizes())
    p.sweep(asmr.sample_image, 0, [("unknown", "lena"), ("int", 3)])
    p.sweep(asmr.sample_image, 1, probe_sizes(), "camera")
    loaders = (asmr.load_signal, asmr.load_image, asmr.load_audio, asmr.load_video)
    p.sweep_loaders(loaders, tmp_path, (".png", ".wav", ".npy", ".mp4", ".txt"))
    p.sweep(asmr.save_signal, 0, probe_arrays((8, 8)), tmp_path / "o.png", "image")
    p.sweep(asmr.save_signal, 1, [("folder", tmp_path)], img, kind="image")
    p.sweep(asmr.save_signal, 2, [("unknown", "hologram")], img, tmp_path / "o.png")
    p.sweep(asmr.save_signal, "sample_rate", probe_sizes(), np.zeros(16), tmp_path / "o.wav", "audio")
    p.sweep(asmr.uniform_grid_batches, 1, probe_sizes(), (32, 32))
    # the model folder, the training hooks and your own points
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    for cls in (asmr.ASMR, asmr.SIREN):
        p.sweep(cls.from_pretrained, 0, probe_files(tmp_path, ""))
    p.sweep(
        model.save_pretrained, 0, [("a file", probe_files(tmp_path, ".x")[3][1]), ("busy folder", tmp_path)]
    )
    coords = asmr.grid_coords((8, 8))
    vals = torch.as_tensor(img, dtype=torch.float32).reshape(-1, 1)
    points = [("missing points", TensorDataset(coords[1:], vals[1:])),
              ("a repeated point", TensorDataset(torch.cat([coords[:1], coords[:-1]]), vals)),
              ("float coords", TensorDataset(coords.float(), vals)),
              ("out of range", TensorDataset(coords + 8, vals)), ("3 channels", TensorDataset(coords, vals.repeat(1, 3))),
              ("one field", DataLoader(TensorDataset(coords), batch_size=8)),
              ("nan values", TensorDataset(coords, vals * float("nan")))]  # fmt: skip
    p.sweep(asmr.fit, 1, points, model, steps=1)
    p.sweep(asmr.signal_from_points, 0, points, (8, 8), 1)
    p.sweep_loop_options(asmr.fit, tmp_path, model, img, steps=1)
    p.check()
    p.assert_covers(asmr, skip=SKIP)
