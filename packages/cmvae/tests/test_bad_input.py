"""Silent wrong answers and raw tracebacks of issue 50, each now one clear line: an .npz of 0-255 pixels, a
Bernoulli likelihood on values outside [0, 1], labels below -1, checkpoints with a damaged spec or state, a crafted
pickle."""

import json
import os

import numpy as np
import pytest
import torch

from iclr24.cmvae import build_mlp_model
from iclr24.cmvae import fit
from iclr24.cmvae import load_checkpoint
from iclr24.cmvae import load_multimodal_npz
from iclr24.cmvae import save_checkpoint
from iclr24.cmvae.checkpoint import CHECKPOINT_FORMAT
from iclr24.cmvae.cli import main
from iclr24.paperkit import atomic_torch_save


def _npz(path, scale=1.0, labels=None):
    rng = np.random.default_rng(0)
    arrays = {"x0": rng.random((30, 16)) * scale, "x1": rng.random((30, 16)) * scale}
    if labels is not None:
        arrays["labels"] = labels
    np.savez(path, **arrays)
    return path


def _train(path, out, *extra):
    return main(["train", "--data", "npz", "--path", str(path), "--epochs", "1", "--hidden", "8",
                 "--n-clusters-max", "2", "--out", str(out), "--quiet", *extra])  # fmt: skip


@pytest.mark.parametrize("likelihood", ["laplace", "bernoulli"])
def test_an_npz_of_0_255_pixels_is_refused_before_training(tmp_path, capsys, likelihood):
    """It used to train to a loss of 28,592 (Laplace) or print "final loss -2170" (Bernoulli), exit 0."""
    p = _npz(tmp_path / "pixels.npz", scale=255.0)
    with pytest.raises(
        ValueError, match=r"x0 must hold values in \[0, 1\], got the range \[0\.\d+, 25\d\.\d+\]"
    ):
        load_multimodal_npz(p)
    assert _train(p, tmp_path / "o", "--likelihood", likelihood) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "divide by 255" in err
    assert not (tmp_path / "o").exists()


def test_a_bernoulli_model_refuses_values_outside_0_1_at_the_api():
    torch.manual_seed(0)
    m = build_mlp_model([4, 4], hidden=(8,), n_clusters_max=2, likelihood="bernoulli")
    good = [torch.rand(6, 4), torch.rand(6, 4)]
    assert torch.isfinite(m.loss(good))
    for bad in ([good[0] * 255, good[1]], [good[0], good[1] - 0.5]):
        with pytest.raises(ValueError, match=r"Bernoulli likelihood needs values in \[0, 1\]"):
            m.loss(bad)
        with pytest.raises(ValueError, match="Bernoulli"):
            fit(m, bad, epochs=1)
    # the Laplace / normal likelihoods model real values: no range is imposed there
    m2 = build_mlp_model([4, 4], hidden=(8,), n_clusters_max=2, likelihood="laplace")
    assert torch.isfinite(m2.loss([good[0] * 3, good[1]]))


def test_labels_below_minus_one_are_refused_not_treated_as_unlabelled(tmp_path, capsys):
    p = _npz(tmp_path / "neg.npz", labels=np.arange(30) % 3 - 5)  # -5..-3
    with pytest.raises(ValueError, match="labels must be class indices >= 0, or -1 .* down to -5"):
        load_multimodal_npz(p)
    assert _train(p, tmp_path / "o") == 2
    assert "-1 for an unlabelled tuple" in capsys.readouterr().err
    p = _npz(tmp_path / "frac.npz", labels=np.linspace(0, 2, 30))
    with pytest.raises(ValueError, match="integer class indices"):
        load_multimodal_npz(p)
    # -1 (unlabelled) and integral float labels still load
    d = load_multimodal_npz(
        _npz(tmp_path / "ok.npz", labels=np.where(np.arange(30) < 5, -1, np.arange(30) % 2))
    )
    assert set(np.concatenate([d.train_labels, d.test_labels])) == {-1, 0, 1}
    assert (
        load_multimodal_npz(_npz(tmp_path / "f.npz", labels=(np.arange(30) % 2).astype(float))).n_modalities
        == 2
    )


