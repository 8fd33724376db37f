import pytest
import torch

from iclr24.opposing_signals.data import TOP_LEFT_PATCH, make_opposing_digits


def test_planting():
    d = make_opposing_digits(alpha=10.0)
    clean = make_opposing_digits(alpha=0.0)
    assert d.x_train.shape == (1200, 64) and d.x_test.shape == (597, 64)
    assert len(d.group_a) == 60 and len(d.group_b) == 30
    assert (d.y_train[d.group_a] == 0).all() and (d.y_train[d.group_b] == 1).all()
    assert d.base_rate == pytest.approx(90 / 1200)
    diff = d.x_train - clean.x_train
    planted = d.planted
    assert torch.equal(diff[~planted], torch.zeros_like(diff[~planted]))
    patch = list(TOP_LEFT_PATCH)
    assert torch.allclose(diff[planted][:, patch], torch.full((90, 9), 10.0))
    other = [i for i in range(64) if i not in patch]
    assert torch.equal(diff[planted][:, other], torch.zeros(90, 55))
    assert float(clean.x_train.max()) <= 1.0
    torch.testing.assert_close(d.x_test, clean.x_test)


def test_bad_input():
    with pytest.raises(ValueError, match="alpha must be"):
        make_opposing_digits(alpha=float("nan"))
    with pytest.raises(ValueError, match="two different digits"):
        make_opposing_digits(class_a=3, class_b=3)
    with pytest.raises(ValueError, match="n for class 0"):
        make_opposing_digits(n_a=10_000)
    with pytest.raises(ValueError, match="pixel indices"):
        make_opposing_digits(patch=[64])
    with pytest.raises(ValueError, match="n_train"):
        make_opposing_digits(n_train=5)
