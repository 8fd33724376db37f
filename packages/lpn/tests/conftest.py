import pytest
import torch

from iclr24.lpn import MLPLPN
from iclr24.lpn import PatchLPN128


def nonlinear_mlp(in_dim: int = 8, alpha: float = 0.01, seed: int = 0) -> MLPLPN:
    """An MLP LPN with W-weights large enough that psi is far from quadratic (float64)."""
    torch.manual_seed(seed)
    m = MLPLPN(in_dim=in_dim, hidden=16, layers=2, beta=2.0, alpha=alpha).double()
    m.init_weights(mean=-1.0, std=0.5)
    return m.eval()


@pytest.fixture
def mlp64():
    return nonlinear_mlp


@pytest.fixture
def tiny_patch_model():
    torch.manual_seed(0)
    m = PatchLPN128(in_channels=1, hidden=4, beta=5.0, alpha=0.01, image_size=8).double()
    m.init_weights(mean=-1.0, std=0.5)
    return m.eval()


def digits_train_argv(out, *, hidden=16, steps=6, pretrain_steps=3, batch_size=16):
    """The ``lpn train`` command line of a toy MLP LPN on the built-in digits, into ``out``, quiet."""
    return ["train", "--data", "digits", "--hidden", str(hidden), "--steps", str(steps), "--pretrain-steps",
            str(pretrain_steps), "--batch-size", str(batch_size), "--out", str(out), "--quiet"]  # fmt: skip


@pytest.fixture
def train_argv():
    """:func:`digits_train_argv`, for the tests that run ``lpn train``."""
    return digits_train_argv
