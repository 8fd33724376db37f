import pytest
import torch

from iclr24.rdmc import GaussianMixture
from iclr24.rdmc import gmm2d


@pytest.fixture
def gmm():
    return gmm2d()


@pytest.fixture
def gauss1d():
    """N(0, 1) as a one-component mixture: its OU-diffused law is N(0, 1) at every t (score -x)."""
    return GaussianMixture([[0.0]], [1.0], [1.0])


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)
