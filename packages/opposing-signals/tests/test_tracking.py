import math

import pytest
import torch
from torch import nn

from iclr24.opposing_signals.tracking import (
    LossTracker,
    loss_changes,
    mean_loss,
    per_example_loss,
    top_k_indices,
)
from iclr24.opposing_signals.training import make_mlp, train


def _data(n=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 5, generator=g), torch.randint(0, 3, (n,), generator=g)


@pytest.mark.parametrize("loss", ["mse", "ce"])
def test_per_example_mean_equals_batch_loss(loss):
    x, y = _data()
    out = make_mlp(5, 8, 2, 3)(x)
    per = per_example_loss(out, y, loss)
    assert per.shape == (12,)
    if loss == "mse":
        ref = 0.5 * ((out - nn.functional.one_hot(y, 3).float()) ** 2).sum() / 12
    else:
        ref = nn.functional.cross_entropy(out, y)
    torch.testing.assert_close(per.mean(), ref)
    torch.testing.assert_close(mean_loss(loss)(out, y), ref)


def test_mse_per_example_closed_form():
    out = torch.tensor([[1.0, 0.0], [0.0, 3.0]])
    y = torch.tensor([0, 0])
    # 1/2 ||f - e_y||^2: 0 and 1/2 (1 + 9) = 5
    torch.testing.assert_close(per_example_loss(out, y), torch.tensor([0.0, 5.0]))


def test_top_k_ties_are_broken_by_index():
    d = torch.tensor([1.0, 3.0, 3.0, -3.0, 0.0, 3.0])
    assert top_k_indices(d, 2, "up").tolist() == [1, 2]
    assert top_k_indices(d, 3, "abs").tolist() == [1, 2, 3]
    assert top_k_indices(d, 1, "down").tolist() == [3]
    rows = torch.stack([d, -d])
    assert top_k_indices(rows, 2, "up").tolist() == [[1, 2], [3, 4]]


def test_loss_changes():
    h = torch.tensor([[1.0, 2.0], [0.5, 2.5], [0.0, 3.0]])
    torch.testing.assert_close(loss_changes(h), torch.tensor([[-0.5, 0.5], [-0.5, 0.5]]))


def test_tracker_reuses_gd_forward_and_matches_eval_pass():
    x, y = _data(20)
    m1, m2 = make_mlp(5, 8, 2, 3, seed=1), make_mlp(5, 8, 2, 3, seed=1)
    shared = LossTracker(m1, (x, y), subset=[3, 7, 11])
    separate = LossTracker(m2, (x.clone(), y), subset=[3, 7, 11])  # another tensor: eval passes
    train(m1, x, y, tracker=shared, steps=5, lr=0.1, sharpness_every=0)
    train(m2, x, y, tracker=separate, steps=5, lr=0.1, sharpness_every=0)
    assert shared.losses.shape == (6, 3)
    torch.testing.assert_close(shared.losses, separate.losses)
    assert shared.history([7]).shape == (6, 1)
    assert shared.nbytes() == 4 * 6 * 3
    movers = shared.top_movers(2)
    assert set(movers.tolist()) <= {3, 7, 11}


def test_tracker_every_and_random_subset():
    x, y = _data(20)
    m = make_mlp(5, 8, 2, 3)
    tr = LossTracker(m, (x, y), every=2, subset=5, seed=3)
    assert tr.n == 5 and len(set(tr.indices.tolist())) == 5
    train(m, x, y, tracker=tr, steps=6, lr=0.1, sharpness_every=0)
    assert tr.steps == [0, 2, 4, 6]


def test_tracker_bad_input():
    x, y = _data(10)
    m = make_mlp(5, 8, 2, 3)
    with pytest.raises(ValueError, match="subset size must be in"):
        LossTracker(m, (x, y), subset=11)
    with pytest.raises(ValueError, match="subset has 11 indices"):
        LossTracker(m, (x, y), subset=list(range(11)))
    with pytest.raises(ValueError, match="loss must be one of"):
        LossTracker(m, (x, y), loss="hinge")
    with pytest.raises(ValueError, match="no parameters that require grad"):
        LossTracker(make_mlp(5, 8, 2, 3).requires_grad_(False), (x, y))
    with pytest.raises(ValueError, match="every must be"):
        LossTracker(m, (x, y), every=0)
    tr = LossTracker(m, (x, y))
    tr.record(0)
    tr.record(1)
    with pytest.raises(ValueError, match="window=5 is longer than the history"):
        tr.deltas(window=5)
    bad = torch.ones(10)
    bad[4] = math.nan
    with pytest.raises(ValueError, match="non-finite per-example loss at step 2"):
        tr.record(2, bad)


def test_nan_during_training_names_the_step():
    x, y = _data(10)
    m = make_mlp(5, 8, 2, 3)
    tr = LossTracker(m, (x, y))
    with pytest.raises(ValueError, match=r"non-finite.*at step \d+"):
        train(m, x * 1e3, y, tracker=tr, lr=50.0, steps=200, sharpness_every=0)
