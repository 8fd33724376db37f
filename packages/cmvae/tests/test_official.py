"""The points where the package follows the released official code (Frenzoid/CMVAE, a fork carrying the authors'
commits 51d80ce and bcb4a15): finite gradients after pruning, the official cluster-selection rule, cross-modal
generation from the fixed p(w), the official DReG estimator, the Normal-latent variant."""

import math

import numpy as np
import pytest
import torch
from scipy.stats import entropy

from iclr24.cmvae import build_mlp_model
from iclr24.cmvae import fit
from iclr24.cmvae.distributions import latent_log_prob

D, d, dw, M = 12, 3, 2, 3


def _model(C=6, seed=0, **kw):
    torch.manual_seed(seed)
    return build_mlp_model(
        [D] * M, latent_dim=d, modality_latent_dim=dw, hidden=(16,), n_clusters_max=C, **kw
    )


def _batch(B=64, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(B, D, generator=g) for _ in range(M)]


def test_gradients_stay_finite_after_pruning_and_training_continues():
    m = _model()
    xs = _batch()
    sel = m.select_num_clusters(xs, apply=True)
    assert m.n_active == sel.k_star < 6  # clusters were pruned
    for est in ("iwae_looser", "dreg_looser", "dreg_detached"):
        m.zero_grad()
        m.loss(xs, K=3, estimator=est).backward()
        grads = {n: p.grad for n, p in m.named_parameters() if p.grad is not None}
        assert grads and all(torch.isfinite(g).all() for g in grads.values()), est
        pruned = ~m.active
        assert (grads["cluster_logits"][pruned] == 0).all() and (grads["cluster_means"][pruned] == 0).all()
    hist = fit(m, xs, epochs=10, batch_size=64, seed=0)  # 10 Adam steps on the pruned model
    assert len(hist) == 10 and all(math.isfinite(v) for v in hist)
    assert all(torch.isfinite(p).all() for p in m.parameters())
    assert math.isfinite(m.loss(xs).item())


def _official_h(z, logits, pruned, mu, beta, scale=1 + 1e-6):
    """prune_polyMNIST.py's score, written out in numpy/scipy from the released code's formulas: pruned clusters
    get prior 0 (logit -1e8), log(pi + 1e-20), q = softmax + 1e-20, entropy(q) / log(count_nonzero(q)),
    sum_c (log p(z|c) + log pi - log q) q / d; averaged over modalities, then rows. ``scale``: the cluster scale,
    softmax(0) * d + eps (the official eps is 1e-20, the package's 1e-6)."""
    lg = logits.copy()
    lg[list(pruned)] = -1e8
    pc = np.exp(lg - lg.max()) / np.exp(lg - lg.max()).sum()
    lpc = np.log(pc + 1e-20)
    ents, lls = [], []
    for m in range(z.shape[1]):
        zm = z[:, m].astype(np.float64)
        lpzc = (-np.abs(zm[:, None, :] - mu[None]) / scale - np.log(2.0 * scale)).sum(-1)  # Laplace(mu_c, s)
        a = lpc + lpzc
        sm = np.exp(a - a.max(1, keepdims=True))
        pcz = sm / sm.sum(1, keepdims=True) + 1e-20
        lls.append(((lpzc + lpc - np.log(pcz)) * pcz).sum(-1) / zm.shape[-1])
        ents.append(entropy(pcz, axis=1) / np.log(np.count_nonzero(pcz, axis=1)))
    return beta * np.mean(np.mean(ents, 0)) - np.mean(np.mean(lls, 0))


def test_official_selection_rule_matches_the_released_formula_including_underflow():
    m = _model(C=5, beta=2.5).double()
    with torch.no_grad():
        m.cluster_means[0] = 1000.0  # q(c=0|z) underflows to exactly 0 for every z near the others
        m.cluster_logits.copy_(torch.tensor([0.3, -0.2, 0.1, 0.0, 0.5]))
    g = torch.Generator().manual_seed(0)
    z = torch.randn(40, M, d, generator=g, dtype=torch.float64)
    avail = torch.ones(40, M, dtype=torch.bool)
    mu = m.cluster_means.detach().numpy()
    for pruned in ([], [3], [3, 1]):
        active = torch.ones(5, dtype=torch.bool)
        active[pruned] = False
        h, _ = m._selection_step(z, avail, active, "official")
        ref = _official_h(z.numpy(), m.cluster_logits.detach().numpy(), pruned, mu, 2.5)
        assert h == pytest.approx(ref, rel=1e-10, abs=1e-10)
    # the underflow case: q(c=0|z) is exactly 0 before the +1e-20, so counting q > 0 (MultiVae's divisor, the
    # package's former parity mode) divides by log 4, the official code by log 5 = log K_max
    lpzc = latent_log_prob(z[:, 0, None, :], m.cluster_means, 1.0).sum(-1)
    assert (torch.softmax(lpzc + torch.log_softmax(m.cluster_logits, -1), -1)[:, 0] == 0).all()
    full = torch.ones(5, dtype=torch.bool)
    h_multivae, _ = m._selection_step(z, avail, full, "multivae")
    ref = _official_h(z.numpy(), m.cluster_logits.detach().numpy(), [], mu, 2.5)
    assert abs(h_multivae - ref) > 1e-3


