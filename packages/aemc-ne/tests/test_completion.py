import numpy as np
import pytest
import torch

from iclr24.aemc_ne import AEMC
from iclr24.aemc_ne import AEMCNE
from iclr24.aemc_ne import AutoRec
from iclr24.aemc_ne import FitConfig
from iclr24.aemc_ne import MatrixFactorization
from iclr24.aemc_ne import Ratings
from iclr24.aemc_ne import load_model
from iclr24.aemc_ne import rmse
from iclr24.aemc_ne.completion import relative_rmse
from iclr24.aemc_ne.data import make_synthetic

SMALL = dict(main_hidden=(6, 3, 6))
FIT = dict(epochs=20, lr=1e-2, eval_every=5, standardize=True, quiet=True)


@pytest.fixture(scope="module")
def syn():
    return make_synthetic(n_rows=12, n_cols=40, rank=2, response="sigmoid5", seed=3)


def test_metrics_closed_forms():
    assert rmse(np.array([1.0, 3.0]), np.array([0.0, 0.0])) == pytest.approx(np.sqrt(5))
    assert relative_rmse(np.array([1.0, 3.0]), np.array([2.0, 2.0])) == pytest.approx(1 / 2)


def test_orientation_user_on_transpose_equals_item(syn):
    """Spec check 5: training on X^T with orientation='user' equals training on X with orientation='item'."""
    a = AEMCNE(**SMALL, orientation="item").fit(syn.train, **FIT)
    b = AEMCNE(**SMALL, orientation="user").fit(syn.train.transpose(), **FIT)
    t = syn.test
    assert np.array_equal(a.predict(t.users, t.items), b.predict(t.items, t.users))
    assert np.array_equal(a.complete(), b.complete().T)
    # ... and the other orientation on the same matrix is a different model (the check can fail)
    c = AEMCNE(**SMALL, orientation="user").fit(syn.train, **FIT)
    assert not np.allclose(a.predict(t.users, t.items), c.predict(t.users, t.items))


def test_unobserved_values_never_matter(syn):
    """Spec check 2 end to end: only M * X enters; a different value at an unobserved entry changes nothing."""
    x, m = syn.train.to_dense()
    x2 = np.where(m, x, 1e3)
    a = AEMC(**SMALL).fit(Ratings.from_dense(x, m), **FIT)
    b = AEMC(**SMALL).fit(Ratings.from_dense(x2, m), **FIT)
    assert np.array_equal(a.complete(), b.complete())


def test_validation_selection_never_reads_test_and_picks_best_val_epoch(syn):
    """Spec check 8: the epoch is selected on the validation hold-out (carved from train); test entries are not an
    input of fit, so changing them cannot change the model."""
    m = AEMCNE(**SMALL).fit(syn.train, **{**FIT, "epochs": 30}, val_fraction=0.2)
    vals = [h["val_rmse"] for h in m.history]
    assert m.best_epoch_ == m.history[int(np.argmin(vals))]["epoch"]
    assert m.best_val_rmse_ == pytest.approx(min(vals))
    assert m.n_val_ == round(0.2 * len(syn.train))
    # the held-out validation values are not in the autoencoder's input
    assert m._x.nnz == len(syn.train) - m.n_val_
    # moving one validation rating moves the validation curve but not the training losses
    m2 = AEMCNE(**SMALL).fit(
        Ratings(syn.train.users, syn.train.items, syn.train.values + 0.0, *syn.train.shape),
        **{**FIT, "epochs": 30},
        val_fraction=0.2,
    )
    assert [h["train_loss"] for h in m.history] == [h["train_loss"] for h in m2.history]


def test_propensity_of_ones_reproduces_unweighted_fit(syn):
    a = AEMCNE(**SMALL).fit(syn.train, **FIT)
    b = AEMCNE(**SMALL).fit(syn.train, propensity=np.ones(len(syn.train)), **FIT)
    c = AEMCNE(**SMALL).fit(syn.train, propensity=np.full(len(syn.train), 0.5), **FIT)
    assert np.array_equal(a.complete(), b.complete())
    assert not np.array_equal(a.complete(), c.complete())


