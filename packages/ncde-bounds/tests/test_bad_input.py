"""Bad input at the Python API: huge sizes are refused before anything is allocated, an overflowing Grönwall
factor is an InputError (not OverflowError), and mismatched times/values are one InputError line."""

import pytest
import torch

from iclr24.ncde_bounds import NCDE
from iclr24.ncde_bounds import add_time_channel
from iclr24.ncde_bounds import brownian_paths
from iclr24.ncde_bounds import gronwall_factor
from iclr24.paperkit.errors import InputError


def test_huge_sizes_are_refused_up_front():
    with pytest.raises(InputError, match="at most"):
        brownian_paths(10**20, n_fine=16)
    with pytest.raises(InputError, match="hidden"):
        NCDE(2, hidden=2**40)


def test_an_overflowing_gronwall_factor_is_an_input_error():
    with pytest.raises(InputError, match="overflows"):
        gronwall_factor(1e300, 1.0)


def test_add_time_channel_names_the_mismatch():
    with pytest.raises(InputError, match="times must be"):
        add_time_channel(torch.zeros(5), torch.zeros(2, 4, 1))
