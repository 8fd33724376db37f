import numpy as np
import pytest

from iclr24.maxent_moco import COUNT_MODELS
from iclr24.maxent_moco import Dyna
from iclr24.maxent_moco import MoCoDyna
from iclr24.maxent_moco import OSDyna
from iclr24.maxent_moco import QLearning
from iclr24.maxent_moco import TDLearning
from iclr24.maxent_moco import cliffwalk
from iclr24.maxent_moco import sample_stream
from iclr24.maxent_moco import solve_control


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


def test_baselines_learn_and_are_deterministic(cw):
    q1 = QLearning(eval_every=2000).run(cw, 10000, seed=1)
    q2 = QLearning(eval_every=2000).run(cw, 10000, seed=1)
    assert np.array_equal(q1.errors, q2.errors) and q1.errors[-1] < q1.errors[0]
    o = OSDyna(alpha=0.5, eval_every=1000).run(cw, 4000, seed=1)
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
    with pytest.raises(ValueError, match="variant"):
        OSDyna(variant="sometimes")
    with pytest.raises(ValueError, match="alpha"):
        OSDyna(alpha=1.5)
    with pytest.raises(ValueError, match="at least one seed"):
        OSDyna().run_many(cw, 10, [])


def test_default_corrects_from_the_first_plan_as_the_official_code(cw):
    # the official MECDyna_Control.py fills the queue with d + 2 random orthogonal vectors before the loop, so the
    # gate is open at k = 0; waiting for d + 2 pushed values is a variant, not the default
    assert MoCoDyna(2).wait_for_values is False
    kw = dict(alpha=1.0, planning_interval=500, val_queue_interval=1500, eval_every=500)
    default = MoCoDyna(2, **kw).run(cw, 3000, seed=0)
    wait = MoCoDyna(2, wait_for_values=True, **kw).run(cw, 3000, seed=0)
    plain = MoCoDyna(0, **kw).run(cw, 3000, seed=0)  # d = 0: the uncorrected count model, same plan times
    assert np.array_equal(wait.values, plain.values)  # no value pushed yet: the variant still plans like Dyna
    assert not np.allclose(default.values[1:], plain.values[1:])  # corrected with the random orthogonal basis
    assert wait.name == "MoCoDyna(d=2), wait" and default.name == "MoCoDyna(d=2)"


def _os_dyna_reference(mdp, n, seed, alpha, lr=0.02, eval_every=50):
    """OS-Dyna exactly as MSDyna_Control.py, by brute force: the count model from scratch and a fresh exact
    solve after every sample (the official code runs value iteration to 1e-6 there)."""
    s, a, s2 = sample_stream(mdp, n, seed)
    S, A = mdp.n_states, mdp.n_actions
    N, g, V = np.zeros((S, A, S)), np.zeros((S, A)), np.zeros(S)

    def phat():
        tot = N.sum(2, keepdims=True)
        seen = (N > 0).astype(float)
        k = seen.sum(2, keepdims=True)
        emp = np.divide(N, tot, out=np.full_like(N, 1 / S), where=tot > 0)
        unif = np.divide(seen, k, out=np.full_like(N, 1 / S), where=k > 0)
        return (1 - alpha) * emp + alpha * unif

    vals, pols = [], []
    for t in range(n + 1):
        Ph = phat()
        if t % eval_every == 0:
            vals.append(V.copy())
            pols.append((g + mdp.gamma * Ph @ V).argmax(1))
        if t == n:
            break
        x, y, z = s[t], a[t], s2[t]
        g[x, y] += lr * (mdp.R[x, y] + mdp.gamma * V[z] - mdp.gamma * Ph[x, y] @ V - g[x, y])
        N[x, y, z] += 1
        V, _ = solve_control(Ph, g, mdp.gamma)  # re-solved after every sample, in the model before it
    return np.array(vals), np.array(pols)


@pytest.mark.parametrize("alpha", [0.1, 1.0])
def test_os_dyna_resolves_after_every_sample_as_the_official_code(cw, alpha):
    vals, pols = _os_dyna_reference(cw, 600, 3, alpha)
    tr = OSDyna(alpha=alpha, eval_every=50).run(cw, 600, seed=3)
    assert np.abs(tr.values - vals).max() < 1e-9
    assert np.array_equal(tr.policies, pols)
    many = OSDyna(alpha=alpha, eval_every=50).run_many(cw, 600, [5, 3])  # vectorised over seeds: same traces
    assert np.array_equal(many[1].values, tr.values) and np.array_equal(many[1].errors, tr.errors)
    # the cheaper variant re-plans only every planning_interval samples: a different algorithm, named so
    stale = OSDyna(alpha=alpha, variant="interval", planning_interval=200, eval_every=50).run(cw, 600, seed=3)
    assert stale.name == "OS-Dyna(every 200)" and not np.allclose(stale.values, vals)


def test_count_models_of_the_official_code(cw):
    from iclr24.maxent_moco.sample import _CountModel

    s, a, s2 = sample_stream(cw, 3000, seed=1)
    for kind in COUNT_MODELS:
        cm = _CountModel(cw, 0.5, kind)
        assert np.allclose(cm.rows.sum(axis=2), 1)
        for x, y, z in zip(s[:1500], a[:1500], s2[:1500]):
            cm.add(int(x), int(y), int(z), cw.R)
        cm.update(s[1500:], a[1500:], s2[1500:], cw.R)
        k = cm.kernel()
        assert np.abs(cm.rows - k).max() < 1e-12 and np.allclose(k.sum(axis=2), 1)
    adv = _CountModel(cw, 1.0, "adversarial").kernel()
    assert np.allclose(adv[7, 1], cw.P[7, 0])  # alpha = 1: every action moves like "up"
    ident = _CountModel(cw, 1.0, "identity_smoothed").kernel()
    assert ident[7, 2, 7] == 1.0
    with pytest.raises(ValueError, match="model must be one of"):
        Dyna(model="bogus")
    tr = MoCoDyna(2, model="adversarial", alpha=0.5, planning_interval=500, eval_every=1000).run(
        cw, 2000, seed=0
    )
    assert np.isfinite(tr.errors).all()
