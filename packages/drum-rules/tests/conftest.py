import numpy as np
import pytest

from iclr24.drum_rules import KG


def random_kg(seed: int, n_entities: int = 7, n_relations: int = 2, n_facts: int = 14) -> KG:
    rng = np.random.default_rng(seed)
    f = np.stack(
        [
            rng.integers(n_entities, size=n_facts),
            rng.integers(n_relations, size=n_facts),
            rng.integers(n_entities, size=n_facts),
        ],
        axis=1,
    )
    f = np.unique(f, axis=0)
    return KG(
        tuple(f"e{i}" for i in range(n_entities)),
        tuple(f"r{i}" for i in range(n_relations)),
        f,
        name=f"random-{seed}",
    )


def random_attention(rng, rank: int, steps: int, n_relations: int, zero: float = 0.0) -> np.ndarray:
    a = rng.gamma(0.5, size=(rank, steps, 2 * n_relations + 1))
    a[rng.random(a.shape) < zero] = 0.0
    a[..., -1] += 1e-3
    return a / a.sum(-1, keepdims=True)


@pytest.fixture
def make_kg():
    return random_kg


@pytest.fixture
def make_attention():
    return random_attention


def sparse_attention(rng, rank: int, steps: int, n_relations: int, nnz: int = 2) -> np.ndarray:
    """Each row: the identity and ``nnz`` operators with Dirichlet(2) weights (no tiny weights: the exact DRUM
    program stays small)."""
    K = 2 * n_relations + 1
    a = np.zeros((rank, steps, K))
    for j in range(rank):
        for i in range(steps):
            ops = np.r_[rng.choice(K - 1, size=nnz, replace=False), K - 1]
            a[j, i, ops] = rng.dirichlet(np.full(len(ops), 2.0))
    return a


@pytest.fixture
def make_sparse_attention():
    return sparse_attention
