"""SSIM against scikit-image, the CelebA / Mayo CT loaders on tiny files in the official layout, and the MNIST
experiment end to end on a tiny stand-in (the real MNIST run is in ``reproduce --full``)."""

import numpy as np
import pytest
import torch
from PIL import Image

from iclr24.lpn import load_celeba
from iclr24.lpn import load_mayoct
from iclr24.lpn import ssim
from iclr24.lpn.experiments import MnistConfig
from iclr24.lpn.experiments import blur_images
from iclr24.lpn.experiments import run_mnist


def test_ssim_matches_skimage_and_is_one_on_identical_images():
    skm = pytest.importorskip("skimage.metrics")
    g = torch.Generator().manual_seed(0)
    x = torch.rand(3, 2, 12, 10, generator=g, dtype=torch.float64)
    r = (x + 0.1 * torch.randn(x.shape, generator=g, dtype=torch.float64)).clamp(0, 1)
    ref = [skm.structural_similarity(r[i].permute(1, 2, 0).numpy(), x[i].permute(1, 2, 0).numpy(),
                                     channel_axis=2, data_range=1.0) for i in range(3)]  # fmt: skip
    assert ssim(r, x).tolist() == pytest.approx(ref, abs=1e-10)
    assert ssim(x, x).tolist() == pytest.approx([1.0] * 3)
    flat = ssim(r[:, :1].reshape(3, -1), x[:, :1].reshape(3, -1), image_shape=(12, 10))
    assert flat.tolist() == pytest.approx(ssim(r[:, 0], x[:, 0]).tolist())
    with pytest.raises(ValueError, match="must match"):
        ssim(x, x[:, :1])
    with pytest.raises(ValueError, match="win_size"):
        ssim(x[..., :5, :5], x[..., :5, :5])


def _celeba(root, sizes=((20, 18), (22, 19), (20, 18))):
    base = root / "celeba" / "img_align_celeba"
    base.mkdir(parents=True)
    rng = np.random.default_rng(0)
    lines = []
    for k, (h, w) in enumerate(sizes):
        name = f"{k + 1:06d}.jpg"  # JPEG, as in img_align_celeba
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(base / name, quality=95)
        lines.append(f"{name} {2 if k else 0}")
    (root / "celeba" / "list_eval_partition.txt").write_text("\n".join(lines) + "\n")
    return base


def test_load_celeba_center_crops_the_split(tmp_path):
    base = _celeba(tmp_path)
    x = load_celeba(tmp_path, "test", image_size=16)
    assert x.shape == (2, 3, 16, 16) and x.dtype == torch.float32
    arr = (
        np.asarray(Image.open(base / "000002.jpg").convert("RGB"), dtype=np.float32) / 255
    )  # 22 x 19: crop rows 3.., cols 2..
    assert torch.allclose(x[0], torch.from_numpy(arr[3:19, 2:18]).permute(2, 0, 1), atol=1e-6)
    assert load_celeba(tmp_path, "test", image_size=16, start=1, max_images=1).shape == (1, 3, 16, 16)
    assert load_celeba(tmp_path, "train", image_size=16).shape == (1, 3, 16, 16)
    with pytest.raises(ValueError, match="smaller than image_size"):
        load_celeba(tmp_path, "test", image_size=21)
    with pytest.raises(ValueError, match="no images in split 'valid'"):
        load_celeba(tmp_path, "valid", image_size=16)
    (base / "000003.jpg").unlink()
    with pytest.raises(FileNotFoundError, match="000003.jpg is listed"):
        load_celeba(tmp_path, "test", image_size=16)
    with pytest.raises(FileNotFoundError, match="list_eval_partition.txt does not exist.*Google Drive"):
        load_celeba(tmp_path / "nowhere")


def test_load_mayoct_reads_phantom_slices(tmp_path):
    folder = tmp_path / "mayo_data_arranged_patientwise" / "test" / "Phantom"
    folder.mkdir(parents=True)
    slices = [np.random.default_rng(k).random((12, 12)).astype(np.float64) for k in range(3)]
    for k, s in enumerate(slices):
        np.save(folder / f"slice_{k:03d}.npy", s)
    x = load_mayoct(tmp_path, "test")
    assert x.shape == (3, 1, 12, 12) and x.dtype == torch.float32
    assert torch.allclose(x[2, 0], torch.from_numpy(slices[2]).float())
    assert load_mayoct(tmp_path, "test", max_images=2).shape == (2, 1, 12, 12)
    with pytest.raises(FileNotFoundError, match="train/Phantom does not exist"):
        load_mayoct(tmp_path, "train")
    np.save(folder / "slice_999.npy", np.full((12, 12), np.nan))
    with pytest.raises(ValueError, match="slice_999.npy: expected a finite 2-D slice"):
        load_mayoct(tmp_path, "test")


