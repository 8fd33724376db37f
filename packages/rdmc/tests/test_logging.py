"""Step logging of the samplers (callbacks, --log-dir) and your own data for the logistic-regression target."""

import json

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import TensorDataset

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.tracking import read_jsonl
from iclr24.rdmc import BayesianLogisticRegression
from iclr24.rdmc import mala
from iclr24.rdmc import rdmc_sample
from iclr24.rdmc import sample_with_budget
from iclr24.rdmc import ula
from iclr24.rdmc.cli import main


@pytest.mark.parametrize("estimator", ["is", "ula", "is+ula"])
def test_rdmc_callbacks_see_every_step_and_change_no_sample(gmm, estimator):
    kw = dict(T=1.0, K=5, estimator=estimator, m=20, n_chains=2, inner_steps=3, warm_start_steps=2, seed=3)
    x0, info0 = rdmc_sample(gmm, 40, **kw)
    rows = []
    x1, info1 = rdmc_sample(gmm, 40, **kw, callbacks=lambda step, m: rows.append((step, dict(m))))
    assert torch.equal(x0, x1)  # logging draws no random number
    assert [s for s, _ in rows] == list(range(2 + 5))  # 2 warm-start steps, then the K reverse steps
    assert [m["t"] for _, m in rows] == [1.0, 1.0, *info1.extras["times"][1:]]
    assert rows[-1][1]["t"] == 0.0
    calls = [m["logp_calls"] + m["grad_calls"] for _, m in rows]
    assert calls == sorted(calls) and calls[0] > 0
    assert rows[-1][1]["logp_calls"] == info1.logp_calls and rows[-1][1]["grad_calls"] == info1.grad_calls
    assert all(np.isfinite(m["score_norm"]) and m["score_norm"] > 0 for _, m in rows)


def test_rdmc_log_dir_writes_jsonl_with_the_totals(gmm, tmp_path):
    class Recorder:
        def __init__(self):
            self.steps, self.summary = [], None

        def on_step(self, step, metrics):
            self.steps.append(step)

        def on_end(self, summary):
            self.summary = summary

    rec = Recorder()
    _, info = rdmc_sample(gmm, 30, T=1.0, K=4, m=10, seed=0, log_dir=tmp_path / "log", callbacks=[rec])
    rows = read_jsonl(tmp_path / "log" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3, -1]
    assert rows[-1]["logp_calls"] == info.logp_calls == 30 * 4 * 10
    assert rec.steps == [0, 1, 2, 3] and rec.summary == {"grad_calls": 0, "logp_calls": info.logp_calls}


def test_ula_and_mala_log_each_step_without_changing_the_chains(gmm):
    for fn, steps in ((ula, 30), (mala, 15)):
        x0, info0 = fn(gmm, 20, steps, seed=1)
        rows = []
        x1, info1 = fn(gmm, 20, steps, seed=1, callbacks=lambda s, m, rows=rows: rows.append(dict(m, step=s)))
        assert torch.equal(x0, x1)
        assert [r["step"] for r in rows] == list(range(steps))
        assert rows[-1]["grad_calls"] == info1.grad_calls
    acc = [r["acceptance"] for r in rows]
    assert np.mean(acc) == pytest.approx(info1.extras["acceptance_rate"])
    assert all(0 <= a <= 1 for a in acc)


def test_sample_with_budget_passes_the_log_through(gmm, tmp_path):
    sample_with_budget(gmm, "ula", 10, 25, log_dir=tmp_path / "u")
    assert len(read_jsonl(tmp_path / "u" / "metrics.jsonl")) == 25 + 1


def test_bad_log_dir_and_callback_are_clear_errors(gmm, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(InputError, match="is a file"):
        rdmc_sample(gmm, 5, K=2, log_dir=f)
    with pytest.raises(InputError, match="callback"):
        ula(gmm, 5, 3, callbacks=[42])


def test_cli_sample_log_dir(tmp_path):
    rc = main(
        ["sample", "--n", "20", "--budget", "100", "--K", "5", "--quiet"]
        + ["--out", str(tmp_path / "run"), "--log-dir", str(tmp_path / "logs")]
    )
    assert rc == 0
    rows = read_jsonl(tmp_path / "logs" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4, -1]
    report = json.loads((tmp_path / "run" / "samples.json").read_text())
    assert rows[-1]["logp_calls"] == report["logp_calls"]


def _logreg_data(n=60, d=3):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = (X[:, 0] + 0.3 * torch.randn(n, generator=g, dtype=torch.float64) > 0).to(torch.float64)
    return X, y


def test_logreg_from_a_dataset_or_loader_equals_the_tensor_path():
    X, y = _logreg_data()
    ref = BayesianLogisticRegression(X, y, prior_std=2.0)
    theta = torch.randn(7, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    for data in (TensorDataset(X, y.long()), DataLoader(TensorDataset(X, y), batch_size=16)):
        b = BayesianLogisticRegression(data, prior_std=2.0)
        assert torch.equal(b.X, ref.X) and torch.equal(b.y, ref.y) and b.lipschitz == ref.lipschitz
        assert torch.equal(b.log_prob(theta), ref.log_prob(theta))
        x_b, _ = rdmc_sample(b, 10, T=0.5, K=3, m=10, seed=0)
        x_r, _ = rdmc_sample(ref, 10, T=0.5, K=3, m=10, seed=0)
        assert torch.equal(x_b, x_r)
        assert b.accuracy(theta, data) == ref.accuracy(theta, X, y)


def test_logreg_bad_user_data_is_one_input_error():
    X, y = _logreg_data()
    with pytest.raises(InputError, match="expected 2"):
        BayesianLogisticRegression(TensorDataset(X, y, y))  # (x, y, extra) items
    with pytest.raises(InputError, match="leave y out"):
        BayesianLogisticRegression(TensorDataset(X, y), y)
    with pytest.raises(InputError, match="y .labels. is missing"):
        BayesianLogisticRegression(X)
    with pytest.raises(InputError, match="labels 0 or 1"):
        BayesianLogisticRegression(DataLoader(TensorDataset(X, y + 2), batch_size=8))
    with pytest.raises(InputError, match="empty"):
        BayesianLogisticRegression(TensorDataset(X[:0], y[:0]))
