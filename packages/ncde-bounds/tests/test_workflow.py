"""Model folders (NCDE save_pretrained / from_pretrained), the step log, your own Dataset/DataLoader of series, and
exact resume of an interrupted fit."""

import json
import math

import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import Dataset
from torch.utils.data import TensorDataset

from iclr24.ncde_bounds import NCDE
from iclr24.ncde_bounds import TrainConfig
from iclr24.ncde_bounds import evaluate
from iclr24.ncde_bounds import fit
from iclr24.ncde_bounds import irregular_grid_indices
from iclr24.ncde_bounds import smooth_paths
from iclr24.ncde_bounds import subsample
from iclr24.ncde_bounds import true_cde
from iclr24.ncde_bounds.cli import main
from iclr24.ncde_bounds.train import GRUBaseline
from iclr24.ncde_bounds.train import make_ncde
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.pretrained import load_pretrained
from iclr24.paperkit.runner.testing_workflow import Stopped
from iclr24.paperkit.runner.testing_workflow import check_finished_run_folder
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.runner.testing_workflow import stop_at
from iclr24.paperkit.tracking import read_jsonl

CFG = TrainConfig(hidden=4, width=8, substeps=1, epochs=3, batch_size=5)


@pytest.fixture(scope="module")
def series():
    t, v = smooth_paths(14, n_fine=64, seed=0)
    y = true_cde(seed=0)(t, v, substeps=1).float()
    tc, vc = subsample(t, v, irregular_grid_indices(64, 6, 14, seed=1))
    return tc.float(), vc.float(), y


def _model(seed=0):
    torch.manual_seed(seed)
    return make_ncde(1, CFG)


def test_ncde_round_trips_through_a_folder(tmp_path, series):
    t, v, y = series
    m = _model()
    fit(m, t, v, y, CFG)
    folder = m.save_pretrained(tmp_path / "ncde", provenance={"seed": 0})
    back = NCDE.from_pretrained(folder)
    assert same_weights(back, m) and torch.equal(back(t, v), m(t, v))
    assert evaluate(back, t, v, y) == evaluate(m, t, v, y)
    assert isinstance(load_pretrained(folder), NCDE)
    gru = GRUBaseline(1, hidden=5)
    assert same_weights(GRUBaseline.from_pretrained(gru.save_pretrained(tmp_path / "gru")), gru)
    with pytest.raises(InputFileError, match="not a .*GRUBaseline"):
        GRUBaseline.from_pretrained(folder)


class _Series(Dataset):
    def __init__(self, t, v, y):
        self.t, self.v, self.y = t, v, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.t[i], self.v[i], self.y[i], self.v.shape[1]


def test_a_users_dataset_or_loader_fits_like_the_tensors(series):
    t, v, y = series
    ref = _model()
    r0 = fit(ref, t, v, y, CFG, seed=3)
    for data in (DataLoader(TensorDataset(t, v, y), batch_size=4), _Series(t, v, y)):
        m = _model()
        r = fit(m, data, config=CFG, seed=3)
        assert same_weights(m, ref) and r.losses == r0.losses, type(data).__name__
    assert evaluate(ref, _Series(t, v, y)) == evaluate(ref, t, v, y)
    with pytest.raises(InputError, match="as None"):
        fit(_model(), TensorDataset(t, v, y), v, y, CFG)
    with pytest.raises(InputError, match="2 fields"):
        fit(_model(), TensorDataset(t, v), config=CFG)
    with pytest.raises(InputError, match="give times, values and targets"):
        fit(_model(), t, v, config=CFG)


def test_step_log_every_step_changes_nothing(tmp_path, series):
    t, v, y = series
    seen = []
    a, b = _model(), _model()
    ra = fit(a, t, v, y, CFG, callbacks=lambda s, m: seen.append((s, m)), log_dir=tmp_path / "log")
    rb = fit(b, t, v, y, CFG)
    assert same_weights(a, b) and ra.losses == rb.losses
    steps = [s for s, m in seen if "loss" in m]
    assert steps == list(range(1, 3 * math.ceil(14 / 5) + 1)) and ra.steps == len(steps)
    epochs = [m for _, m in seen if "epoch_loss" in m]
    assert [m["epoch_loss"] for m in epochs] == pytest.approx(ra.losses, rel=1e-12)
    assert epochs[0]["lr"] == CFG.lr and epochs[-1]["lr"] == pytest.approx(CFG.lr_final)
    rows = read_jsonl(tmp_path / "log" / "metrics.jsonl")
    assert len(rows) == len(seen) + 1 and rows[-1]["event"] == "end"


def test_an_interrupted_fit_resumed_equals_the_uninterrupted_one(tmp_path, series):
    t, v, y = series
    ref = _model()
    full = fit(ref, t, v, y, CFG, seed=2)

    stop = stop_at(5)  # the middle of the second epoch (3 steps an epoch)

    with pytest.raises(Stopped):
        fit(_model(), t, v, y, CFG, seed=2, checkpoint=tmp_path / "s.pt", callbacks=stop)
    torch.manual_seed(99)
    m = _model()
    got = fit(m, t, v, y, CFG, seed=2, checkpoint=tmp_path / "s.pt", resume=True)
    assert same_weights(m, ref) and got.losses == full.losses and got.steps == full.steps == 9
    with pytest.raises(InputError, match="seed"):
        fit(_model(), t, v, y, CFG, seed=4, checkpoint=tmp_path / "s.pt", resume=True)
    with pytest.raises(InputError, match="checkpoint="):
        fit(_model(), t, v, y, CFG, resume=True)


def test_cli_train_writes_a_model_folder_logs_and_resumes(tmp_path, train_argv):
    out = tmp_path / "run"
    args = train_argv(out)
    assert main([*args, "--log-dir", str(tmp_path / "log")]) == 0
    prov = json.loads((out / "model" / "provenance.json").read_text())
    assert prov["command"].startswith("ncde-bounds train --series 8") and prov["steps"] == 2
    assert prov["seed"] == 0 and prov["cpu_seconds"] > 0 and len(prov["losses"]) == 2 and "test" in prov
    assert sum("loss" in r for r in read_jsonl(tmp_path / "log" / "metrics.jsonl")) == 2
    # the finished run's folder again: refused; --resume trains nothing more; --resume with other settings refused
    check_finished_run_folder(
        main, args, lambda: NCDE.from_pretrained(out / "model"), same_weights, ["--width", "16"]
    )
