import pytest
import torch
import torch.nn.functional as F

from iclr24.srigl import digits_split
from iclr24.srigl import mlp


@pytest.fixture(scope="session")
def fused_kernel():
    """The C++ kernel, built here once if a compiler is found (about 30 s of CPU, cached by torch for later runs),
    so that CI exercises it on a fresh clone; skips the test where it cannot be built."""
    import os
    import warnings

    from iclr24.srigl.kernels import load_kernel

    if os.environ.get("SRIGL_NO_KERNEL"):
        pytest.skip("SRIGL_NO_KERNEL is set")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = load_kernel()
    if mod is None:
        pytest.skip("the fused C++ kernel cannot be built here (no C++ compiler or no ninja)")
    return mod


@pytest.fixture(scope="session")
def digits():
    return digits_split(0)


def make_mlp(seed: int = 0, hidden=(64, 64), n_in: int = 64):
    torch.manual_seed(seed)
    return mlp(n_in, hidden, 10)


def train_steps(model, opt, sp, data, steps: int, batch: int = 32, seed: int = 0, after_step=None):
    """Run ``steps`` SGD steps on fixed, seeded batches; ``after_step(i, updated)`` is called after each."""
    gen = torch.Generator().manual_seed(seed)
    n = len(data.y_train)
    for i in range(steps):
        idx = torch.randint(0, n, (batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(data.x_train[idx]), data.y_train[idx]).backward()
        opt.step()
        updated = sp.step()
        if after_step is not None:
            after_step(i, updated)


@pytest.fixture
def helpers():
    class H:
        pass

    h = H()
    h.make_mlp = make_mlp
    h.train_steps = train_steps
    return h
