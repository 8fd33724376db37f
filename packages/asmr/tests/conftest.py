import pytest
import torch

from iclr24.asmr import ASMR


@pytest.fixture
def image_model() -> ASMR:
    """A small non-square 2-D ASMR (12 x 16 grid, 3 levels, one base of 1)."""
    torch.manual_seed(0)
    return ASMR(2, 3, (12, 16), [[2, 3, 2], [4, 1, 4]], hidden=8)
