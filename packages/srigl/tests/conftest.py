import pytest
import torch
import torch.nn.functional as F

from iclr24.srigl import digits_split, mlp


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
