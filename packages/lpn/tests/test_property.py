"""Property test of the public API (``iclr24.lpn.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty inputs,
bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import numpy as np
import torch

import iclr24.lpn as lpn
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {
    "ICNN": "the abstract base of the LPN architectures (each is probed)",
    "NonFiniteLossError": "an error class",
    "PnPResult": "a result record",
    "TrainResult": "a result record",
    "ScheduleStep": "a schedule's record (the schedules are probed)",
    "as_image_denoiser": "wraps a model probed through denoise_patchwise and pnp",
    "load_celeba": "probed below through its folder argument",
}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    x = torch.rand(2, 1, 8, 8)
    bad_img = probe_arrays((2, 1, 8, 8), torch=True)
    # metrics and losses
    for f in (lpn.psnr, lpn.ssim):
        p.sweep(f, 0, bad_img, x)
        p.sweep(f, 1, bad_img, x)
        p.sweep(f, "data_range", probe_floats(), x, x * 0.9)
    p.sweep(lpn.ssim, "win_size", probe_sizes(), x, x * 0.9)
    for f in (lpn.l1_loss, lpn.l2_loss):
        p.sweep(f, 0, bad_img, x)
    p.sweep(lpn.proximal_matching_loss, 0, bad_img, x, 0.1)
    p.sweep(lpn.proximal_matching_loss, 2, probe_floats(), x, x)
    p.sweep(lpn.soft_threshold, 0, [*bad_img, ("str", "abc")])
    p.sweep(lpn.soft_threshold, 1, probe_floats(), x)
    p.sweep(lpn.gamma_min_for, 0, probe_sizes())
    p.sweep(lpn.laplace_sampler, 0, probe_floats())
    # models
    p.sweep(lpn.LPN, "in_dim", probe_sizes())
    p.sweep(lpn.MLPLPN, "hidden", probe_sizes())
    p.sweep(lpn.MLPLPN, "layers", probe_sizes())
    p.sweep(lpn.MLPLPN, "beta", probe_floats())
    p.sweep(lpn.ConvLPN28, "hidden", probe_sizes())
    p.sweep(lpn.PatchLPN128, "image_size", probe_sizes())
    p.sweep(lpn.build_model, 0, [("unknown", "unet"), ("int", 3)])
    mlp = lpn.MLPLPN(in_dim=64, hidden=8, layers=2)
    flat = torch.rand(3, 64)
    p.sweep(mlp, 0, probe_arrays((3, 64), torch=True))
    p.sweep(lpn.potential_gradient, 1, probe_arrays((3, 64), torch=True), mlp)
    p.sweep(lpn.potential_gradient, 0, [("not a model", object())], flat)
    p.sweep(lpn.invert, 1, probe_arrays((3, 64), torch=True), mlp, max_iter=3)
    p.sweep(lpn.invert, "method", [("unknown", "magic")], mlp, flat)
    p.sweep(lpn.invert, "max_iter", probe_sizes(), mlp, flat)
    p.sweep(lpn.evaluate_prior, 1, probe_arrays((3, 64), torch=True), mlp, max_iter=3)
    p.sweep(lpn.evaluate_prior, "method", [("unknown", "magic")], mlp, flat)
    conv = lpn.ConvLPN28(hidden=4)
    p.sweep(lpn.denoise_patchwise, 1, probe_arrays((1, 1, 32, 32), torch=True), conv, patch=28, stride=4)
    p.sweep(lpn.denoise_patchwise, "patch", probe_sizes(), conv, torch.rand(1, 1, 32, 32))
    p.sweep(lpn.denoise_patchwise, "stride", probe_sizes(), conv, torch.rand(1, 1, 32, 32), patch=28)
    # operators and solvers
    p.sweep(lpn.gaussian_blur_operator, 0, probe_floats())
    p.sweep(lpn.gaussian_blur_operator, "radius", probe_sizes(), 1.0)
    p.sweep(lpn.inpainting_operator, 0, [("empty", ()), ("negative", (-1, 8)), ("huge", (10**20, 8))])
    p.sweep(lpn.inpainting_operator, "missing", probe_floats(), (1, 8, 8))
    p.sweep(lpn.inpainting_operator, "mask", probe_arrays((1, 8, 8), torch=True, dtype="bool"), (1, 8, 8))
    op = p(lpn.denoising_operator)
    p.sweep(lpn.conjugate_gradient, 1, bad_img, op.A)
    p.sweep(lpn.conjugate_gradient, "max_iter", probe_sizes(), op.A, x)
    p.sweep(lpn.conjugate_gradient, "tol", probe_floats(), op.A, x)
    p.sweep(lpn.conjugate_gradient, 0, [("not callable", 3)], x)

    def ident(v):
        return v

    p.sweep(lpn.pnp_pgd, 0, bad_img, op.A, op.At, ident, num_iter=2)
    p.sweep(lpn.pnp_pgd, "num_iter", probe_sizes(), x, op.A, op.At, ident)
    p.sweep(lpn.pnp_pgd, "step", probe_floats(), x, op.A, op.At, ident, num_iter=2)
    p.sweep(lpn.pnp_admm, 0, bad_img, op.A, op.At, ident, num_iter=2)
    p.sweep(lpn.pnp_admm, "rho", probe_floats(), x, op.A, op.At, ident, num_iter=2)
    p.sweep(lpn.pnp_admm, "num_iter", probe_sizes(), x, op.A, op.At, ident)
    p.sweep(lpn.Operator, 0, [("not callable", 3)], ident)
    # schedules and training
    p.sweep(lpn.official_schedule, 0, probe_sizes())
    p.sweep(lpn.official_schedule, "num_stages", probe_sizes(), 5)
    p.sweep(lpn.official_schedule, "gamma_min", probe_floats(), 5)
    p.sweep(lpn.Segment, 0, probe_sizes(), "l1", 1e-3)
    p.sweep(lpn.Segment, 1, [("unknown", "hinge")], 10, 1e-3)
    p.sweep(lpn.Segment, 2, probe_floats(), 10, "l1")
    p.sweep(lpn.piecewise_schedule, 0, probe_sizes(), [lpn.Segment(10, "l1", 1e-3)])
    p.sweep(lpn.piecewise_schedule, 1, [("empty", []), ("not segments", [1, 2])], 3)
    for field in ("num_steps", "num_steps_pretrain", "num_stages", "batch_size", "checkpoint_every", "seed"):
        p.sweep(lpn.TrainConfig, field, probe_sizes())
    for field in ("pretrain_lr", "lr", "sigma_noise", "gamma_min"):
        p.sweep(lpn.TrainConfig, field, probe_floats())
    p.sweep(lpn.TrainConfig, "loss", [("unknown", "hinge")])
    cfg = lpn.TrainConfig(
        num_steps=2, num_steps_pretrain=1, num_stages=1, batch_size=4, checkpoint_every=10**6
    )
    p.sweep(lpn.train, 1, probe_arrays((10, 64), torch=True), mlp, cfg, show_progress=False)
    p.sweep(lpn.train, 0, [("not a model", object())], torch.rand(10, 64), cfg, show_progress=False)
    # data and files
    p.sweep(lpn.digits_split, 0, probe_sizes())
    p.sweep(lpn.save_image, 1, [*probe_arrays((8, 8)), ("str", "abc")], tmp_path / "o.png")
    p.sweep(lpn.save_image, 0, [("folder", tmp_path)], np.zeros((8, 8)))
    for suffix in (".png", ".pt"):
        files = probe_files(tmp_path, suffix)
        for loader in (lpn.load_image, lpn.load_checkpoint, lpn.load_model):
            p.sweep(loader, 0, files)
    p.sweep(lpn.save_checkpoint, 0, [("folder", tmp_path)], mlp, None, 0)
    p.sweep(lpn.save_checkpoint, 3, probe_sizes(), tmp_path / "c.pt", mlp, None)
    folders = probe_files(tmp_path, "")
    p.sweep(lpn.load_image_folder, 0, folders, 8)
    p.sweep(lpn.load_image_folder, 1, probe_sizes(), tmp_path)
    p.sweep(lpn.load_celeba, 0, folders)
    p.sweep(lpn.load_mayoct, 0, folders)
    # model folders, and your own Dataset / DataLoader as training data
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    p.sweep(lpn.MLPLPN.from_pretrained, 0, folders)
    p.sweep(lpn.load_model, 0, folders)
    own = [(f"dataset of {k}", TensorDataset(v)) for k, v in probe_arrays((10, 64), torch=True)
           if isinstance(v, torch.Tensor) and v.dim() >= 1 and len(v)]  # fmt: skip
    own += [("empty loader", DataLoader(TensorDataset(torch.rand(0, 64)), batch_size=2))]
    p.sweep(lpn.train, 1, own, mlp, cfg, show_progress=False)
    p.check()
    p.assert_covers(lpn, skip=SKIP)
