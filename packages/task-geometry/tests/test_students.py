import numpy as np
import pytest
import torch

from iclr24.task_geometry.students import MLP
from iclr24.task_geometry.students import TrainConfig
from iclr24.task_geometry.students import make_activation
from iclr24.task_geometry.students import train_student
from iclr24.task_geometry.students import train_students
from iclr24.task_geometry.students import weight_projections
from iclr24.task_geometry.tasks import walsh_cube


def _reference_training(task, act, seed, epochs, batch=64, lr=1e-2):
    """The plain one-model loop the ensemble must reproduce."""
    torch.manual_seed(seed)
    model = MLP(task.X.shape[1], task.Y.shape[1], act=act)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        perm = torch.randperm(task.X.shape[0], generator=g)
        for s in range(0, task.X.shape[0], batch):
            idx = perm[s : s + batch]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(model(task.X[idx]), task.Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


def test_ensemble_equals_separate_training():
    t1 = walsh_cube(3, k=1, a=1.0, n_samples=300, seed=0)
    t3 = walsh_cube(3, k=3, a=1.0, n_samples=300, seed=1)
    sts = train_students([t1, t3, t1], ["tanh", "relu", "relu"], [0, 1, 2], epochs=2)
    for st, task in zip(sts, [t1, t3, t1], strict=True):
        ref = _reference_training(task, st.act, st.seed, epochs=2)
        for (n, a), (_, b) in zip(st.model.state_dict().items(), ref.state_dict().items(), strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), atol=2e-5, rtol=1e-4, err_msg=n)
    assert sts[1].model.readout.out_features == 3 and sts[0].model.readout.out_features == 1


@pytest.mark.slow  # 10 students x 780 steps
def test_students_reach_full_accuracy_on_condition_means():
    cells = [(1, 0.0), (1, 1.0), (1, 3.5), (3, 0.0), (3, 1.0)]
    tasks = [walsh_cube(3, k=k, a=a, n_samples=5000, seed=0) for k, a in cells]
    sts = train_students(tasks * 2, ["tanh"] * 5 + ["relu"] * 5, [0] * 10, epochs=10)
    for st, task in zip(sts, tasks * 2, strict=True):
        assert st.accuracy(task.means, task.targets) == 1.0, (st.act, task.name)
        assert st.losses[-1] < st.losses[0]


def test_stop_rule_fixed_readout_and_snapshots():
    t = walsh_cube(3, k=1, a=1.0, n_samples=256)
    st = train_student(t, "tanh", TrainConfig(epochs=5, stop_tol=10.0), seed=0)
    assert st.epochs_run == 1  # nothing moves by more than 10 in an epoch
    st = train_student(t, "relu", TrainConfig(epochs=2, fixed_readout=True, record_every=2), seed=0)
    w = st.model.readout.weight.detach()
    # k = 1: the balanced patterns are -1, +1 (twice each), 32 units each, scaled by 1/sqrt(N)
    assert torch.equal(w.abs(), torch.full_like(w, 128**-0.5)) and int((w > 0).sum()) == 64
    assert torch.equal(st.model.readout.bias, torch.zeros(1))
    assert [s for s, _, _ in st.snapshots] == [0, 2, 4, 6, 8]
    proj = weight_projections(st.snapshots[-1][1], t.means, t.targets[:, 0])
    assert proj.shape == (128, 2) and np.isfinite(proj).all()


def test_representation_depth():
    m = MLP(5, 2, width=7, depth=3, act="hardtanh")
    x = torch.randn(4, 5)
    assert m.representation(x).shape == (4, 7)
    assert np.abs(m.representation(x)).max() <= 1.0
    with torch.no_grad():
        first = m.hidden[:2](x).double().numpy()
    np.testing.assert_allclose(m.representation(x, layer=0), first, atol=1e-6)


def test_activations_known():
    assert isinstance(make_activation("tanh"), torch.nn.Tanh)
    out = make_activation("clipped_relu")(torch.tensor([-1.0, 0.5, 3.0]))
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.5, 1.0])


def test_bad_inputs():
    t = walsh_cube(3, k=1, a=1.0, n_samples=64)
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        train_student(t, "swish")
    with pytest.raises(ValueError, match="0/1 labels"):
        train_student((t.X, t.Y * 2), "tanh", epochs=1)
    X = t.X.clone()
    X[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        train_student((X, t.Y), "tanh", epochs=1)
    with pytest.raises(ValueError, match="same n"):
        train_student((t.X[:10], t.Y), "tanh", epochs=1)
    with pytest.raises(ValueError, match="lr must be a positive"):
        TrainConfig(lr=0)
    with pytest.raises(ValueError, match="one task, act and seed"):
        train_students([t], ["tanh", "relu"], [0])


def test_students_trained_together_stop_together_as_the_research_code():
    # tol 0.01 on this task: tanh stops moving after 7 epochs, relu after 5 (each alone)
    t = walsh_cube(3, k=1, a=1.0, n_samples=256)
    cfg = TrainConfig(epochs=30, stop_tol=0.01)
    together = train_students([t, t], ["tanh", "relu"], [0, 0], cfg)
    each = train_students(
        [t, t], ["tanh", "relu"], [0, 0], TrainConfig(epochs=30, stop_tol=0.01, stop_each=True)
    )
    alone = [train_student(t, a, cfg, seed=0) for a in ("tanh", "relu")]
    assert [s.epochs_run for s in each] == [s.epochs_run for s in alone]
    assert each[0].epochs_run > each[1].epochs_run
    assert [s.epochs_run for s in together] == [each[0].epochs_run] * 2


def test_balanced_readout_is_the_research_codes_balanced_binary():
    from iclr24.task_geometry import balanced_readout

    # k = 2, N = 16: 2k one-output patterns, then the 2^k full patterns (bit i of j on output i), 2 units each
    J = balanced_readout(2, 16) * 4.0
    cols = [[-1, 0], [1, 0], [0, -1], [0, 1], [-1, -1], [1, -1], [-1, 1], [1, 1]]
    assert torch.equal(J, torch.tensor(cols, dtype=torch.float32).T.repeat_interleave(2, dim=1))
    # k = 3, N = 128: 14 patterns, 9 units each and 2 left-over units on random patterns
    J = balanced_readout(3, 128, torch.Generator().manual_seed(0)) * 128**0.5
    uniq, counts = torch.unique(J.round(), dim=1, return_counts=True)
    assert uniq.shape[1] == 14 and sorted(counts.tolist()) == [9] * 12 + [10] * 2
    assert set((J != 0).sum(0).tolist()) == {1, 3}
    with pytest.raises(ValueError, match="width"):
        balanced_readout(2, 0)
