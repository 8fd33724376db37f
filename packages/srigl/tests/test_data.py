import numpy as np
import pytest
import torch

from iclr24.srigl import digits_split
from iclr24.srigl import load_npz


def test_digits_split_is_standardised_with_train_statistics():
    d = digits_split(0)
    assert d.x_train.shape[1] == 64 and len(d.y_train) + len(d.y_test) == 1797
    assert torch.allclose(d.x_train.mean(0), torch.zeros(64), atol=1e-5)
    assert not torch.allclose(d.x_test.mean(0), torch.zeros(64), atol=1e-3)
    assert d.n_classes == 10 and digits_split(0, flatten=False).input_shape == (1, 8, 8)


def test_load_npz_with_and_without_test_split(tmp_path):
    x = np.arange(200, dtype=np.float32).reshape(50, 4)
    y = np.repeat(np.arange(5), 10)
    np.savez(tmp_path / "a.npz", x=x, y=y)
    d = load_npz(tmp_path / "a.npz")
    assert len(d.y_train) == 40 and len(d.y_test) == 10 and d.n_classes == 5
    np.savez(tmp_path / "b.npz", x=x, y=y, x_test=x[:7], y_test=y[:7])
    assert len(load_npz(tmp_path / "b.npz").y_test) == 7
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_npz(tmp_path / "c.npz")
    np.savez(tmp_path / "d.npz", x=x, y=y[:3])
    with pytest.raises(ValueError, match="matching"):
        load_npz(tmp_path / "d.npz")
