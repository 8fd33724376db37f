"""The model folder (save_pretrained / from_pretrained), your own Dataset or DataLoader, step callbacks and exact
resume of fit."""

import json

import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import TensorDataset

from iclr24.cmvae import CMVAE
from iclr24.cmvae import MMVAEPlus
from iclr24.cmvae import build_mlp_model
from iclr24.cmvae import fit
from iclr24.cmvae import load_checkpoint
from iclr24.cmvae import poly_digits
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.pretrained import load_pretrained
from iclr24.paperkit.runner.testing_workflow import Stopped
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.runner.testing_workflow import stop_at
from iclr24.paperkit.tracking import read_jsonl

FIT = dict(epochs=3, batch_size=32, lr=1e-3, seed=0)


@pytest.fixture(scope="module")
def data():
    return poly_digits(n_train=96, n_test=40, n_modalities=2, seed=0)


def _model(clustered: bool = True):
    torch.manual_seed(0)
    return build_mlp_model(
        [64, 64], hidden=(16,), n_clusters_max=4, clustered=clustered, likelihood_scale=0.1
    )


def test_a_users_dataset_or_loader_trains_the_same_model(data):
    xs = data.tensors("train")
    ref = _model()
    ref_hist = fit(ref, xs, **FIT)
    labelled = _Labelled(xs, data.train_labels)  # ([x_1, x_2], label) items, as PolyMNISTFolder yields
    for d in (TensorDataset(*xs), DataLoader(TensorDataset(*xs), batch_size=25), tuple(xs), labelled,
              DataLoader(labelled, batch_size=40, shuffle=False)):  # fmt: skip
        m = _model()
        assert fit(m, d, **FIT) == ref_hist and same_weights(m, ref)


class _Labelled(torch.utils.data.Dataset):
    def __init__(self, xs, labels):
        self.xs, self.labels = xs, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return [x[i] for x in self.xs], int(self.labels[i])


def test_a_wrong_loader_is_one_input_error(data):
    xs = data.tensors("train")
    m = _model()
    with pytest.raises(InputError, match="2"):
        fit(m, TensorDataset(xs[0]), **FIT)
    with pytest.raises(InputError, match="shape"):
        fit(m, TensorDataset(xs[0], xs[1][:, :10]), **FIT)
    with pytest.raises(InputError, match="floating"):
        fit(m, TensorDataset(xs[0], (xs[1] > 0.5).long()), **FIT)
    with pytest.raises(InputError, match="empty"):
        fit(m, DataLoader(TensorDataset(xs[0][:0], xs[1][:0])), **FIT)
    with pytest.raises(InputError, match="list of 2 tensors"):
        fit(m, xs[0], **FIT)


def test_save_pretrained_round_trip(data, tmp_path):
    test = data.tensors("test")
    for clustered in (True, False):
        m = _model(clustered)
        fit(m, data.tensors("train"), **FIT)
        if clustered:
            m.select_num_clusters(test, apply=True, seed=0)
        folder = m.save_pretrained(tmp_path / f"m{clustered}", provenance={"command": "test"})
        cfg = json.loads((folder / "config.json").read_text())
        assert cfg["config"]["input_dims"] == [64, 64] and cfg["config"]["clustered"] is clustered
        state = torch.get_rng_state()
        loaded = [type(m).from_pretrained(folder), CMVAE.from_pretrained(folder), load_pretrained(folder),
                  load_checkpoint(folder)]  # fmt: skip
        assert torch.equal(state, torch.get_rng_state())  # loading draws nothing from the global RNG
        for back in loaded:
            assert type(back) is type(m) and same_weights(back, m) and back.spec == m.spec
            assert torch.equal(back.active, m.active)
            a, b = back.predict_clusters(test, seed=1), m.predict_clusters(test, seed=1)
            assert (a.clusters == b.clusters).all()
    with pytest.raises(InputFileError, match="not a"):
        MMVAEPlus.from_pretrained(tmp_path / "mTrue")


def test_bad_model_folders(data, tmp_path):
    from iclr24.cmvae import MLPDecoder
    from iclr24.cmvae import MLPEncoder

    own = CMVAE([MLPEncoder(4, 2, 2, (8,))], [MLPDecoder(4, 4, (8,))], latent_dim=2, modality_latent_dim=2)
    with pytest.raises(InputError, match="build_mlp_model"):
        own.save_pretrained(tmp_path / "own")
    assert not (tmp_path / "own").exists()
    folder = _model().save_pretrained(tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    for change, match in (({"input_dims": None}, "input_dims"), ({"hidden": [0]}, "hidden"),
                          ({"latent_dim": 3}, "does not fit")):  # fmt: skip
        (folder / "config.json").write_text(json.dumps({**cfg, "config": {**cfg["config"], **change}}))
        with pytest.raises(InputFileError, match=match):
            CMVAE.from_pretrained(folder)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputFileError, match="config.json is missing"):
        load_checkpoint(tmp_path / "empty")


def test_callbacks_and_log_dir_see_every_step(data, tmp_path):
    xs = data.tensors("train")
    seen = []
    m = _model()
    hist = fit(
        m, xs, callbacks=lambda step, met: seen.append((step, dict(met))), log_dir=tmp_path / "logs", **FIT
    )
    assert [s for s, _ in seen] == list(range(1, 10))  # 96 tuples in batches of 32: 3 steps an epoch
    assert [met["epoch_loss"] for _, met in seen if "epoch_loss" in met] == hist
    rows = read_jsonl(tmp_path / "logs" / "metrics.jsonl")
    assert len(rows) == 10 and rows[-1]["final_loss"] == hist[-1]
    plain = _model()
    assert fit(plain, xs, **FIT) == hist and same_weights(plain, m)  # logging changes nothing


def test_an_interrupted_fit_resumed_equals_the_uninterrupted_fit(data, tmp_path):
    xs = data.tensors("train")
    kw = {**FIT, "epochs": 4}
    ref = _model()
    ref_hist = fit(ref, xs, **kw)

    stop = stop_at(8)  # in epoch 3, after the checkpoint of epoch 2

    path = tmp_path / "state.pt"
    with pytest.raises(Stopped):
        fit(_model(), xs, checkpoint=path, callbacks=stop, **kw)
    torch.manual_seed(123)  # whatever the global RNG holds now: the checkpoint restores it
    seen = []
    m = _model()
    hist = fit(m, xs, checkpoint=path, resume=True, callbacks=lambda s, met: seen.append(s), **kw)
    assert seen == [7, 8, 9, 10, 11, 12] and hist == ref_hist and same_weights(m, ref)
    with pytest.raises(InputError, match="lr"):
        fit(_model(), xs, checkpoint=path, resume=True, **{**kw, "lr": 0.1})
    with pytest.raises(InputError, match="needs checkpoint"):
        fit(_model(), xs, resume=True, **kw)
    with pytest.raises(InputFileError, match="folder"):
        fit(_model(), xs, checkpoint=tmp_path, **kw)
