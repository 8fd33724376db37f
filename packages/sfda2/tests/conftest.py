import gzip
import pickle

import numpy as np
import pytest

from iclr24.paperkit.data.folder import data_path


def write_tiny_mnist(folder):
    """A tiny MNIST pickle in ``folder``'s data layout (the real file's format): 100/20/20 seeded random images
    of 784 pixels, labels 0-9 in turn."""
    rng = np.random.default_rng(0)
    split = lambda n: (rng.random((n, 784), dtype=np.float32), (np.arange(n) % 10).astype(np.int64))  # noqa: E731
    target = data_path("mnist", folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(target, "wb") as fh:
        pickle.dump((split(100), split(20), split(20)), fh)


@pytest.fixture
def tiny_mnist():
    """:func:`write_tiny_mnist`, for the tests that read MNIST from a data folder."""
    return write_tiny_mnist
