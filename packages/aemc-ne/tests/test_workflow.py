"""Save / load as a model folder, your own Dataset or DataLoader, step callbacks and exact resume."""

import json

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import TensorDataset

from iclr24.aemc_ne import AEMC
from iclr24.aemc_ne import AEMCNE
from iclr24.aemc_ne import MatrixFactorization
from iclr24.aemc_ne import Ratings
from iclr24.aemc_ne import load_model
from iclr24.aemc_ne.data import make_synthetic
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.pretrained import load_pretrained
from iclr24.paperkit.runner.testing_workflow import Stopped
from iclr24.paperkit.runner.testing_workflow import stop_at

SMALL = dict(main_hidden=(6, 3, 6))
FIT = dict(epochs=12, lr=1e-2, eval_every=3, standardize=True, quiet=True)


@pytest.fixture(scope="module")
def syn():
    return make_synthetic(n_rows=12, n_cols=40, rank=2, response="sigmoid5", seed=3)


def _triples(r: Ratings) -> TensorDataset:
    return TensorDataset(torch.from_numpy(r.users), torch.from_numpy(r.items), torch.from_numpy(r.values))


def test_a_users_dataset_or_loader_gives_the_model_of_the_ratings(syn):
    tr, t = syn.train, syn.test
    ref = AEMCNE(**SMALL).fit(tr, **FIT).predict(t.users, t.items)
    for data in (_triples(tr), DataLoader(_triples(tr), batch_size=37), tuple(_triples(tr).tensors)):
        got = AEMCNE(**SMALL).fit(data, shape=tr.shape, **FIT).predict(t.users, t.items)
        assert np.array_equal(got, ref)
    # a loader of the validation ratings too, and the inferred shape when every index occurs
    val = tr.subset(np.arange(0, len(tr), 10))
    keep = tr.subset(np.setdiff1d(np.arange(len(tr)), np.arange(0, len(tr), 10)))
    a = AEMC(**SMALL).fit(keep, val=val, **FIT)
    b = AEMC(**SMALL).fit(DataLoader(_triples(keep), batch_size=50), val=DataLoader(_triples(val)), **FIT)
    assert np.array_equal(a.complete(), b.complete()) and b.shape_ == tr.shape
    # a shuffled loader is a different order of the same entries: a different split of the validation hold-out
    c = AEMC(**SMALL).fit(DataLoader(_triples(tr), batch_size=37, shuffle=True), shape=tr.shape, **FIT)
    assert c.complete().shape == tr.shape
    mf = MatrixFactorization(rank=2).fit(_triples(tr), shape=tr.shape, epochs=3, quiet=True)
    assert np.array_equal(mf.complete(), MatrixFactorization(rank=2).fit(tr, epochs=3, quiet=True).complete())


def test_a_wrong_loader_is_one_input_error(syn):
    tr = syn.train
    m = AEMC(**SMALL)
    u, i, v = (torch.from_numpy(a) for a in (tr.users, tr.items, tr.values))
    with pytest.raises(InputError, match="3"):
        m.fit(TensorDataset(u, i), **FIT)  # two fields, not three
    with pytest.raises(InputError, match="integers"):
        m.fit(TensorDataset(u.double(), i.double(), v), **FIT)
    with pytest.raises(InputError, match="shapes"):
        m.fit(TensorDataset(u.view(-1, 1), i.view(-1, 1), v.view(-1, 1)), **FIT)
    with pytest.raises(InputError, match="item indices must lie"):
        m.fit(TensorDataset(u, i, v), shape=(tr.n_users, 2), **FIT)
    with pytest.raises(InputError, match="shape must be"):
        m.fit(TensorDataset(u, i, v), shape=(0, 3), **FIT)
    with pytest.raises(InputError, match="shape="):
        m.fit(tr, shape=(1, 1), **FIT)
    with pytest.raises(InputError, match="finite"):
        m.fit(TensorDataset(u, i, torch.full_like(v, float("nan"))), **FIT)
    with pytest.raises(InputError, match="empty"):
        m.fit(DataLoader(TensorDataset(u[:0], i[:0], v[:0])), **FIT)


def test_save_pretrained_round_trip_and_provenance(syn, tmp_path):
    t = syn.test
    for model in (AEMCNE(**SMALL, shared=False), AEMC(**SMALL, orientation="user"), AEMC(**SMALL)):
        model.fit(syn.train, clip=(0.5, 4.0), **FIT)
        folder = model.save_pretrained(tmp_path / "m", provenance={"command": "test", "steps": 12})
        cfg = json.loads((folder / "config.json").read_text())
        assert cfg["class"] == f"iclr24.aemc_ne.completion.{type(model).__name__}"
        assert cfg["config"]["main_hidden"] == [6, 3, 6] and cfg["config"]["orientation"] == model.orientation
        for back in (type(model).from_pretrained(folder), load_pretrained(folder), load_model(folder)):
            assert type(back) is type(model) and back.cfg_ == model.cfg_ and back.shape_ == model.shape_
            assert np.array_equal(back.predict(t.users, t.items), model.predict(t.users, t.items))
    # AEMC.from_pretrained also loads its subclass; the subclass refuses a plain AEMC
    assert (
        type(AEMC.from_pretrained(AEMCNE(**SMALL).fit(syn.train, **FIT).save_pretrained(tmp_path / "n")))
        is AEMCNE
    )
    with pytest.raises(InputFileError, match="not a"):
        AEMCNE.from_pretrained(tmp_path / "m")


