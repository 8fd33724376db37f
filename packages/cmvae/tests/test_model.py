import math

import numpy as np
import pytest
import torch
import torch.nn as nn
from torch.distributions import Laplace
from torch.distributions import Normal

from iclr24.cmvae import CMVAE
from iclr24.cmvae import MLPDecoder
from iclr24.cmvae import MLPEncoder
from iclr24.cmvae import MMVAEPlus
from iclr24.cmvae import build_mlp_model
from iclr24.cmvae import load_checkpoint
from iclr24.cmvae import save_checkpoint
from iclr24.cmvae.distributions import latent_scale

D, d, dw, M = 12, 3, 2, 3


def _model(C=4, **kw):
    torch.manual_seed(0)
    return build_mlp_model(
        [D] * M, latent_dim=d, modality_latent_dim=dw, hidden=(16,), n_clusters_max=C, **kw
    )


def _batch(B=8, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(B, D, generator=g) for _ in range(M)]


def test_initial_parameterisation():  # acceptance check 1
    m = _model(C=5)
    assert torch.allclose(m.log_pi().exp(), torch.full((5,), 0.2))
    assert torch.allclose(m.cluster_scale(), torch.full((5, d), 1 + 1e-6))
    assert (m.cluster_means.abs() <= 1).all()
    zl, zs, _, _ = m._encode(_batch(), torch.ones(8, M, dtype=torch.bool))
    assert torch.allclose(zs.sum(-1), torch.full((M, 8), d * (1 + 1e-6)), rtol=1e-6)


def _mmvae_plus_reference(model, xs, K, latent="laplace"):
    """MMVAE+ (IWAE looser) written out with torch.distributions: fixed prior Laplace(0, 1 + 1e-6) (or, for the
    Normal variant, Normal(0, softplus(0) + 1e-6))."""
    B = xs[0].shape[0]
    Q = Normal if latent == "normal" else Laplace

    def sc(raw):
        return latent_scale(raw, latent)

    enc = [model.encoders[m](xs[m]) for m in range(M)]
    zq = [Q(e[0], sc(e[1])) for e in enc]
    wq = [Q(e[2], sc(e[3])) for e in enc]
    aux = sc(model.aux_prior_raw_scale)
    one = sc(torch.zeros(1, dtype=xs[0].dtype))
    draws = []
    for m in range(M):
        z, w = zq[m].rsample((K,)), wq[m].rsample((K,))
        wn = [w if n == m else Q(torch.zeros_like(aux[n]), aux[n]).rsample((K, B)) for n in range(M)]
        draws.append((z, w, wn))
    lws = []
    for m, (z, w, wn) in enumerate(draws):
        rec = sum(
            Laplace(model.decoders[n](torch.cat([z, wn[n]], -1)), 0.75).log_prob(xs[n]).sum(-1)
            for n in range(M)
        )
        lqz = torch.logsumexp(torch.stack([zq[n].log_prob(z).sum(-1) for n in range(M)]), 0) - math.log(M)
        reg = Q(0.0, one).log_prob(z).sum(-1) + Q(0.0, one).log_prob(w).sum(-1) - lqz
        reg = reg - wq[m].log_prob(w).sum(-1)
        lws.append(rec + model.beta * reg)
    lws = torch.stack(lws)
    return -(torch.logsumexp(lws, 1) - math.log(K)).mean(0).mean()


@pytest.mark.parametrize("K,latent", [(1, "laplace"), (3, "laplace"), (3, "normal")])
def test_reduces_to_mmvae_plus_with_one_cluster(K, latent):  # acceptance check 3 (and the Normal variant)
    torch.manual_seed(0)
    encs = [MLPEncoder(D, d, dw, (16,)) for _ in range(M)]
    decs = [MLPDecoder(d + dw, D, (16,)) for _ in range(M)]
    model = MMVAEPlus(encs, decs, latent_dim=d, modality_latent_dim=dw, beta=2.5, K=K, latent=latent).double()
    xs = [x.double() for x in _batch()]
    torch.manual_seed(5)
    ours = model.loss(xs)
    torch.manual_seed(5)
    ref = _mmvae_plus_reference(model, xs, K, latent)
    assert ours.item() == pytest.approx(ref.item(), rel=1e-9)