def test_blur_images_is_the_official_scipy_blur():
    x = torch.zeros(1, 1, 9, 9)
    x[0, 0, 4, 4] = 1.0
    assert torch.equal(blur_images(x, 0.0), x)
    b = blur_images(x, 1.0)
    assert b.sum().item() == pytest.approx(1.0, abs=1e-5) and b[0, 0, 4, 4] < 0.2
    assert torch.allclose(b[0, 0], b[0, 0].T)


def _tiny_cfg():
    return MnistConfig(hidden=4, baseline_hidden=4, pretrain_steps=3, stage_steps=1, batch_size=4, n_test=4,
                       prior_images=3, pnp_images=3, pnp_iters=3, prior_max_iter=5, prior_sigmas=(0.0, 0.1),
                       blur_sigmas=(0.0, 1.0), mix_lambdas=(0.0, 0.5, 1.0), official_iters=2,
                       converge_iters=5)  # fmt: skip


def test_run_mnist_end_to_end_on_a_tiny_stand_in(tmp_path):
    from iclr24.lpn.mnist_claims import _records
    from iclr24.lpn.reproduce import _plot_mnist
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig

    x = torch.rand(40, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    cfg = _tiny_cfg()
    res = run_mnist(cfg, x[:30], x[30:])
    assert res["lpn"].weights_nonnegative()
    assert set(res["pnp"]) == {"inpaint", "deblur"} and len(res["prior_blur"]) == 2
    assert res["prior_noise"][0] == pytest.approx(res["prior_blur"][0])  # both start at the clean images
    inp = res["pnp"]["inpaint"]
    # ours: 3 iterations continued to the gated 5; the official setting: 2; the PSNR along every iteration
    assert len(inp["lpn_psnr_curve"]) == 3 and len(inp["official_lpn_psnr_curve"]) == 2
    assert len(inp["converge_step_norms"]) == len(inp["converge_psnr_curve"]) == 5
    assert inp["converge_step_norms"][:3] == inp["lpn_step_norms"]
    config = RunConfig(mode="full", out=tmp_path, progress=False)
    claims = ClaimSet("lpn", config)
    arts = [claims.figure(_plot_mnist(res, cfg), "mnist.png")]
    _records(claims, [res, res, res], [0, 1, 2], cfg, {}, arts)
    ids = [c.details["spec"]["id"] for c in claims.claims]
    assert ids == ["mn_denoise_noisy", "mn_denoise_conv", "mn_prior_noise", "mn_prior_blur", "mn_nonconvex",
                   "mn_pnp_inpaint", "mn_pnp_inpaint_official", "mn_pnp_deblur", "mn_pnp_deblur_official",
                   "mn_converge"]  # fmt: skip
    conv = claims.claims[-1]
    assert conv.details["gated_iteration"] == 5 and conv.ours == inp["converge_step_norms"][-1]
    assert (tmp_path / "mnist.png").is_file()
    with pytest.raises(ValueError, match=r"train_x must be \(N, 1, 28, 28\)"):
        run_mnist(cfg, x[:, :, :8, :8], x)


def test_mnist_claims_use_the_validation_split(monkeypatch, tmp_path):
    from iclr24.lpn import mnist_claims
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig
    from iclr24.paperkit.data.folder import is_present

    if not is_present("mnist"):
        pytest.skip("MNIST is not in the data folder (iclr24 data get mnist)")
    seen = {}

    class Stop(Exception):
        pass

    def fake(cfg, lpn, base, test_x, **kw):
        seen.update(test=test_x.shape, lo=float(test_x.min()), hi=float(test_x.max()), seed=cfg.seed, **kw)
        raise Stop

    monkeypatch.setattr(mnist_claims, "evaluate_mnist", fake)
    config = RunConfig(mode="full", out=tmp_path, progress=False)
    with pytest.raises(Stop):
        mnist_claims.mnist_claims(ClaimSet("lpn", config), config, None)
    assert seen["test"] == (10000, 1, 28, 28) and seen["seed"] == 0 and seen["studies"] is True
    assert seen["lo"] == 0.0 and 0.99 <= seen["hi"] <= 1.0