def test_identity_g_estimator_starts_from_the_same_main_net(syn):
    """AEMC and AEMC-NE with one seed get the same main-net initialisation (a fair ablation)."""
    a = AEMC(**SMALL).fit(syn.train, **{**FIT, "epochs": 1, "lr": 1e-12})
    b = AEMCNE(**SMALL).fit(syn.train, **{**FIT, "epochs": 1, "lr": 1e-12})
    for pa, pb in zip(a.net_.main.parameters(), b.net_.main.parameters()):
        assert torch.allclose(pa, pb, atol=1e-9)


def test_minibatch_training_is_deterministic_and_learns(syn):
    kw = {**FIT, "epochs": 15, "batch_size": 10}
    a = AEMCNE(**SMALL).fit(syn.train, **kw)
    b = AEMCNE(**SMALL).fit(syn.train, **kw)
    assert np.array_equal(a.complete(), b.complete())
    assert a.history[-1]["train_loss"] < a.history[0]["train_loss"]


def test_training_reduces_error_and_clip(syn):
    m = AEMCNE(**SMALL).fit(syn.train, **{**FIT, "epochs": 60}, clip=(1.0, 5.0))
    base = rmse(np.full(len(syn.test), syn.train.values.mean()), syn.test.values)
    assert m.score(syn.test) < base
    c = m.complete()
    assert c.min() >= 1.0 and c.max() <= 5.0


def test_autorec_and_mf_baselines(syn):
    ar = AutoRec("user", hidden=8)
    assert ar.activation == "sigmoid" and ar.main_hidden == (8,) and ar.orientation == "user"
    mf = MatrixFactorization(rank=2).fit(syn.train, epochs=200, lr=5e-2, eval_every=20, quiet=True)
    base = rmse(np.full(len(syn.test), syn.train.values.mean()), syn.test.values)
    assert mf.score(syn.test) < base


def test_save_load_round_trip(syn, tmp_path):
    for model in (AEMCNE(**SMALL, shared=False), AEMC(**SMALL, orientation="user")):
        model.fit(syn.train, **FIT)
        path = model.save(tmp_path / "m.pt")
        back = load_model(path)
        assert np.array_equal(model.complete(), back.complete())
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a file this package wrote"):
        load_model(tmp_path / "junk.pt")
    with pytest.raises(FileNotFoundError, match="aemc-ne train"):
        load_model(tmp_path / "missing.pt")


def test_bad_input_at_fit_and_predict(syn):
    m = AEMC(**SMALL)
    with pytest.raises(ValueError, match="not fitted"):
        m.predict([0], [0])
    with pytest.raises(ValueError, match="Ratings"):
        m.fit(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="lr must be"):
        m.fit(syn.train, lr=-1.0)
    with pytest.raises(ValueError, match="unknown fit option"):
        m.fit(syn.train, epoch=3)
    with pytest.raises(ValueError, match="orientation"):
        AEMC(orientation="rows")
    # a mask that leaves no validation entry
    tiny = Ratings(np.array([0, 1, 0]), np.array([0, 1, 1]), np.array([1.0, 2.0, 3.0]), 2, 2)
    with pytest.raises(ValueError, match="validation entries"):
        AEMC(main_hidden=(2,)).fit(tiny, val_fraction=0.1)
    # a user with no training rating: its output row can never be fitted
    lone = Ratings(np.array([0, 0]), np.array([0, 1]), np.array([1.0, 2.0]), 2, 2)
    with pytest.raises(ValueError, match="no training rating"):
        AEMC(main_hidden=(2,)).fit(lone, val_fraction=0.0)
    with pytest.raises(ValueError, match="propensity"):
        m.fit(syn.train, propensity=np.zeros(len(syn.train)), **FIT)
    m.fit(syn.train, **FIT)
    with pytest.raises(ValueError, match="user index out of range"):
        m.predict([syn.train.n_users], [0])
    with pytest.raises(ValueError, match="item index out of range"):
        m.predict([0], [-1])
    with pytest.raises(ValueError, match="integer"):
        m.predict([0.5], [1.0])
    with pytest.raises(ValueError):
        FitConfig(clip=(5, 1))
    with pytest.raises(ValueError):
        MatrixFactorization(rank=0)