@pytest.fixture
def model_and_ckpt(tmp_path):
    torch.manual_seed(0)
    m = build_mlp_model([4, 4], hidden=(8,), n_clusters_max=2)
    return m, save_checkpoint(m, tmp_path / "model.pt")


def _write(tmp_path, **obj):
    return atomic_torch_save(obj, tmp_path / "bad.pt")


def test_a_checkpoint_is_tagged_and_an_untagged_one_of_an_earlier_version_loads(tmp_path, model_and_ckpt):
    m, p = model_and_ckpt
    assert torch.load(p, weights_only=True)["format"] == CHECKPOINT_FORMAT
    old = _write(tmp_path, spec=json.dumps(m.spec), state=m.state_dict())
    assert torch.equal(load_checkpoint(old).cluster_means, m.cluster_means)


@pytest.mark.parametrize(
    "change, expect",
    [
        (lambda m: {"spec": "{not json"}, "build spec is not valid JSON"),
        (lambda m: {"spec": json.dumps({"latent_dim": 3})}, "no input_dims list"),
        (lambda m: {"spec": json.dumps({**m.spec, "colour": "blue"})}, "cannot be built"),  # was a TypeError
        (lambda m: {"spec": json.dumps({**m.spec, "latent_dim": -2})}, "cannot be built"),
        (lambda m: {"spec": 7}, "spec of type int, expected str"),
        (lambda m: {"state": {"nope": torch.ones(1)}}, "weights do not fit"),  # was a RuntimeError
        (lambda m: {"state": {k: v[..., :1] for k, v in m.state_dict().items()}}, "weights do not fit"),
        (lambda m: {"format": "iclr24.other/1"}, "format tag is 'iclr24.other/1'"),
    ],
)
def test_a_damaged_checkpoint_is_one_line_on_the_api_and_the_cli(
    tmp_path, capsys, model_and_ckpt, change, expect
):
    m, _ = model_and_ckpt
    obj = {"format": CHECKPOINT_FORMAT, "spec": json.dumps(m.spec), "state": m.state_dict(), **change(m)}
    p = _write(tmp_path, **obj)
    with pytest.raises(ValueError, match=expect.replace("(", r"\(")) as e:
        load_checkpoint(p)
    assert "\n" not in str(e.value) and "bad.pt" in str(e.value)
    for cmd in ("sample", "cluster"):
        assert main([cmd, str(p), "--out", str(tmp_path / "o"), "--quiet"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and expect in err and "Traceback" not in err
        assert not (tmp_path / "o").exists()


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch PWNED",))


def test_a_crafted_checkpoint_never_runs_and_no_weights_only_false_advice(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    torch.save({"format": CHECKPOINT_FORMAT, "spec": "{}", "state": {"x": _Evil()}}, tmp_path / "evil.pt")
    assert main(["sample", str(tmp_path / "evil.pt"), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "not a file this package wrote" in err and "weights_only" not in err
    assert not (tmp_path / "PWNED").exists()


def test_a_diverged_fit_is_one_input_error_not_torch_distributions_value_error():
    from iclr24.cmvae.train import NonFiniteTrainingError
    from iclr24.paperkit.errors import InputError

    torch.manual_seed(0)
    m = build_mlp_model([4, 4], hidden=(8,), n_clusters_max=2, likelihood="laplace")
    with torch.no_grad():
        next(m.parameters()).fill_(float("nan"))  # what a diverged step leaves behind
    with pytest.raises(NonFiniteTrainingError, match="training diverged") as info:
        fit(m, [torch.randn(8, 4), torch.randn(8, 4)], epochs=1, batch_size=4)
    assert isinstance(info.value, InputError) and isinstance(info.value, FloatingPointError)
