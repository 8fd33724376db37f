import pytest
import torch

from iclr24.cmvae.diffusion import DiffusionRefiner
from iclr24.cmvae.diffusion import linear_beta_schedule


def test_schedule_reaches_noise():
    b = linear_beta_schedule(200)
    abar = torch.cumprod(1 - b, 0)
    assert b.shape == (200,) and float(abar[-1]) < 1e-3 and float(abar[0]) > 0.99


def test_refiner_learns_identity_map_roughly():
    torch.manual_seed(0)
    x = (torch.rand(256, 4) > 0.5).float()
    ref = DiffusionRefiner(4, 1, steps=20, hidden=32)
    hist = ref.fit([x], [x], iterations=200, batch_size=128, lr=3e-3)
    assert sum(hist[-20:]) / 20 < sum(hist[:20]) / 20
    out = ref.refine(x[:64], 0, seed=0)
    assert out.shape == (64, 4) and out.min() >= 0 and out.max() <= 1
    assert float((out - x[:64]).abs().mean()) < 0.3  # conditioned on the clean image it stays near it


def test_refiner_bad_input():
    ref = DiffusionRefiner(4, 2, steps=5, hidden=8)
    with pytest.raises(ValueError, match=r"\[N, 4\]"):
        ref.refine(torch.rand(3, 5))
    with pytest.raises(ValueError, match="modality"):
        ref.refine(torch.rand(3, 4), modality=2)
    with pytest.raises(ValueError, match="expected 2 modalities"):
        ref.fit([torch.rand(3, 4)], [torch.rand(3, 4)])
    with pytest.raises(ValueError, match="steps"):
        DiffusionRefiner(4, steps=0)
