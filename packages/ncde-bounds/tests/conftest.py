import pytest


def tiny_train_argv(out):
    """The ``ncde-bounds train`` command line of a tiny run (8 series, K = 4, 2 epochs) into ``out``, quiet."""
    return [
        "train",
        "--series",
        "8",
        "--k",
        "4",
        "--epochs",
        "2",
        "--substeps",
        "1",
        "--out",
        str(out),
        "--quiet",
    ]


@pytest.fixture
def train_argv():
    """:func:`tiny_train_argv`, for the tests that run ``ncde-bounds train``."""
    return tiny_train_argv
