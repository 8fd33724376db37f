import math

import numpy as np
import pytest
import torch

from iclr24.asmr import ASMR
from iclr24.asmr import SIREN
from iclr24.asmr import camera_image
from iclr24.asmr import fit
from iclr24.asmr import psnr
from iclr24.asmr import ssim


def test_psnr_closed_form():
    t = torch.zeros(10, 10)
    assert psnr(t + 0.1, t) == pytest.approx(20.0)
    assert psnr(t + 0.2, t, data_range=2.0) == pytest.approx(20.0)
    assert psnr(t, t) == math.inf
    with pytest.raises(ValueError, match="same shape"):
        psnr(t, torch.zeros(5))


def test_ssim_identity_and_degradation():
    img = camera_image(32)
    assert ssim(img, img) == pytest.approx(1.0)
    noisy = np.clip(img + np.random.default_rng(0).normal(0, 0.1, img.shape), 0, 1)
    assert ssim(noisy, img) < 0.9
    assert ssim(np.zeros(50), np.zeros(50), n_spatial=1) is None


def test_asmr_fits_a_small_cameraman():
    img = camera_image(32)
    torch.manual_seed(0)
    m = ASMR(2, 1, (32, 32), [[2, 2, 2, 4]] * 2, hidden=32)
    r = fit(m, img, 300, lr=1e-3, lr_min=1e-4)
    assert r.losses[-1] < 0.1 * r.losses[0]
    assert r.psnr >= 30.0 and r.best_psnr >= r.psnr - 1e-9
    assert r.ssim > 0.8 and r.prediction.shape == (32, 32, 1)


def test_batched_fit_and_rgb_signal():
    rng = np.random.default_rng(0)
    sig = rng.random((8, 8, 3)).astype(np.float32)
    torch.manual_seed(0)
    m = SIREN(2, 3, (8, 8), hidden=16, n_layers=3)
    r = fit(m, sig, 30, lr=1e-3, batch_size=16, seed=0)
    assert math.isfinite(r.psnr) and len(r.losses) == 30


def test_fit_rejects_bad_signals():
    m = ASMR(2, 1, (8, 8), [[2, 2, 2]] * 2, hidden=4)
    with pytest.raises(ValueError, match=r"expects \(8, 8, 1\)"):
        fit(m, np.zeros((8, 9)), 1)
    bad = np.zeros((8, 8))
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fit(m, bad, 1)
    with pytest.raises(ValueError, match="steps"):
        fit(m, np.zeros((8, 8)), 0)
    with pytest.raises(ValueError, match="value_range"):
        fit(m, np.zeros((8, 8)), 1, value_range=(1.0, 0.0))


def test_fit_refuses_a_signal_outside_value_range_before_training():
    """A 0-300 image with the default value_range (0, 1) used to train and report PSNR -44.9 dB without a word."""
    img = camera_image(8)
    torch.manual_seed(0)
    m = ASMR(2, 1, (8, 8), [[2, 2, 2]] * 2, hidden=4)
    before = [p.detach().clone() for p in m.parameters()]
    with pytest.raises(ValueError, match=r"outside value_range \(0, 1\).*rescale"):
        fit(m, img * 300, 5)
    assert all(torch.equal(a, b) for a, b in zip(before, m.parameters()))  # refused before any step
    low = img.copy()
    low[0, 0] = -0.5
    with pytest.raises(ValueError, match=r"span \[-0.5, "):
        fit(m, low, 5)
    r = fit(m, img * 300, 2, value_range=(0.0, 300.0))  # the range given: PSNR is on its scale
    assert math.isfinite(r.psnr) and r.cpu_seconds >= 0
    fit(m, np.clip(img + 1e-8, 0, 1 + 1e-8), 1)  # float noise at the edge is not refused
