import math

import pytest
import torch
from torch import nn

from iclr24.opposing_signals.tracking import LossTracker
from iclr24.opposing_signals.tracking import loss_changes
from iclr24.opposing_signals.tracking import mean_loss
from iclr24.opposing_signals.tracking import per_example_loss
from iclr24.opposing_signals.tracking import top_k_indices
from iclr24.opposing_signals.train import make_mlp
from iclr24.opposing_signals.train import train


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


def test_train_uses_the_trackers_loss_and_records_what_it_names():
    # a LossTracker(loss="ce") must store CE values, and train must then minimise CE (not its MSE default)
    x, y = _data(20)
    m, ref = make_mlp(5, 8, 2, 3, seed=4), make_mlp(5, 8, 2, 3, seed=4)
    tr = LossTracker(m, (x, y), loss="ce")
    hist = train(m, x, y, tracker=tr, steps=3, lr=0.1, sharpness_every=0)
    assert hist.config.loss == "ce" and hist.to_dict()["config"]["loss"] == "ce"
    with torch.no_grad():
        ce0 = per_example_loss(ref(x), y, "ce")
    torch.testing.assert_close(tr.losses[0], ce0)
    assert hist.loss[0] == pytest.approx(float(ce0.mean()), rel=1e-6)
    # the same run with loss="ce" given explicitly is the same run
    m2 = make_mlp(5, 8, 2, 3, seed=4)
    tr2 = LossTracker(m2, (x, y), loss="ce")
    train(m2, x, y, tracker=tr2, steps=3, lr=0.1, sharpness_every=0, loss="ce")
    torch.testing.assert_close(tr.losses, tr2.losses)
    # without a tracker the default stays MSE
    assert train(make_mlp(5, 8, 2, 3), x, y, steps=1, sharpness_every=0).config.loss == "mse"


def test_train_refuses_a_loss_that_differs_from_the_trackers():
    x, y = _data(20)
    m = make_mlp(5, 8, 2, 3)
    tr = LossTracker(m, (x, y), loss="ce")
    before = [p.detach().clone() for p in m.parameters()]
    with pytest.raises(ValueError, match=r"train\(loss='mse'\) but the tracker records loss='ce'"):
        train(m, x, y, tracker=tr, steps=3, loss="mse", sharpness_every=0)
    assert len(tr) == 0 and all(torch.equal(a, b) for a, b in zip(before, m.parameters()))


def test_tracker_of_another_model_runs_its_own_pass():
    x, y = _data(20)
    trained, watched = make_mlp(5, 8, 2, 3, seed=1), make_mlp(5, 8, 2, 3, seed=2)
    tr = LossTracker(watched, (x, y))
    train(trained, x, y, tracker=tr, steps=3, lr=0.1, sharpness_every=0)
    # the watched model never moves, so its losses never change (the trained model's forward was not reused)
    assert torch.equal(tr.losses[0], tr.losses[-1])


def _double_data(n=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 5, generator=g, dtype=torch.float64), torch.randint(0, 3, (n,), generator=g)


@pytest.mark.parametrize("optimizer", ["gd", "sgd", "adam"])
def test_physical_batches_give_the_one_pass_run(optimizer):
    # Cohen et al. accumulate over physical batches; the run must be the one-pass run up to float rounding
    x, y = _double_data(10)
    extra = {"batch_size": 7} if optimizer == "sgd" else {}
    runs = []
    for pb in (None, 3):
        m = make_mlp(5, 8, 2, 3, seed=3).double()
        tr = LossTracker(m, (x, y), loss="ce", physical_batch_size=pb)
        h = train(
            m,
            x,
            y,
            tracker=tr,
            optimizer=optimizer,
            lr=0.1,
            steps=3,
            sharpness_every=3,
            sharpness_iters=8,
            physical_batch_size=pb,
            **extra,
        )
        runs.append((h, tr, torch.cat([p.detach().reshape(-1) for p in m.parameters()])))
    (h1, t1, p1), (h2, t2, p2) = runs
    torch.testing.assert_close(torch.tensor(h1.loss), torch.tensor(h2.loss), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(torch.tensor(h1.sharpness), torch.tensor(h2.sharpness), rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(t1.losses, t2.losses, rtol=1e-6, atol=1e-7)  # stored as float32
    torch.testing.assert_close(p1, p2, rtol=1e-12, atol=1e-12)
    assert h1.accuracy == h2.accuracy


def test_sharpness_on_a_fixed_subset():
    from iclr24.opposing_signals.hessian import sharpness
    from iclr24.opposing_signals.train import sharpness_indices

    x, y = _double_data(12)
    m = make_mlp(5, 8, 2, 3, seed=5).double()
    idx = sharpness_indices(5, 12, seed=0)
    assert idx.tolist() == sorted(idx.tolist()) and len(set(idx.tolist())) == 5
    want = sharpness(m, mean_loss("mse"), (x[idx], y[idx]), iters=20)
    h = train(m, x, y, steps=1, lr=1e-9, sharpness_every=1, sharpness_subset=5, sharpness_iters=20)
    assert h.sharpness[0] == pytest.approx(want, rel=1e-9)
    h = train(
        make_mlp(5, 8, 2, 3, seed=5).double(), x, y, steps=1, sharpness_every=1, sharpness_subset=(0, 4)
    )
    assert h.to_dict()["config"]["sharpness_subset"] == [0, 4]
    with pytest.raises(ValueError, match="sharpness_subset must be in"):
        train(m, x, y, steps=1, sharpness_subset=13)


def test_bad_labels_shapes_and_options_are_refused_before_training():
    x, y = _data(10)
    m = make_mlp(5, 8, 2, 3)
    before = [p.detach().clone() for p in m.parameters()]
    with pytest.raises(ValueError, match=r"labels y must lie in \[0, 2\].*got values in \[\d, 5\]"):
        train(m, x, torch.where(y == 0, torch.tensor(5), y), steps=2, sharpness_every=0)
    with pytest.raises(ValueError, match=r"labels y must lie in \[0, \.\.\.\)"):
        train(m, x, y - 1, steps=2, sharpness_every=0)
    with pytest.raises(ValueError, match="must be integer class indices"):
        train(m, x, y.float(), steps=2, sharpness_every=0)
    with pytest.raises(ValueError, match=r"could not be applied to X of shape \(N, 4\)"):
        train(m, x[:, :4], y, steps=2, sharpness_every=0)
    with pytest.raises(ValueError, match="is the SGD minibatch"):
        train(m, x, y, optimizer="gd", batch_size=7, steps=2)
    with pytest.raises(ValueError, match="larger than the training set"):
        train(m, x, y, optimizer="sgd", batch_size=11, steps=2)
    with pytest.raises(ValueError, match="unknown training option"):
        train(m, x, y, step=2)
    with pytest.raises(ValueError, match="physical_batch_size must be"):
        train(m, x, y, steps=2, physical_batch_size=0)
    with pytest.raises(ValueError, match="momentum is for"):
        train(m, x, y, optimizer="adam", momentum=0.9)
    with pytest.raises(ValueError, match="labels y must be 1-D"):
        LossTracker(m, (x, y[:, None]))
    with pytest.raises(ValueError, match=r"lie in \[0, 2\]"):
        per_example_loss(m(x), torch.full((10,), 3))
    assert all(torch.equal(a, b) for a, b in zip(before, m.parameters()))