def test_bound_terms_form(syn):
    from iclr24.aemc_ne.theory import bound_terms

    ae = AEMC(**SMALL).fit(syn.train, **FIT)
    ne = AEMCNE(**SMALL).fit(syn.train, **FIT)
    a, b = bound_terms(ae), bound_terms(ne)
    assert (a["n"], a["m"], a["n_minus_m"]) == (40, 12, 28)  # item orientation: 40 samples of 12 features
    assert a["L"] == 4 and b["L"] == 4 + 3
    assert a["complexity_form"] == pytest.approx(np.sqrt(4**3 * np.mean([12, 6, 3, 6, 12]) / 40))
    w = [p.detach().double() for n, p in ae.net_.main.named_parameters() if n.endswith("weight")]
    assert a["lipschitz_product"] == pytest.approx(
        np.prod([torch.linalg.matrix_norm(x, 2).item() for x in w])
    )
    assert a["train_mse"] >= 0 and b["complexity_form"] > a["complexity_form"]
    with pytest.raises(ValueError, match="fitted"):
        bound_terms(AEMC(**SMALL))


def test_minibatch_loss_equals_full_batch_loss_at_initialisation(syn):
    """With a vanishing step, the entry-weighted mean of the minibatch losses over one epoch is the full-batch loss:
    the minibatches cover every observed entry exactly once, with the right targets and input columns."""
    kw = {**FIT, "epochs": 1, "eval_every": 1, "lr": 1e-12}
    a = AEMCNE(**SMALL).fit(syn.train, **kw, val_fraction=0.0)
    b = AEMCNE(**SMALL).fit(syn.train, **kw, val_fraction=0.0, batch_size=7)
    assert b.history[0]["train_loss"] == pytest.approx(a.history[0]["train_loss"], rel=1e-5)
    # a wrong target order would show: the loss with shuffled targets differs
    shuffled = Ratings(syn.train.users, syn.train.items, syn.train.values[::-1].copy(), *syn.train.shape)
    c = AEMCNE(**SMALL).fit(shuffled, **kw, val_fraction=0.0, batch_size=7)
    assert c.history[0]["train_loss"] != pytest.approx(a.history[0]["train_loss"], rel=1e-3)


def test_duplicate_pairs_are_refused():
    dup = Ratings(np.array([0, 0, 1]), np.array([0, 0, 1]), np.array([1.0, 2.0, 3.0]), 2, 2)
    with pytest.raises(ValueError, match="more than once"):
        AEMC(main_hidden=(2,)).fit(dup, val_fraction=0.0)


class _Evil:
    def __reduce__(self):
        return (print, ("this must never run",))


def test_checkpoints_with_wrong_inner_keys_or_code_are_refused_in_one_line(syn, tmp_path, capsys):
    import torch

    model = AEMCNE(**SMALL).fit(syn.train, **FIT)
    good = torch.load(model.save(tmp_path / "m.pt"), weights_only=True)

    def check(obj, match):
        torch.save(obj, tmp_path / "bad.pt")
        with pytest.raises(ValueError, match=match) as e:
            load_model(tmp_path / "bad.pt")
        assert "\n" not in str(e.value) and "weights_only=False" not in str(e.value)

    check({k: v for k, v in good.items() if k != "spec"}, "lacks spec")
    check({**good, "spec": {**good["spec"], "depth": 3}}, "damaged aemc-ne checkpoint .*TypeError")
    check({**good, "spec": {**good["spec"], "kind": "GAN"}}, "spec kind")
    check({**good, "state": {**good["state"], "extra.weight": torch.zeros(1)}}, "damaged .*RuntimeError")
    check({k: v for k, v in good.items() if k != "format"}, "no format tag")
    check({**good, "format": "iclr24.cmvae/1"}, "format tag is 'iclr24.cmvae/1'")
    check({**good, "state": [1]}, "state of type list")
    check([1, 2], "holds a list")
    # a pickle that would run code: refused before anything runs, without torch's unsafe advice
    torch.save({"format": "iclr24.aemc_ne/1", "spec": _Evil()}, tmp_path / "bad.pt")
    capsys.readouterr()
    with pytest.raises(ValueError, match="not a file this package wrote.*Python objects") as e:
        load_model(tmp_path / "bad.pt")
    assert "weights_only" not in str(e.value)
    assert "must never run" not in capsys.readouterr().out


def test_star_import_gives_every_public_name():
    from iclr24.paperkit.runner.testing import check_star_import

    assert "bound_terms" in check_star_import("iclr24.aemc_ne")
