"""The scale epsilon (1e-6 here, the official ``Constants.eta`` = 1e-20 as an option) and the posterior-means
diagnostic of the cluster assignment."""

import pytest
import torch

from iclr24.cmvae import CMVAE
from iclr24.cmvae.cli import main
from iclr24.cmvae.distributions import OFFICIAL_SCALE_EPS
from iclr24.cmvae.distributions import SCALE_EPS
from iclr24.cmvae.distributions import latent_scale
from iclr24.cmvae.distributions import softmax_scale
from iclr24.cmvae.model import build_mlp_model


def test_the_scale_epsilon_is_1e6_by_default_and_the_official_1e20_on_request():
    assert SCALE_EPS == 1e-6 and OFFICIAL_SCALE_EPS == 1e-20
    raw = torch.tensor([[0.0, -200.0, 0.0]], dtype=torch.float64)  # the middle softmax weight underflows to 0
    ours, official = softmax_scale(raw), softmax_scale(raw, OFFICIAL_SCALE_EPS)
    assert ours[0, 1].item() == pytest.approx(1e-6, rel=1e-9)
    assert official[0, 1].item() == pytest.approx(1e-20, rel=1e-9)  # log q of that dim: about +45 nats
    assert torch.allclose(ours[0, [0, 2]], torch.tensor([1.5, 1.5], dtype=torch.float64), atol=2e-6)
    assert latent_scale(torch.zeros(4), "normal", 1e-20).sub(torch.log(torch.tensor(2.0))).abs().max() < 1e-6


def test_a_model_with_the_official_epsilon_uses_it_and_saves_it(tmp_path):
    m = build_mlp_model([6, 5], hidden=(8,), n_clusters_max=3, scale_eps=1e-20)
    assert m.scale_eps == 1e-20 and m.scale_of(torch.tensor([0.0, -200.0]))[1].item() == pytest.approx(1e-20)
    m.save_pretrained(tmp_path / "m")
    back = CMVAE.from_pretrained(tmp_path / "m")
    assert back.scale_eps == 1e-20 and build_mlp_model([6, 5], hidden=(8,)).scale_eps == 1e-6


@pytest.mark.parametrize("bad", [0.0, -1e-6, 0.5, float("nan"), True, "1e-6"])
def test_an_out_of_range_epsilon_is_refused(bad):
    with pytest.raises(ValueError, match="scale_eps"):
        build_mlp_model([6, 5], hidden=(8,), scale_eps=bad)


def test_cli_scale_eps_reaches_the_saved_model(tmp_path):
    out = tmp_path / "t"
    rc = main(["train", "--n-train", "120", "--n-test", "30", "--epochs", "1", "--hidden", "8", "--n-clusters-max",
               "3", "--scale-eps", "1e-20", "--out", str(out), "--quiet"])  # fmt: skip
    assert rc == 0 and CMVAE.from_pretrained(out / "model").scale_eps == 1e-20
    assert main(["train", "--scale-eps", "0.5", "--out", str(tmp_path / "u"), "--quiet"]) == 2


def test_posterior_means_assignment_is_the_argmax_at_the_encoder_means_whatever_the_seed():
    torch.manual_seed(0)
    m = build_mlp_model([6, 5], hidden=(8,), n_clusters_max=4)
    xs = [torch.rand(40, 6), torch.rand(40, 5)]
    a, b = (m.predict_clusters(xs, seed=s, at_means=True) for s in (0, 1))
    assert (a.clusters == b.clusters).all()
    avail = torch.ones(40, 2, dtype=torch.bool)
    with torch.no_grad():
        zl = m._encode(xs, avail)[0].transpose(0, 1)
        votes = m.cluster_posterior(zl).argmax(-1)
    assert (torch.from_numpy(a.per_modality) == votes).all()
    with pytest.raises(ValueError, match="at_means"):
        m.predict_clusters(xs, at_means="yes")


def test_cli_trains_the_mmvae_baseline_and_records_step_losses(tmp_path):
    import json

    out = tmp_path / "mm"
    rc = main(["train", "--n-train", "300", "--n-test", "30", "--epochs", "2", "--hidden", "8", "--model", "mmvae",
               "--batch-size", "10", "--out", str(out), "--quiet"])  # fmt: skip
    assert rc == 0
    prov = json.loads((out / "model" / "provenance.json").read_text())
    assert type(CMVAE.from_pretrained(out / "model")).__name__ == "MMVAEPlus"
    # 60 steps: every step up to 20, then every 60 // 20 = 3 (and the last)
    want = set(range(1, 21)) | set(range(3, 61, 3))
    assert prov["steps"] == 60 and set(map(int, prov["losses"])) == want
    assert main(["train", "--model", "mmvae", "--select", "--out", str(tmp_path / "x"), "--quiet"]) == 2
