"""Bad input at the Python API: the metrics refuse NaN/inf and empty input instead of answering NaN; a diverging
fit is an InputError (still a FloatingPointError)."""

import numpy as np
import pytest
import torch

from iclr24.asmr import psnr
from iclr24.asmr import ssim
from iclr24.asmr.train import NonFiniteLossError
from iclr24.paperkit.errors import InputError


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_psnr_and_ssim_refuse_non_finite_input(bad):
    x = np.random.default_rng(0).random((8, 8))
    y = x.copy()
    y[3, 4] = bad
    for metric in (psnr, ssim):
        with pytest.raises(InputError, match="NaN or inf"):
            metric(y, x)
        with pytest.raises(InputError, match="NaN or inf"):
            metric(torch.from_numpy(x), torch.from_numpy(y))


def test_psnr_refuses_empty_input_and_keeps_inf_for_a_perfect_match():
    with pytest.raises(InputError, match="empty"):
        psnr(np.zeros((0, 4)), np.zeros((0, 4)))
    x = np.random.default_rng(1).random((4, 4))
    assert psnr(x, x) == float("inf")  # documented: a perfect match


def test_non_finite_loss_error_is_an_input_error():
    assert issubclass(NonFiniteLossError, InputError) and issubclass(NonFiniteLossError, FloatingPointError)
