import math

import pytest
import torch

from iclr24.rdmc import mmd2
from iclr24.rdmc import mode_tv
from iclr24.rdmc import mode_weights
from iclr24.rdmc import sliced_w2


def test_mode_tv_known_answer():
    means = torch.tensor([[-1.0, 0.0], [1.0, 0.0]])
    x = torch.tensor([[-0.9, 0.1], [-1.2, 0.0], [-1.0, 3.0], [0.8, 0.0]])
    assert torch.allclose(
        mode_weights(x, means), torch.tensor([0.75, 0.25], dtype=torch.float64), atol=1e-10, rtol=1e-8
    )
    assert mode_tv(x, means, torch.tensor([0.5, 0.5])) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="weights must have shape"):
        mode_tv(x, means, torch.tensor([1.0]))


def test_mmd2_closed_form():
    a, b = torch.tensor([[0.0, 0.0]]), torch.tensor([[1.0, 1.0]])
    assert mmd2(a, b, bandwidth=1.0) == pytest.approx(2 - 2 * math.exp(-1.0))
    assert mmd2(a, a) == 0.0
    x = torch.randn(300, 2, generator=torch.Generator().manual_seed(0))
    assert mmd2(x, x + 3.0) > 10 * mmd2(x, torch.randn(300, 2, generator=torch.Generator().manual_seed(1)))


def test_sliced_w2_shift():
    """In 1-D, shifting by c gives W2 = |c| exactly (equal sizes); different sizes go through quantiles."""
    x = torch.randn(1000, 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert sliced_w2(x, x + 0.7) == pytest.approx(0.7, rel=1e-9)
    y = torch.randn(2000, 1, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    assert sliced_w2(x, y + 0.7) == pytest.approx(0.7, abs=0.1)
    with pytest.raises(ValueError, match="same dimension"):
        sliced_w2(x, torch.zeros(3, 2))
    with pytest.raises(ValueError, match="NaN"):
        mmd2(torch.tensor([[float("nan")]]), x)