def test_bad_model_folders_are_one_clear_error(syn, tmp_path):
    with pytest.raises(InputError, match="not fitted"):
        AEMC(**SMALL).save_pretrained(tmp_path / "unfitted")
    folder = AEMCNE(**SMALL).fit(syn.train, **FIT).save_pretrained(tmp_path / "m")
    with pytest.raises(InputFileError, match="does not exist"):
        AEMC.from_pretrained(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputFileError, match="config.json is missing"):
        load_model(tmp_path / "empty")
    # weights of another architecture under a matching provenance: refused naming the file
    from safetensors.torch import load_file
    from safetensors.torch import save_file

    from iclr24.paperkit.pretrained import file_sha256

    state = load_file(folder / "model.safetensors")
    for change in ("drop", "shape"):
        broken = dict(state)
        if change == "drop":
            broken.pop("fit.config")
        else:
            broken["net.main.net.0.weight"] = torch.zeros(2, 2)
        save_file(broken, folder / "model.safetensors")
        prov = json.loads((folder / "provenance.json").read_text())
        prov["weights_sha256"] = file_sha256(folder / "model.safetensors")
        (folder / "provenance.json").write_text(json.dumps(prov))
        with pytest.raises(InputFileError, match="model.safetensors does not fit"):
            AEMC.from_pretrained(folder)


def test_callbacks_and_log_dir_see_every_epoch(syn, tmp_path):
    from iclr24.paperkit.tracking import read_jsonl

    seen = []
    m = AEMCNE(**SMALL).fit(syn.train, callbacks=lambda step, met: seen.append((step, dict(met))),
                            log_dir=tmp_path / "logs", **FIT)  # fmt: skip
    assert [s for s, _ in seen] == list(range(1, 13))
    assert [s for s, met in seen if "val_rmse" in met] == [3, 6, 9, 12]
    assert [h["train_loss"] for h in m.history] == [met["train_loss"] for s, met in seen if s % 3 == 0]
    rows = read_jsonl(tmp_path / "logs" / "metrics.jsonl")
    assert len(rows) == 13 and rows[-1]["best_epoch"] == m.best_epoch_
    # logging draws no random number and changes nothing
    plain = AEMCNE(**SMALL).fit(syn.train, **FIT)
    assert np.array_equal(plain.complete(), m.complete())


@pytest.mark.parametrize("batch_size", [None, 9])
def test_an_interrupted_fit_resumed_equals_the_uninterrupted_fit(syn, tmp_path, batch_size):
    kw = {**FIT, "batch_size": batch_size, "patience": 3}
    ref = AEMCNE(**SMALL).fit(syn.train, **kw)

    stop_at_8 = stop_at(8)

    path = tmp_path / f"state-{batch_size}.pt"
    with pytest.raises(Stopped):
        AEMCNE(**SMALL).fit(syn.train, checkpoint=path, resume=True, callbacks=stop_at_8, **kw)
    seen = []
    back = AEMCNE(**SMALL).fit(
        syn.train, checkpoint=path, resume=True, callbacks=lambda s, m: seen.append(s), **kw
    )
    assert seen == [7, 8, 9, 10, 11, 12]  # continued after the epoch-6 check
    assert np.array_equal(back.complete(), ref.complete())
    assert back.best_epoch_ == ref.best_epoch_ and back.best_val_rmse_ == ref.best_val_rmse_
    assert [h["train_loss"] for h in back.history] == [h["train_loss"] for h in ref.history]
    # a finished run resumed is the finished model; other settings are refused before anything is loaded
    again = AEMCNE(**SMALL).fit(
        syn.train, checkpoint=path, resume=True, callbacks=lambda s, m: seen.append(s), **kw
    )
    assert np.array_equal(again.complete(), ref.complete()) and seen[-1] == 12
    with pytest.raises(InputError, match="config"):
        AEMCNE(**SMALL).fit(syn.train, checkpoint=path, resume=True, **{**kw, "lr": 0.5})
    with pytest.raises(InputFileError, match="folder"):
        AEMCNE(**SMALL).fit(syn.train, checkpoint=tmp_path, **kw)
    with pytest.raises(InputError, match="needs checkpoint"):
        AEMCNE(**SMALL).fit(syn.train, resume=True, **kw)
    # without resume=True the file is written afresh, not continued
    seen.clear()
    AEMCNE(**SMALL).fit(syn.train, checkpoint=path, callbacks=lambda s, m: seen.append(s), **kw)
    assert seen == list(range(1, 13))
