"""Bad input at the Python API: NaN input is refused by the loss (not a NaN loss), torch's shape errors inside the
networks come out as one InputError line, and NonFiniteLossError is an InputError."""

import pytest
import torch

from iclr24.fif import FreeFormInjectiveFlow
from iclr24.fif import NonFiniteLossError
from iclr24.fif import fif_loss
from iclr24.fif import resnet_pair
from iclr24.paperkit.errors import InputError


def _model():
    enc, dec = resnet_pair(2, 1, n_blocks=1, widths=(8,))
    return FreeFormInjectiveFlow(enc, dec, data_dim=2, latent_dim=1), enc, dec


def test_the_loss_refuses_nan_input_instead_of_returning_nan():
    model, _, _ = _model()
    x = torch.randn(8, 2)
    x[2, 1] = float("nan")
    with pytest.raises(InputError, match="NaN"):
        model.loss(x)


def test_a_mismatched_width_is_one_line_not_torchs_addmm_message():
    _, enc, dec = _model()
    with pytest.raises(InputError, match="cannot take") as e:
        fif_loss(torch.randn(8, 3), enc, dec)
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="float64"):
        fif_loss(torch.randn(8, 2, dtype=torch.float64), enc, dec)


def test_non_finite_loss_error_is_an_input_error():
    assert issubclass(NonFiniteLossError, InputError) and issubclass(NonFiniteLossError, ValueError)
