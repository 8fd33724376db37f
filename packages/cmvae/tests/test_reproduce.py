"""The claims' verdict logic: the refinement claim can fail (its baseline is noise-matched, not the smooth decoder
means), comparisons over seeds are paired, and timings are marked as timings."""

import numpy as np
import pytest
import torch

from iclr24.cmvae.data import poly_digits
from iclr24.cmvae.experiment import (
    ExperimentConfig,
    _model,
    hold_out_validation,
    noise_matched_samples,
    refinement_distances,
    train_classifiers,
)
from iclr24.cmvae.reproduce import _ROW, QUICK, _refinement_claim
from iclr24.paperkit import ClaimSet, RunConfig


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
