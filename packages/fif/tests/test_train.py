"""The training loop: exact resume, non-finite handling, checkpoint checks, torchrun."""

import pytest
import torch

from iclr24.fif import FreeFormInjectiveFlow
from iclr24.fif import NonFiniteLossError
from iclr24.fif import TrainConfig
from iclr24.fif import fit
from iclr24.fif import load_checkpoint
from iclr24.fif import resnet_pair
from iclr24.fif.data import toy_splits
from iclr24.fif.train import nll_warmup_weight


def _model(seed=0, widths=(16,)):
    torch.manual_seed(seed)
    return FreeFormInjectiveFlow(
        *resnet_pair(2, 1, 1, widths), data_dim=2, latent_dim=1, beta=10.0, noise=0.05
    )


@pytest.fixture(scope="module")
def sine():
    return toy_splits("sine", 512, 64, seed=0)[0]


def test_resume_is_exact(tmp_path, sine):
    cfg = TrainConfig(steps=12, batch_size=32, seed=3)
    straight = _model()
    fit(straight, sine, cfg, show_progress=False)
    half = _model()
    ck = tmp_path / "m.pt"
    fit(half, sine, cfg, checkpoint=ck, until=6, show_progress=False)  # interrupted after 6 of 12 steps
    assert torch.load(ck, weights_only=True)["step"] == 6
    resumed = _model(seed=99)  # different init: everything must come from the checkpoint
    fit(resumed, sine, cfg, checkpoint=ck, resume=True, show_progress=False)
    for a, b in zip(straight.parameters(), resumed.parameters(), strict=True):
        assert torch.equal(a, b)


def test_training_reduces_the_loss(sine):
    m = _model()
    x = sine[:256]
    before = float(m.loss(x, generator=torch.Generator().manual_seed(0)).detach())
    fit(m, sine, TrainConfig(steps=60, batch_size=64, seed=0), show_progress=False)
    after = float(m.loss(x, generator=torch.Generator().manual_seed(0)).detach())
    assert after < before


class NaNAt(torch.nn.Module):
    """Wraps a decoder and returns NaN on the calls listed in ``bad``."""

    def __init__(self, inner, bad):
        super().__init__()
        self.inner, self.bad, self.calls = inner, set(bad), 0

    def forward(self, z):
        out = self.inner(z)
        if self.training:
            self.calls += 1
            if self.calls in self.bad:
                return out * float("nan")
        return out


def test_nonfinite_batch_is_skipped_not_applied(sine):
    torch.manual_seed(0)
    enc, dec = resnet_pair(2, 1, 1, [16])
    m = FreeFormInjectiveFlow(enc, NaNAt(dec, bad={3}), data_dim=2, latent_dim=1)
    m.train()
    m.decoder.calls = 0
    cfg = TrainConfig(steps=3, batch_size=16, on_nonfinite="skip", one_cycle=False)

    hist = fit(m, sine, cfg, show_progress=False)
    assert hist["skipped"] == [2]
    # the skipped step changed nothing: a run of 2 good steps gives the same parameters
    torch.manual_seed(0)
    enc2, dec2 = resnet_pair(2, 1, 1, [16])
    m2 = FreeFormInjectiveFlow(enc2, NaNAt(dec2, bad=set()), data_dim=2, latent_dim=1)
    fit(m2, sine, TrainConfig(steps=2, batch_size=16, one_cycle=False), show_progress=False)
    for a, b in zip(m.parameters(), m2.parameters(), strict=True):
        assert torch.equal(a, b)


def test_nonfinite_stop_names_the_step_and_keeps_the_checkpoint(tmp_path, sine):
    torch.manual_seed(0)
    enc, dec = resnet_pair(2, 1, 1, [16])
    m = FreeFormInjectiveFlow(enc, NaNAt(dec, bad={5}), data_dim=2, latent_dim=1)
    m.decoder.calls = 0  # call k is training step k - 1
    ck = tmp_path / "m.pt"
    with pytest.raises(NonFiniteLossError, match="step 4") as info:
        fit(
            m,
            sine,
            TrainConfig(steps=8, batch_size=16, checkpoint_every=2),
            checkpoint=ck,
            show_progress=False,
        )
    assert info.value.checkpoint == str(ck)
    assert torch.load(ck, weights_only=True)["step"] == 4


def test_checkpoint_errors(tmp_path, sine):
    m = _model()
    ck = tmp_path / "m.pt"
    fit(m, sine, TrainConfig(steps=2, batch_size=16), checkpoint=ck, show_progress=False)
    with pytest.raises(ValueError, match="another architecture: parameter"):
        load_checkpoint(ck, _model(widths=(8,)))
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        load_checkpoint(tmp_path / "nope.pt", m)
    (tmp_path / "junk.pt").write_bytes(b"\x00\x01junk")
    with pytest.raises(ValueError, match="not a file this package wrote"):
        load_checkpoint(tmp_path / "junk.pt", m)
    torch.save({"a": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="no format tag"):
        load_checkpoint(tmp_path / "other.pt", m)
    torch.save({"format": "iclr24-fif/1", "model": {}}, tmp_path / "partial.pt")  # right tag, keys missing
    with pytest.raises(ValueError, match="lacks architecture"):
        load_checkpoint(tmp_path / "partial.pt", m)
    with pytest.raises(ValueError, match="steps=2"):
        fit(m, sine, TrainConfig(steps=5, batch_size=16), checkpoint=ck, resume=True, show_progress=False)


def test_fit_rejects_bad_data_and_config(sine):
    m = _model()
    with pytest.raises(ValueError, match="empty"):
        fit(m, torch.zeros(0, 2), TrainConfig(steps=1), show_progress=False)
    with pytest.raises(ValueError, match="D=3"):
        fit(m, torch.zeros(10, 3), TrainConfig(steps=1), show_progress=False)
    with pytest.raises(ValueError, match="NaN or inf"):
        fit(m, torch.full((10, 2), float("inf")), TrainConfig(steps=1), show_progress=False)
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(lr=0.0)
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)


