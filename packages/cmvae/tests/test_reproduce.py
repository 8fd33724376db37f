"""The claims' verdict logic: the refinement claim can fail (its baseline is noise-matched, not the smooth decoder
means), comparisons over seeds are paired, and timings are marked as timings."""

import numpy as np
import pytest
import torch

from iclr24.cmvae.data import poly_digits
from iclr24.cmvae.experiments import ExperimentConfig
from iclr24.cmvae.experiments import _model
from iclr24.cmvae.experiments import hold_out_validation
from iclr24.cmvae.experiments import noise_matched_samples
from iclr24.cmvae.experiments import refinement_distances
from iclr24.cmvae.experiments import train_classifiers
from iclr24.cmvae.reproduce import _ROW
from iclr24.cmvae.reproduce import QUICK
from iclr24.cmvae.reproduce import _refinement_claim
from iclr24.paperkit import ClaimSet
from iclr24.paperkit import RunConfig


class _NoiseRefiner:
    """Stands in for the DDPM: returns exactly the noise-matched baseline's samples."""

    def __init__(self, model, data, seed):
        xs = data.tensors("train")
        rec = model.reconstruct(xs)
        self.var = [np.var((x - r).numpy(), axis=0) for x, r in zip(xs, rec, strict=True)]
        self.seed, self.cache = seed, None

    def refine(self, g, m, seed=0):
        if self.cache is None:
            raise AssertionError("prime() first")
        return self.cache[m]

    def prime(self, gen):
        self.cache = noise_matched_samples(gen, self.var, self.seed + 7)


def test_refinement_claim_fails_when_the_refiner_is_the_noise_baseline(tmp_path):
    data = poly_digits(200, 120, seed=0)
    data, _ = hold_out_validation(data, 20)
    cfg = ExperimentConfig(hidden=(16,), n_generated=100, n_clusters_max=4)
    model = _model(cfg, data, True, 0)
    clfs = train_classifiers(data, 0)
    fake = _NoiseRefiner(model, data, 0)
    fake.prime(model.sample(cfg.n_generated, seed=1))  # the same prior samples refinement_distances draws
    r = refinement_distances(cfg, model, data, clfs, 0, refiner=fake)
    assert r["fd_pixels_refined"] == r["fd_pixels_noise_matched"]
    assert r["fd_pixels_noise_matched"] < r["fd_pixels_unrefined"]  # noise alone already "improves" the FD
    cs = ClaimSet("cmvae", RunConfig(mode="quick", out=tmp_path))
    _refinement_claim(cs, QUICK, r)
    (claim,) = cs.claims
    assert claim.status == "fails" and claim.baseline == r["fd_pixels_noise_matched"]
    assert set(claim.details["timings"]) == {"refiner_train_seconds", "refine_ms_per_sample"}


def test_noise_matched_samples_have_the_residual_variance():
    mu = [torch.full((20000, 3), 0.5)]
    var = [np.array([0.01, 0.0025, 0.0])]
    (x,) = noise_matched_samples(mu, var, seed=0)
    assert np.allclose(x.var(0).numpy(), var[0], rtol=0.05, atol=1e-6)
    assert x.min() >= 0 and x.max() <= 1


def test_method_comparisons_are_paired_over_seeds(tmp_path):
    cs = ClaimSet("cmvae", RunConfig(mode="full", out=tmp_path))
    spec = _ROW["digits_acc"]  # ours >= baseline + 3, paired
    cs.paired(spec, ours=[60.0, 61.0, 59.0], baseline=[50.0, 50.5, 49.0], seeds=[0, 1, 2])
    cs.paired(spec, ours=[50.0, 62.0, 40.0], baseline=[50.0, 50.5, 49.0], seeds=[0, 1, 2])
    cs.paired(
        spec, ours=[52.0, 52.6, 51.4], baseline=[50.0, 50.5, 49.0], seeds=[0, 1, 2]
    )  # +2: under the margin
    held, unclear, failed = cs.claims
    assert held.status == "holds" and unclear.status == "inconclusive" and failed.status == "fails"
    assert held.kind == "supporting" and held.details["spec"]["id"] == "digits_acc"


def test_validation_tuples_are_held_out_of_the_test_tuples():
    data = poly_digits(100, 80, seed=0)
    rest, val = hold_out_validation(data, 30)
    assert len(rest.test_labels) == 50 and val[0].shape[0] == 30
    assert np.array_equal(rest.test[0], data.test[0][30:]) and np.array_equal(
        val[0].numpy(), data.test[0][:30]
    )
    with pytest.raises(ValueError, match="n_val must be"):
        hold_out_validation(data, 80)


@pytest.mark.slow  # three toy seeds of poly_digits through every --full claim (the MNIST rows stubbed out)
def test_full_mode_runs_every_claim_of_the_table_with_a_toy_config(tmp_path, monkeypatch):
    import dataclasses

    from iclr24.cmvae import reproduce as rp

    monkeypatch.setattr(rp, "FULL", dataclasses.replace(rp.SMOKE, seeds=(0, 1, 2)))
    fake = [
        {"seed": s, "cmvae": {"acc": 0.2 + 0.05 * (s - 1)}, "mmvae_kmeans": {"acc": 0.7}, "mmvae_gmm": {"acc": 0.6},
         "selection": {"k_star": 20, "h": [None, None, 2.0, 1.9]}, "trained_by": {"cmvae": "x", "mmvae": "y"}}
        for s in (0, 1, 2)
    ]  # fmt: skip
    for r in fake:
        for k in ("cmvae_at_kmax", "cmvae_at_kmax_means", "cmvae_means", "cmvae_latent_kmeans"):
            r[k] = {"acc": 0.1}
        for k in ("cmvae", "mmvae_kmeans", "mmvae_gmm", *(k for k in r if k.startswith("cmvae_"))):
            r[k] = {"nmi": 0.0, "ari": 0.0, **r[k]}
        r["clusters_used_at_kmax"], r["latent_geometry"] = 3, {}
    monkeypatch.setattr(rp, "_evaluate_checkpoints", lambda cfg, seeds: fake)
    cs = rp.PAPER.check(RunConfig(mode="full", out=tmp_path, progress=False))
    by = {c.details["spec"]["id"]: c for c in cs.claims if "spec" in c.details}
    assert not [c.message for c in cs.claims if c.status == "error"]
    assert set(by) == {row.id for row in rp.CLAIMS}
    assert by["mnist_acc"].status == "fails" and by["mnist_acc"].kind == "headline"
    assert by["mnist_k_star"].status == "fails" and by["mnist_k_star"].ours == 20.0
    assert by["digits_acc"].paired is not None and "diagnostics" in by["digits_acc"].details
    (fact,) = [f for f in cs.facts if f.name.startswith("poly_digits: K*")]
    assert fact.value.count(",") == 2 and "flat" in fact.name