def test_loss_sanity_dreg_equals_iwae_at_k1_and_training_lowers_it():  # acceptance check 5
    m = _model(beta=2.5)
    xs = _batch(32)
    torch.manual_seed(3)
    a = m.loss(xs, estimator="iwae_looser")
    torch.manual_seed(3)
    b = m.loss(xs, estimator="dreg_looser")
    assert a.item() == pytest.approx(b.item(), rel=1e-6)
    b.backward()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)
    torch.manual_seed(3)
    c = m.loss(xs, K=4, estimator="dreg_looser")
    c.backward()
    assert math.isfinite(c.item())
    opt = torch.optim.Adam(m.parameters(), lr=1e-3, amsgrad=True)
    torch.manual_seed(0)
    first = m.loss(xs).item()
    for _ in range(50):
        opt.zero_grad()
        m.loss(xs).backward()
        opt.step()
    torch.manual_seed(0)
    assert m.loss(xs).item() < first - 1.0


def test_missing_modality_rows_and_batches():
    m = _model()
    xs = _batch()
    mask = torch.ones(8, M, dtype=torch.bool)
    mask[:4, 1] = False
    assert math.isfinite(m.loss(xs, mask).item())
    assert math.isfinite(m.loss([xs[0], None, xs[2]]).item())
    pred = m.predict_clusters([xs[0], None, None])
    assert (pred.per_modality[:, 1:] == -1).all() and (pred.clusters == pred.per_modality[:, 0]).all()
    with pytest.raises(ValueError, match="every modality"):
        m.loss([None, None, None])
    with pytest.raises(ValueError, match="every modality missing"):
        m.loss(xs, torch.zeros(8, M, dtype=torch.bool))


def test_pruning_curve_restore_and_no_mass_on_pruned():  # acceptance check 6
    m = _model(C=6)
    xs = _batch(64)
    before = m.active.clone()
    sel = m.select_num_clusters(xs)
    assert torch.equal(m.active, before)  # no side effect without apply
    assert len(sel.h) == 7 and sel.h[0] == math.inf and sel.h[1] == math.inf
    assert all(math.isfinite(v) for v in sel.h[2:]) and sel.h[sel.k_star] == min(sel.h)
    assert len(sel.removed) == 4 and len(set(sel.removed)) == 4
    sel2 = m.select_num_clusters(xs, apply=True)
    assert sel2.h == sel.h and m.n_active == sel.k_star and (m.active.numpy() == sel.active).all()
    q = m.cluster_posterior(torch.randn(100, d))
    assert (q[:, ~m.active] == 0).all()
    assert set(m.predict_clusters(xs).clusters.tolist()) <= set(np.flatnonzero(sel.active).tolist())
    assert set(m.sample(50, seed=0, return_latents=True)[1].tolist()) <= set(
        np.flatnonzero(sel.active).tolist()
    )
    assert math.isfinite(m.loss(xs).item())
    for rule in ("active", "multivae"):
        other = m.select_num_clusters(xs, rule=rule) if m.n_active >= 2 else None
        assert other is None or (len(other.h) == 7 and other.rule == rule)
    with pytest.raises(ValueError, match="rule must be one of"):
        m.select_num_clusters(xs, rule="parity")


def test_sample_from_a_cluster_and_cross_generate():
    m = _model(C=4)
    outs, c, z, _ = m.sample(10, cluster=2, seed=0, return_latents=True)
    assert (c == 2).all() and len(outs) == M and outs[0].shape == (10, D)
    assert torch.equal(m.sample(5, seed=1)[0], m.sample(5, seed=1)[0])
    gen = m.cross_generate(_batch()[0], source=0, seed=0)
    assert [g.shape for g in gen] == [(8, D)] * M
    with pytest.raises(ValueError, match="cluster must be"):
        m.sample(3, cluster=9)


def test_checkpoint_round_trip(tmp_path):
    m = _model()
    m.select_num_clusters(_batch(32), apply=True)
    p = save_checkpoint(m, tmp_path / "m.pt")
    m2 = load_checkpoint(p)
    assert torch.equal(m2.active, m.active)
    xs = _batch()
    torch.manual_seed(0)
    a = m.loss(xs)
    torch.manual_seed(0)
    assert m2.loss(xs).item() == a.item()
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a file this package wrote"):
        load_checkpoint(tmp_path / "bad.pt")
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        load_checkpoint(tmp_path / "missing.pt")


class _WrongDecoder(nn.Module):
    def forward(self, zw):
        return zw.new_zeros(zw.shape[0], D + 1)


