import numpy as np
import pytest
import torch

from iclr24.lpn import digits_split
from iclr24.lpn import laplace_sampler
from iclr24.lpn import load_image
from iclr24.lpn import load_image_folder
from iclr24.lpn import psnr
from iclr24.lpn import save_image
from iclr24.lpn import soft_threshold
from iclr24.lpn.data import laplace_posterior_median
from iclr24.lpn.data import laplace_posterior_mmse


def test_laplace_sampler_moments():
    x = laplace_sampler(1.0)(200_000, torch.Generator().manual_seed(0))
    assert x.shape == (200_000, 1) and torch.isfinite(x).all()
    assert abs(x.mean().item()) < 0.02 and abs(x.abs().mean().item() - 1.0) < 0.02  # E|x| = b


def test_reference_denoisers_match_the_spec():
    mmse = laplace_posterior_mmse([0.5, 1, 2, 3])
    np.testing.assert_allclose(mmse, [0.241, 0.503, 1.161, 2.026], atol=2e-3)
    med = laplace_posterior_median([0.5, 1, 2, 3])
    np.testing.assert_allclose(med, [0.190, 0.429, 1.107, 2.012], atol=3e-3)
    np.testing.assert_allclose(soft_threshold(np.array([-2.0, 0.5, 3.0])), [-1.0, 0.0, 2.0])


def test_digits_split_and_psnr():
    tr, te = digits_split()
    assert tr.shape == (1500, 64) and te.shape == (297, 64) and 0 <= tr.min() and tr.max() <= 1
    x = torch.zeros(2, 4)
    assert psnr(x + 0.1, x)[0].item() == pytest.approx(20.0)


def test_image_roundtrip_and_range_checks(tmp_path):
    img = np.linspace(0, 1, 48, dtype=np.float32).reshape(6, 8)
    save_image(tmp_path / "a.npy", img)
    np.testing.assert_array_equal(load_image(tmp_path / "a.npy"), img)
    save_image(tmp_path / "a.png", img)
    np.testing.assert_allclose(load_image(tmp_path / "a.png"), img, atol=1 / 255)
    np.save(tmp_path / "bad.npy", img * 255)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        load_image(tmp_path / "bad.npy")
    np.save(tmp_path / "bad_shape.npy", np.zeros((2, 3, 4, 5)))
    with pytest.raises(ValueError, match="shape"):
        load_image(tmp_path / "bad_shape.npy")
    with pytest.raises(FileNotFoundError):
        load_image(tmp_path / "nope.png")
    with pytest.raises(ValueError, match=".png or .npy"):
        save_image(tmp_path / "x.gif", img)


def test_image_folder_crops(tmp_path):
    for i in range(3):
        save_image(tmp_path / f"{i}.png", np.random.default_rng(i).random((20, 30)).astype(np.float32))
    save_image(tmp_path / "small.png", np.zeros((5, 5), np.float32))
    x = load_image_folder(tmp_path, 8, patches_per_image=2)
    assert x.shape == (8, 1, 8, 8)
    with pytest.raises(FileNotFoundError, match="no images"):
        load_image_folder(_empty(tmp_path), 8)


def _empty(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    return d
