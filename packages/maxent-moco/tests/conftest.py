import numpy as np
import pytest


def _instance(rng, S=20, n=30, d=3, density=0.5, lam=0.5):
    """A random feasible MoCo instance: true rows P, model rows P_hat with the same support, basis, psi = P phi."""
    mask = rng.random((n, S)) < density
    mask[np.arange(n), rng.integers(S, size=n)] = True
    P = rng.dirichlet(np.ones(S), size=n) * mask
    P /= P.sum(axis=1, keepdims=True)
    noise = rng.dirichlet(np.ones(S), size=n) * mask
    noise /= noise.sum(axis=1, keepdims=True)
    P_hat = (1 - lam) * P + lam * noise
    Phi = rng.normal(size=(S, d)) * rng.uniform(0.5, 20, size=d)
    return P, P_hat, Phi, P @ Phi


@pytest.fixture
def make_instance():
    """make_instance(seed, **kw) -> (P, P_hat, Phi, Psi)."""
    return lambda seed=0, **kw: _instance(np.random.default_rng(seed), **kw)