def test_bad_input():
    enc = [MLPEncoder(D, d, dw, (8,)) for _ in range(M)]
    dec = [MLPDecoder(d + dw, D, (8,)) for _ in range(M)]
    kw = dict(latent_dim=d, modality_latent_dim=dw)
    with pytest.raises(ValueError, match="one encoder and one decoder"):
        CMVAE(enc, dec[:2], **kw)
    with pytest.raises(ValueError, match="latent_dim"):
        CMVAE(enc, dec, latent_dim=d + 1, modality_latent_dim=dw)
    with pytest.raises(ValueError, match="decoder 0 takes"):
        CMVAE(enc, [MLPDecoder(d, D, (8,))] + dec[1:], **kw)
    with pytest.raises(ValueError, match="n_clusters_max must be an integer >= 2"):
        CMVAE(enc, dec, n_clusters_max=1, **kw)
    with pytest.raises(ValueError, match="likelihood must be one of"):
        CMVAE(enc, dec, likelihood="poisson", **kw)
    with pytest.raises(ValueError, match="beta"):
        CMVAE(enc, dec, beta=float("nan"), **kw)
    model = CMVAE(enc, [_WrongDecoder()] + dec[1:], **kw)
    with pytest.raises(ValueError, match="decoder 0 outputs shape"):
        model.loss(_batch())
    good = CMVAE(enc, dec, **kw)
    with pytest.raises(ValueError, match=r"expected inputs of shape \[B, 12\]"):
        good.loss([torch.rand(4, D + 3)] * M)
    with pytest.raises(ValueError, match="expected 3 modalities"):
        good.loss(_batch()[:2])
    bad = _batch()
    bad[1][0, 0] = float("nan")
    with pytest.raises(ValueError, match="non-finite"):
        good.loss(bad)


def test_experiment_config_likelihood_reaches_the_models():
    # The reproduction's calibrated likelihood (normal, sd 0.1) must reach CMVAE and MMVAE+ alike; the CPU config
    # would silently fall back to the Laplace default otherwise.
    from iclr24.cmvae.data import poly_digits
    from iclr24.cmvae.experiments import ExperimentConfig
    from iclr24.cmvae.experiments import _model

    data = poly_digits(40, 20, seed=3)
    cfg = ExperimentConfig(hidden=(8,), likelihood="normal", likelihood_scale=0.1)
    for clustered in (True, False):
        m = _model(cfg, data, clustered, 0)
        assert (m.likelihood, m.likelihood_scale) == ("normal", 0.1)
        x = data.tensors("train")
        recon = torch.zeros(1, *x[0].shape)
        want = (-0.5 * (x[0] / 0.1) ** 2 - math.log(0.1) - 0.5 * math.log(2 * math.pi)).sum(-1)
        torch.testing.assert_close(m.log_likelihood(recon, x[0])[0], want)


@pytest.mark.parametrize("estimator", ["iwae_looser", "dreg_looser", "dreg_detached"])
def test_what_is_learned_matches_the_reference_code(estimator):
    # As in the official objectives.py: the cluster logits and means and the auxiliary priors' scales get gradients
    # (q(c|z) has no stop-gradient); p(w) and the cluster scales are fixed buffers. The official cmvae_dreg
    # (``dreg_looser``) does NOT detach the posterior densities (it rebuilds them from the live encoder outputs);
    # only the ``dreg_detached`` option does, so there the encoders learn only through the sampled z and w.
    torch.manual_seed(0)
    model = build_mlp_model([6, 5], hidden=(8,), latent_dim=3, modality_latent_dim=2, n_clusters_max=4,
                            K=3, estimator=estimator)  # fmt: skip
    names = {n for n, _ in model.named_parameters()}
    assert {"cluster_logits", "cluster_means", "aux_prior_raw_scale"} <= names
    assert not names & {"w_prior_raw_scale", "cluster_raw_scale"}
    xs = [torch.rand(7, 6), torch.rand(7, 5)]
    model.loss(xs).backward()
    for p in (model.cluster_logits, model.cluster_means, model.aux_prior_raw_scale):
        assert p.grad is not None and p.grad.abs().sum() > 0
    # The encoder-0 gradient of sum(lw) against its part through the samples (z_0, w_0) alone: equal when the
    # densities are detached, different otherwise (the densities' direct dependence on the encoder).
    torch.manual_seed(1)
    lws, _, latents = model.log_weights(xs, detach_posteriors=estimator == "dreg_detached")
    enc0 = list(model.encoders[0].parameters())
    z0, w0 = latents[0]
    total = torch.autograd.grad(lws.sum(), enc0, retain_graph=True)
    gz, gw = torch.autograd.grad(lws.sum(), [z0, w0], retain_graph=True)
    path = torch.autograd.grad([z0, w0], enc0, grad_outputs=[gz, gw])
    gap = sum(float((t - q).abs().sum()) for t, q in zip(total, path, strict=True))
    if estimator == "dreg_detached":
        assert gap < 1e-4
    else:
        assert gap > 1e-3
