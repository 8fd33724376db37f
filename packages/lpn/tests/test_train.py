import json

import pytest
import torch

from iclr24.lpn import MLPLPN
from iclr24.lpn import NonFiniteLossError
from iclr24.lpn import TrainConfig
from iclr24.lpn import load_checkpoint
from iclr24.lpn import load_model
from iclr24.lpn import save_checkpoint
from iclr24.lpn import train
from iclr24.lpn.train import schedule_for


def _model():
    torch.manual_seed(0)
    return MLPLPN(in_dim=4, hidden=8, layers=2, alpha=0.01)


DATA = torch.rand(50, 4, generator=torch.Generator().manual_seed(0))


def test_training_reduces_the_loss_and_follows_the_schedule():
    cfg = TrainConfig(
        num_steps=120,
        num_steps_pretrain=60,
        num_stages=2,
        batch_size=25,
        pretrain_lr=1e-2,
        lr=1e-3,
        sigma_noise=0.1,
    )
    res = train(_model(), DATA, cfg, show_progress=False)
    assert res.gammas[:60] == [None] * 60
    gmin = 0.08 * 2
    assert res.gammas[60] == pytest.approx(2 * gmin) and res.gammas[-1] == pytest.approx(gmin)
    assert sum(res.losses[50:60]) < sum(res.losses[:10])
    assert schedule_for(cfg, 4)(119).gamma == pytest.approx(gmin)


def test_resume_gives_the_same_weights_as_one_run(tmp_path):
    cfg = TrainConfig(num_steps=10, num_steps_pretrain=4, batch_size=10, checkpoint_every=5, lr=1e-3)
    one = _model()
    train(one, DATA, cfg, show_progress=False)
    two = _model()
    train(
        two, DATA, TrainConfig(**{**cfg.to_dict(), "checkpoint_dir": str(tmp_path)}), show_progress=False
    )  # writes steps 5 and 10
    ck = load_checkpoint(tmp_path)
    assert ck["step"] == 10
    # rewind to step 5 by training a fresh copy to 5 and resuming it to 10
    half = tmp_path / "half"
    three = _model()
    c5 = TrainConfig(**{**cfg.to_dict(), "checkpoint_dir": str(half)})

    def interrupt(step, model, loss):
        if step == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(three, DATA, c5, show_progress=False, on_step=interrupt)
    assert load_checkpoint(half)["step"] == 5
    four = _model()
    res = train(four, DATA, c5, show_progress=False)
    assert res.start_step == 5 and res.end_step == 10
    for a, b in zip(one.parameters(), four.parameters()):
        torch.testing.assert_close(a, b)
    assert json.loads((half / "model_config.json").read_text())["arch"] == "mlp"


def test_non_finite_loss_stops_with_step_and_keeps_good_checkpoint(tmp_path):
    def sampler(n, g):
        x = torch.rand(n, 4, generator=g)
        return x if sampler.calls < 7 else x * float("nan")

    sampler.calls = 0

    def count(s, m, l):
        sampler.calls += 1

    cfg = TrainConfig(
        num_steps=20, num_steps_pretrain=5, batch_size=8, checkpoint_every=3, checkpoint_dir=str(tmp_path)
    )
    with pytest.raises(NonFiniteLossError, match="at step 7"):
        train(_model(), sampler, cfg, show_progress=False, on_step=count)
    ck = load_checkpoint(tmp_path)
    assert ck["step"] == 7
    assert all(torch.isfinite(v).all() for v in ck["model_state"].values())


def test_checkpoint_architecture_mismatch_and_bad_files(tmp_path):
    m = _model()
    save_checkpoint(tmp_path / "checkpoint.pt", m, None, 0)
    loaded = load_model(tmp_path / "checkpoint.pt", arch="mlp", in_dim=4)
    for a, b in zip(m.parameters(), loaded.parameters()):
        torch.testing.assert_close(a, b)
    with pytest.raises(ValueError, match="conv28"):
        load_model(tmp_path / "checkpoint.pt", arch="conv28")
    with pytest.raises(ValueError, match="in_dim"):
        load_model(tmp_path / "checkpoint.pt", in_dim=64)
    with pytest.raises(ValueError, match="trained with model"):
        train(
            MLPLPN(in_dim=4, hidden=16),
            DATA,
            TrainConfig(num_steps=2, num_steps_pretrain=1, batch_size=4, checkpoint_dir=str(tmp_path)),
            show_progress=False,
        )
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        load_model(tmp_path / "missing.pt")


def test_checkpoints_are_loaded_with_weights_only(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    torch.save({"model_state": {}, "x": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(ValueError, match="not a readable LPN checkpoint"):
        load_checkpoint(tmp_path / "evil.pt")


def test_bad_training_input():
    with pytest.raises(ValueError, match="sample shape"):
        train(
            _model(), torch.rand(10, 5), TrainConfig(num_steps=2, num_steps_pretrain=1), show_progress=False
        )
    with pytest.raises(ValueError, match="NaN"):
        train(
            _model(),
            torch.full((10, 4), float("nan")),
            TrainConfig(num_steps=2, num_steps_pretrain=1),
            show_progress=False,
        )
    with pytest.raises(ValueError, match="loss"):
        TrainConfig(loss="l0")
    with pytest.raises(ValueError, match="num_steps_pretrain"):
        TrainConfig(num_steps=10, num_steps_pretrain=10)


@pytest.mark.slow
def test_torchrun_data_parallel_training(tmp_path, train_argv):
    """2 gloo processes: gradients averaged, ranks stay identical (checked inside train), rank 0 checkpoints."""
    from iclr24.paperkit.distributed import run_torchrun

    proc = run_torchrun(
        ["-m", "iclr24.lpn.cli", *train_argv(tmp_path, batch_size=8)],
        nproc=2,
        timeout=240,
    )
    assert "on 2 process(es)" in proc.stdout
    ck = load_checkpoint(tmp_path)
    assert ck["step"] == 6 and ck["model_config"]["in_dim"] == 64


def test_noise_level_is_drawn_per_batch_as_the_official_code_does():
    from iclr24.lpn.train import draw_sigma

    x = torch.zeros(50, 1, 4, 4)
    g = torch.Generator().manual_seed(0)
    assert draw_sigma(TrainConfig(sigma_noise=0.07), x, g) == 0.07
    per_batch = draw_sigma(TrainConfig(noise_range=(0.01, 0.1)), x, g)
    assert per_batch.shape == (1, 1, 1, 1) and 0.01 <= per_batch.item() <= 0.1
    per_sample = draw_sigma(TrainConfig(noise_range=(0.01, 0.1), noise_per_batch=False), x, g)
    assert per_sample.shape == (50, 1, 1, 1) and per_sample.std() > 0.01
    assert ((per_sample >= 0.01) & (per_sample <= 0.1)).all()
    with pytest.raises(ValueError, match="noise_per_batch must be True or False"):
        TrainConfig(noise_per_batch="yes")
