import numpy as np
import pytest

from iclr24.maxent_moco import Dyna, MoCoDyna, OSDyna, QLearning, TDLearning, cliffwalk, sample_stream


@pytest.fixture(scope="module")
def cw():
    return cliffwalk()


def test_sample_stream_is_reproducible_and_follows_P(cw):
    s, a, s2 = sample_stream(cw, 20000, seed=3)
    s_, a_, s2_ = sample_stream(cw, 20000, seed=3)
    assert np.array_equal(s2, s2_) and not np.array_equal(s2, sample_stream(cw, 20000, seed=4)[2])
    # empirical transition frequencies from state 7 under "right"
    m = (s == 7) & (a == 1)
    freq = np.bincount(s2[m], minlength=36) / m.sum()
    assert np.abs(freq - cw.P[7, 1]).max() < 0.08


def test_moco_dyna_beats_dyna_on_cliffwalk_control(cw):
    kw = dict(alpha=1.0, planning_interval=500, eval_every=1000)
    m = MoCoDyna(2, val_queue_interval=1500, **kw).run(cw, 20000, seed=0)
    d = Dyna(**kw).run(cw, 20000, seed=0)
    assert m.errors.shape == d.errors.shape == (21,)
    assert m.errors[-5:].mean() < 0.5 * d.errors[-5:].mean()
    # before the queue is full of values MoCoDyna plans on the count model exactly like Dyna
    assert np.array_equal(m.errors[:6], d.errors[:6])


def test_baselines_learn_and_are_deterministic(cw):
    q1 = QLearning(eval_every=2000).run(cw, 10000, seed=1)
    q2 = QLearning(eval_every=2000).run(cw, 10000, seed=1)
    assert np.array_equal(q1.errors, q2.errors) and q1.errors[-1] < q1.errors[0]
    o = OSDyna(alpha=0.5, planning_interval=500, eval_every=2000).run(cw, 10000, seed=1)
    assert o.errors[-1] < o.errors[0]
    td = TDLearning(eval_every=500).run(cw, 3000, seed=1)
    assert td.mode == "pe" and td.errors[-1] < 0.5 * td.errors[0]


def test_policy_evaluation_mode(cw):
    kw = dict(alpha=1.0, planning_interval=100, eval_every=500, mode="pe")
    m = MoCoDyna(2, val_queue_interval=300, **kw).run(cw, 5000, seed=0)
    d = Dyna(**kw).run(cw, 5000, seed=0)
    assert m.errors[-1] < 0.5 * d.errors[-1]


def test_bad_input(cw):
    with pytest.raises(ValueError, match="n_steps"):
        QLearning().run(cw, 0)
    with pytest.raises(ValueError, match="lr"):
        QLearning(lr=2.0)
    with pytest.raises(ValueError, match="planning_interval"):
        MoCoDyna(2, planning_interval=0)
    with pytest.raises(ValueError, match="seed"):
        Dyna().run(cw, 10, seed=-1)


def test_correcting_from_the_start_uses_the_random_basis(cw):
    kw = dict(alpha=1.0, planning_interval=500, val_queue_interval=1500, eval_every=500)
    wait = MoCoDyna(2, **kw).run(cw, 3000, seed=0)
    early = MoCoDyna(2, wait_for_values=False, **kw).run(cw, 3000, seed=0)
    dyna = Dyna(alpha=1.0, planning_interval=500, eval_every=500).run(cw, 3000, seed=0)
    assert np.array_equal(wait.values, dyna.values)  # no value pushed yet: the default still plans like Dyna
    assert not np.allclose(early.values[1:], dyna.values[1:])  # corrected with the random orthogonal basis
