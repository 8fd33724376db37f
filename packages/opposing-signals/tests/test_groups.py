import math

import pytest
import torch

from iclr24.opposing_signals.groups import find_opposing_groups
from iclr24.opposing_signals.groups import group_gradient_cosine
from iclr24.opposing_signals.groups import group_mean_changes
from iclr24.opposing_signals.groups import kmeans
from iclr24.opposing_signals.groups import membership_frequency
from iclr24.opposing_signals.groups import pearson
from iclr24.opposing_signals.groups import top_k_precision
from iclr24.opposing_signals.tracking import LossTracker
from iclr24.opposing_signals.train import make_mlp


def test_sin_antiphase_correlation_is_minus_one():
    t = torch.linspace(0, 20, 400)
    assert pearson(torch.sin(t), -torch.sin(t)) == pytest.approx(-1.0, abs=1e-12)
    assert pearson(torch.sin(t), 3 * torch.sin(t) + 1) == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError, match="constant"):  # an InputError: no correlation, not NaN
        pearson(torch.ones(5), torch.arange(5.0))


def test_membership_and_precision():
    d = torch.tensor([[3.0, -2.0, 0.1, 0.0], [-3.0, 2.0, 0.0, 0.1]])
    cu, cd = membership_frequency(d, 1)
    assert cu.tolist() == [1, 1, 0, 0] and cd.tolist() == [1, 1, 0, 0]
    member = torch.tensor([True, False, False, False])
    assert top_k_precision(d, member, 2).tolist() == [0.5, 0.5]
    assert top_k_precision(d, member, 1).tolist() == [1.0, 1.0]
    torch.testing.assert_close(group_mean_changes(d, torch.tensor([0, 1])), torch.tensor([0.5, -0.5]))


def test_kmeans_separates_two_blobs():
    x = torch.cat([torch.zeros(5, 2), torch.full((4, 2), 10.0)]) + 0.01 * torch.arange(18.0).reshape(9, 2)
    a = kmeans(x, 2)
    assert len(set(a[:5].tolist())) == 1 and len(set(a[5:].tolist())) == 1 and a[0] != a[5]


class _Scripted(torch.nn.Module):
    """A 'model' whose per-example losses follow a script: two labelled groups oscillate in anti-phase."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))


def _scripted_tracker():
    n, steps = 30, 60
    x = torch.randn(n, 4, generator=torch.Generator().manual_seed(0))
    y = torch.zeros(n, dtype=torch.long)
    y[5:10] = 1
    y[10:15] = 2
    tr = LossTracker(_Scripted(), (x, y))
    g = torch.Generator().manual_seed(1)
    for t in range(steps):
        base = 1.0 + 0.001 * torch.rand(n, generator=g)
        s = math.sin(0.7 * t)
        base[0:5] += 2 + s  # label 0 group rises when label 1 falls
        base[5:10] += 2 - s
        base[10:15] += 2 + 0.5 * math.cos(1.3 * t)
        tr.record(t, base)
    return tr


def test_find_opposing_groups_recovers_the_scripted_pair():
    tr = _scripted_tracker()
    res = find_opposing_groups(tr, k=5, window=40, max_points=15)
    names = {g.name for g in res.groups}
    assert names == {"label 0", "label 1", "label 2"}
    assert {res.best.a, res.best.b} == {"label 0", "label 1"}
    assert res.best.corr < -0.99
    assert sorted(res.group("label 0").indices.tolist()) == [0, 1, 2, 3, 4]
    assert res.summary()["pairs"][0]["corr"] == res.best.corr
    km = find_opposing_groups(tr, k=5, window=40, max_points=15, cluster="kmeans", n_clusters=3)
    assert km.best is not None


def test_find_opposing_groups_bad_input():
    tr = _scripted_tracker()
    with pytest.raises(ValueError, match="window=100 is longer than the history"):
        find_opposing_groups(tr, k=5, window=100)
    with pytest.raises(ValueError, match="cluster must be one of"):
        find_opposing_groups(tr, k=5, window=10, cluster="spectral")
    with pytest.raises(ValueError, match="k must be an int in"):
        find_opposing_groups(tr, k=31, window=10)
    with pytest.raises(ValueError, match="tracker must be a LossTracker"):
        find_opposing_groups([1, 2, 3], k=5, window=10)


def test_group_gradient_cosine_sign():
    # a linear model on two groups whose only feature has opposite sign and the same label: gradients oppose
    m = torch.nn.Linear(1, 2, bias=False)
    with torch.no_grad():
        m.weight.fill_(0.5)
    x = torch.tensor([[1.0], [1.0], [-1.0], [-1.0]])
    y = torch.tensor([0, 0, 0, 0])
    assert group_gradient_cosine(m, x, y, torch.tensor([0, 1]), torch.tensor([2, 3])) < 0
    mm = make_mlp(1, 4, 1, 2)
    assert -1.0 <= group_gradient_cosine(mm, x, y, torch.tensor([0]), torch.tensor([2])) <= 1.0


def test_antiphase_amplitude_closed_form():
    from iclr24.opposing_signals.groups import antiphase_amplitude

    t = torch.linspace(0, 6.283185307179586, 401, dtype=torch.float64)[:-1]
    # Delta_A = sin t, Delta_B = -sin t: the anti-phase part is sin t, RMS 1/sqrt(2)
    assert antiphase_amplitude(torch.sin(t), -torch.sin(t)) == pytest.approx(0.5**0.5, rel=1e-9)
    # in phase: no anti-phase part at all, whatever the size
    assert antiphase_amplitude(3 * torch.sin(t), 3 * torch.sin(t)) == 0.0
    assert antiphase_amplitude(torch.tensor([1.0, -1.0]), torch.tensor([-1.0, 1.0])) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="same length"):
        antiphase_amplitude(torch.ones(3), torch.ones(2))


def test_run_experiment_single_class_control_and_bad_input():
    from iclr24.opposing_signals.data import make_opposing_digits
    from iclr24.opposing_signals.experiments import ExperimentConfig
    from iclr24.opposing_signals.experiments import run_experiment

    d = make_opposing_digits(alpha=10.0, n_a=10, n_b=0, n_train=200)
    cfg = ExperimentConfig(steps=4, width=16, k=5, sharpness_every=0)
    out, _ = run_experiment(d.x_train, d.y_train, cfg, d.group_a, d.group_b)
    assert out["base_rate"] == pytest.approx(0.05) and 0 <= out["precision"] <= 1
    assert "corr" not in out and "amplitude" not in out and "group B" not in out["curves"]
    with pytest.raises(ValueError, match="give both group_a and group_b"):
        run_experiment(d.x_train, d.y_train, cfg, d.group_a, None)
    with pytest.raises(ValueError, match=r"group_b indices must lie in \[0, 199\]"):
        run_experiment(d.x_train, d.y_train, cfg, d.group_a, torch.tensor([5, 200]))
    with pytest.raises(ValueError, match="both empty"):
        run_experiment(d.x_train, d.y_train, cfg, d.group_b, d.group_b)
    with pytest.raises(ValueError, match=r"labels y must lie in \[0, \.\.\.\)"):
        run_experiment(d.x_train, d.y_train - 1, cfg)
    with pytest.raises(ValueError, match="expected X"):
        run_experiment(d.x_train, d.y_train[:10], cfg)
    with pytest.raises(ValueError, match="is the SGD minibatch"):
        ExperimentConfig(optimizer="gd", batch_size=7)