def test_nll_warmup_weight():
    assert nll_warmup_weight(5, 0, 0) == 1.0
    assert nll_warmup_weight(5, 10, 20) == 0.0
    assert nll_warmup_weight(15, 10, 20) == 0.5
    assert nll_warmup_weight(25, 10, 20) == 1.0


TORCHRUN_SCRIPT = """
import sys, json, torch, torch.distributed as dist
from iclr24.paperkit.distributed import init_distributed, cleanup_distributed
from iclr24.fif import FreeFormInjectiveFlow, TrainConfig, fit, resnet_pair, toy_splits
info = init_distributed(backend="gloo", device="cpu")
torch.manual_seed(info.rank)  # different inits: rank 0's weights must be broadcast
m = FreeFormInjectiveFlow(*resnet_pair(2, 1, 1, [8]), data_dim=2, latent_dim=1)
x = toy_splits("sine", 256, 16, seed=0)[0]
fit(m, x, TrainConfig(steps=3, batch_size=16), checkpoint=sys.argv[1] + "/m.pt", show_progress=False)
flat = torch.cat([p.detach().flatten() for p in m.parameters()])
allp = [torch.zeros_like(flat) for _ in range(info.world_size)]
dist.all_gather(allp, flat)
if info.rank == 0:
    json.dump({"same": all(torch.equal(allp[0], a) for a in allp), "n": info.world_size}, open(sys.argv[1] + "/r.json", "w"))
cleanup_distributed()
"""


@pytest.mark.slow  # two torch processes under torchrun (gloo)
def test_fit_under_torchrun_keeps_ranks_in_sync(tmp_path):
    import json

    from iclr24.paperkit.distributed import run_torchrun

    script = tmp_path / "train.py"
    script.write_text(TORCHRUN_SCRIPT)
    run_torchrun([str(script), str(tmp_path)], nproc=2, timeout=600)
    res = json.loads((tmp_path / "r.json").read_text())
    assert res == {"same": True, "n": 2}
    assert (tmp_path / "m.pt").is_file()


class _Crafted:
    """Any pickled object: a safe load refuses it."""

    def __reduce__(self):
        return (print, ("crafted code ran",))


def test_a_crafted_checkpoint_is_refused_without_torchs_unsafe_advice(tmp_path, capsys):
    m = _model()
    torch.save({"format": "iclr24-fif/1", "x": _Crafted()}, tmp_path / "crafted.pt")
    with pytest.raises(ValueError) as info:
        load_checkpoint(tmp_path / "crafted.pt", m)
    msg = str(info.value)
    assert "not a file this package wrote" in msg and "weights_only" not in msg
    assert "crafted code ran" not in capsys.readouterr().out


def test_monitor_and_checkpoint_extra(tmp_path, sine):
    m = _model()
    calls = []

    def monitor(model):
        calls.append(1)
        return {"w": float(next(model.parameters()).detach().abs().sum())}

    ck = tmp_path / "m.pt"
    hist = fit(
        m,
        sine,
        TrainConfig(steps=6, batch_size=16, seed=1),
        checkpoint=ck,
        show_progress=False,
        log_every=2,
        monitor=monitor,
        checkpoint_extra={"meta": {"data": "sine"}},
    )
    assert [r["step"] for r in hist["monitor"]] == [1, 3, 5, 6] and len(calls) == 4
    assert torch.load(ck, weights_only=True)["meta"] == {"data": "sine"}
    # the monitor draws nothing from the training generator: the same run without it ends at the same weights
    m2 = _model()
    fit(m2, sine, TrainConfig(steps=6, batch_size=16, seed=1), show_progress=False, log_every=2)
    for a, b in zip(m.parameters(), m2.parameters(), strict=True):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="may not override"):
        fit(_model(), sine, TrainConfig(steps=1), show_progress=False, checkpoint_extra={"model": 1})


def test_the_naive_objective_trains_and_is_stored(tmp_path, sine):
    torch.manual_seed(0)
    m = FreeFormInjectiveFlow(
        *resnet_pair(2, 1, 1, (16,)), data_dim=2, latent_dim=1, noise=0.01, jacobian_at="reconstruction"
    )
    ck = tmp_path / "m.pt"
    fit(m, sine, TrainConfig(steps=3, batch_size=16), checkpoint=ck, show_progress=False)
    assert torch.load(ck, weights_only=True)["hparams"]["jacobian_at"] == "reconstruction"
    with pytest.raises(ValueError, match="jacobian_at"):
        FreeFormInjectiveFlow(*resnet_pair(2, 1, 1, (4,)), data_dim=2, latent_dim=1, jacobian_at="x")
