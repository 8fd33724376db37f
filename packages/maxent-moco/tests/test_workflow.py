"""The step log of the planners and learners (the logged errors are the trace's, and logging changes nothing) and
your own transitions (arrays, a torch Dataset or DataLoader) in place of the generated sample stream."""

import numpy as np
import pytest

import iclr24.maxent_moco as mm
from iclr24.maxent_moco.cli import main
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.tracking import read_jsonl


@pytest.fixture(scope="module")
def mdp():
    return mm.cliffwalk()


def _collect():
    seen = []
    return seen, lambda step, metrics: seen.append((step, metrics["error"]))


@pytest.mark.parametrize("mode", ["pe", "control"])
def test_planners_log_the_errors_of_their_trace(tmp_path, mdp, mode):
    P_hat = mm.locally_smoothed(mdp.P, 1.0)
    for algo in (mm.ValueIteration(mode=mode), mm.ModelBasedPlanning(P_hat, mode=mode), mm.OSVI(P_hat, mode=mode),
                 mm.MoCoVI(P_hat, 2, mode=mode)):  # fmt: skip
        seen, cb = _collect()
        logged = algo.run(mdp, 6, callbacks=cb, log_dir=tmp_path / algo.name)
        plain = algo.run(mdp, 6)
        assert np.array_equal(logged.values, plain.values) and np.array_equal(logged.errors, plain.errors)
        assert [s for s, _ in seen] == list(range(7))
        assert np.allclose([e for _, e in seen], plain.errors, rtol=1e-12, atol=0), algo.name
        rows = read_jsonl(tmp_path / algo.name / "metrics.jsonl")
        assert [r["step"] for r in rows] == [*range(7), -1] and rows[-1]["error"] == pytest.approx(
            plain.errors[-1]
        )


def _learners():
    return [
        mm.QLearning(eval_every=500),
        mm.Dyna(alpha=1.0, planning_interval=500, eval_every=500),
        mm.MoCoDyna(2, alpha=1.0, planning_interval=500, val_queue_interval=1000, eval_every=500),
        mm.OSDyna(alpha=1.0, eval_every=500),
    ]


def test_learners_on_your_own_samples_equal_the_generated_stream(mdp):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    n, seed = 2000, 3
    s, a, s2 = mm.sample_stream(mdp, n, seed)
    rows = np.stack([s, a, s2], axis=1)
    loader = DataLoader(TensorDataset(*(torch.as_tensor(x) for x in (s, a, s2))), batch_size=128)
    for algo in _learners():
        ref = algo.run(mdp, n, seed)
        for samples in ((s, a, s2), rows, loader, TensorDataset(torch.as_tensor(rows))):
            got = algo.run(mdp, seed=seed, samples=samples)
            assert np.array_equal(got.steps, ref.steps) and np.array_equal(got.values, ref.values), algo.name
            assert np.array_equal(got.errors, ref.errors)
    with pytest.raises(InputError, match="3 transitions"):
        mm.QLearning().run(mdp, 5, samples=rows[:3])


def test_learners_log_the_errors_of_their_trace(tmp_path, mdp):
    for algo in _learners():
        seen, cb = _collect()
        tr = algo.run(mdp, 1500, seed=1, callbacks=cb)
        assert [s for s, _ in seen] == tr.steps.tolist()
        assert np.array_equal([e for _, e in seen], tr.errors), algo.name
        assert np.array_equal(tr.values, algo.run(mdp, 1500, seed=1).values)
    seen = []
    traces = mm.OSDyna(eval_every=500).run_many(mdp, 1000, [0, 4], callbacks=lambda s, m: seen.append(m))
    assert seen[-1]["error/seed4"] == traces[1].errors[-1] and seen[-1]["error/seed0"] == traces[0].errors[-1]
    assert seen[-1]["error"] == pytest.approx((traces[0].errors[-1] + traces[1].errors[-1]) / 2)


def test_policy_evaluation_samples_must_follow_the_policy(mdp):
    pi = mm.solve_control(mdp.P, mdp.R, mdp.gamma)[1]
    s, a, s2 = mm.sample_stream(mdp, 300, 0, mode="pe", policy=pi)
    td = mm.TDLearning(eval_every=100)
    assert np.array_equal(td.run(mdp, seed=0, samples=(s, a, s2)).errors, td.run(mdp, 300, 0).errors)
    with pytest.raises(InputError, match="policy's"):
        td.run(mdp, samples=(s, (a + 1) % mdp.n_actions, s2))


def test_cli_run_log_dir_and_samples(tmp_path, mdp, capsys):
    out = tmp_path / "run"
    assert main(["run", "--algo", "all", "--iters", "4", "--log-dir", str(tmp_path / "log"), "--out", str(out),
                 "--quiet"]) == 0  # fmt: skip
    names = sorted(p.name for p in (tmp_path / "log").iterdir())
    assert names == ["MBRL", "MoCoVI-d-2", "OS-VI", "VI"]
    assert len(read_jsonl(tmp_path / "log" / "VI" / "metrics.jsonl")) == 6
    s, a, s2 = mm.sample_stream(mdp, 1000, 0)
    np.savez(tmp_path / "samples.npz", s=s, a=a, s_next=s2)
    args = ["run", "--algo", "qlearning", "--mode", "control", "--eval-every", "500"]
    assert (
        main([*args, "--samples", str(tmp_path / "samples.npz"), "--out", str(tmp_path / "mine"), "--quiet"])
        == 0
    )
    assert main([*args, "--steps", "1000", "--out", str(tmp_path / "gen"), "--quiet"]) == 0
    import json

    mine = json.loads((tmp_path / "mine" / "run.json").read_text())["results"]
    gen = json.loads((tmp_path / "gen" / "run.json").read_text())["results"]
    assert mine == gen
    np.savez(tmp_path / "bad.npz", s=s, a=a)
    assert (
        main([*args, "--samples", str(tmp_path / "bad.npz"), "--out", str(tmp_path / "bad"), "--quiet"]) == 2
    )
    assert "s_next" in capsys.readouterr().err