def test_official_selection_loop_prunes_by_probability_mass_and_keeps_the_first_minimum(monkeypatch):
    m = _model(C=6, beta=2.5).double()
    g = torch.Generator().manual_seed(3)
    z = torch.randn(80, M, d, generator=g, dtype=torch.float64) * 1.5
    avail = torch.ones(80, M, dtype=torch.bool)
    monkeypatch.setattr(m, "_sample_posterior_z", lambda *a, **k: (z, avail))
    sel = m.select_num_clusters([None] * M)
    # reference loop (prune_polyMNIST.py): mass of c = sum over rows whose vote is c of max_c mean_m q; prune the
    # active cluster with the least mass (ties: the last); keep the first strict minimum of h, never K = 1
    logits, mu = m.cluster_logits.detach().numpy(), m.cluster_means.detach().numpy()
    pruned, hs = [], {}
    while True:
        k = 6 - len(pruned)
        hs[k] = _official_h(z.numpy(), logits, pruned, mu, 2.5)
        if k == 2:
            break
        lg = logits.copy()
        lg[pruned] = -1e8
        lpc = np.log(np.exp(lg - lg.max()) / np.exp(lg - lg.max()).sum() + 1e-20)
        qs = []
        for j in range(M):
            s = 1 + 1e-6
            a = lpc + (-np.abs(z[:, j, None, :].numpy() - mu[None]) / s - np.log(2.0 * s)).sum(-1)
            e = np.exp(a - a.max(1, keepdims=True))
            qs.append(e / e.sum(1, keepdims=True) + 1e-20)
        votes = np.stack([q.argmax(1) for q in qs], 1)
        vote = np.array([np.bincount(v, minlength=6).argmax() for v in votes])
        best = np.mean(qs, 0).max(1)
        mass = {c: best[vote == c].sum() for c in range(6) if c not in pruned}
        pruned.append(sorted(mass, key=mass.get, reverse=True)[-1])
    assert sel.removed == pruned[:4]
    assert [sel.h[k] for k in range(6, 1, -1)] == pytest.approx([hs[k] for k in range(6, 1, -1)], rel=1e-10)
    k_first = next(k for k in range(6, 1, -1) if hs[k] == min(hs.values()))
    assert sel.k_star == k_first


@pytest.mark.parametrize("latent", ["laplace", "normal"])
def test_cross_generation_draws_w_from_the_fixed_prior(latent):
    m = _model(C=4, latent=latent)
    with (
        torch.no_grad()
    ):  # auxiliary priors far from p(w): scales about (1.96, 0.04) (Laplace), (5, 0) (Normal)
        m.aux_prior_raw_scale.copy_(torch.tensor([5.0, -5.0]).expand(M, dw))
    x = torch.rand(4000, D, generator=torch.Generator().manual_seed(0))
    # E|w| of the fixed prior: 1 for Laplace(0, 1); log 2 * sqrt(2 / pi) for Normal(0, softplus(0))
    want = 1.0 if latent == "laplace" else math.log(2) * math.sqrt(2 / math.pi)
    _, _, ws = m.cross_generate(x, 0, seed=0, return_latents=True)
    for n in (1, 2):
        assert torch.allclose(ws[n].abs().mean(0), torch.full((dw,), want), atol=0.06)
    aux = m.scale_of(m.aux_prior_raw_scale)[1]
    _, _, ws_aux = m.cross_generate(x, 0, seed=0, w_prior="auxiliary", return_latents=True)
    e_abs = aux if latent == "laplace" else aux * math.sqrt(2 / math.pi)
    assert torch.allclose(ws_aux[1].abs().mean(0), e_abs, rtol=0.06, atol=1e-3)
    with pytest.raises(ValueError, match="w_prior must be"):
        m.cross_generate(x, 0, w_prior="learned")


def test_official_dreg_has_the_iwae_gradient_and_the_detached_option_differs():
    # objectives.py cmvae_dreg: sum_k stop(softmax_k lw) lw_k with live posterior densities (its hook is set on a
    # tensor outside the graph), so its gradient is the IWAE (looser) gradient
    m = _model(C=4)
    xs = _batch(16)

    def grads(est):
        m.zero_grad()
        torch.manual_seed(7)
        m.loss(xs, K=5, estimator=est).backward()
        return [p.grad.clone() for p in m.parameters() if p.grad is not None]

    iwae, dreg, det = grads("iwae_looser"), grads("dreg_looser"), grads("dreg_detached")
    assert all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(iwae, dreg, strict=True))
    assert max(float((a - b).abs().max()) for a, b in zip(iwae, det, strict=True)) > 1e-3


def test_normal_latent_variant_uses_softplus_scales_and_trains():
    m = _model(C=4, latent="normal")
    assert torch.allclose(m.cluster_scale(), torch.full((4, d), math.log(2) + 1e-6))
    xs = _batch(32)
    _, zs, _, ws = m._encode(xs, torch.ones(32, M, dtype=torch.bool))
    raw = m.encoders[0](xs[0])
    assert torch.allclose(zs[0], torch.nn.functional.softplus(raw[1]) + 1e-6)
    loss = m.loss(xs, K=2)
    loss.backward()
    assert math.isfinite(loss.item()) and all(
        torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None
    )
    with pytest.raises(ValueError, match="latent must be one of"):
        _model(latent="student")
