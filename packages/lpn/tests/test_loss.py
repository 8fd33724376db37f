import math

import pytest
import torch

from iclr24.lpn import LAPLACIAN_SEGMENTS
from iclr24.lpn import gamma_min_for
from iclr24.lpn import official_schedule
from iclr24.lpn import piecewise_schedule
from iclr24.lpn import proximal_matching_loss


def test_pm_loss_values():
    """Acceptance 8: 0 at distance 0; 1 - e^-1 at distance gamma (over the whole sample)."""
    x = torch.randn(3, 2, 4)
    assert proximal_matching_loss(x, x, 0.5).item() == 0.0
    d = torch.zeros(3, 2, 4)
    d[:, 0, 0] = 0.6
    d[:, 1, 2] = 0.8  # ||d|| = 1 per sample
    assert proximal_matching_loss(x + d, x, 1.0).item() == pytest.approx(1 - math.exp(-1), abs=1e-6)
    assert proximal_matching_loss(x + d, x, 1e-3).item() == pytest.approx(1.0, abs=1e-6)


def test_pm_loss_bad_input():
    with pytest.raises(ValueError, match="gamma"):
        proximal_matching_loss(torch.zeros(2, 3), torch.zeros(2, 3), 0.0)
    with pytest.raises(ValueError, match="same shape"):
        proximal_matching_loss(torch.zeros(2, 3), torch.zeros(2, 4), 1.0)


def test_official_schedule_at_boundaries():
    """Acceptance 7: 40000/20000/S=4/gamma_min=2.24."""
    s = lambda k: official_schedule(
        k, num_steps=40000, num_steps_pretrain=20000, num_stages=4, gamma_min=2.24
    )  # noqa: E731
    for k in (0, 19999):
        assert (s(k).loss, s(k).gamma, s(k).lr) == ("l1", None, 1e-3)
    expect = {
        20000: 17.92,
        24999: 17.92,
        25000: 8.96,
        29999: 8.96,
        30000: 4.48,
        34999: 4.48,
        35000: 2.24,
        39999: 2.24,
        45000: 2.24,
    }
    for k, g in expect.items():
        assert s(k).loss == "pm" and s(k).gamma == pytest.approx(g) and s(k).lr == 1e-4, k
    assert gamma_min_for(28 * 28) == pytest.approx(2.24)
    assert gamma_min_for(128 * 128 * 3) == pytest.approx(17.74, abs=0.01)


def test_laplacian_piecewise_schedule():
    assert sum(seg.steps for seg in LAPLACIAN_SEGMENTS) == 44000  # 20k l1 + 24k proximal matching
    assert piecewise_schedule(0, LAPLACIAN_SEGMENTS).loss == "l1"
    assert piecewise_schedule(19999, LAPLACIAN_SEGMENTS).lr == 1e-4
    s = piecewise_schedule(20000, LAPLACIAN_SEGMENTS)
    assert (s.loss, s.gamma, s.lr) == ("pm", 0.5, 1e-3)
    s = piecewise_schedule(45999, LAPLACIAN_SEGMENTS)
    assert (s.gamma, s.lr) == (0.1, 1e-6)
