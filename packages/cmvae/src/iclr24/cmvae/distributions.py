"""The closed forms of CMVAE (Palumbo et al., ICLR 2024, Sec. 3): Laplace densities, the softmax scale
parameterisation, the mixture-of-experts joint posterior, the closed-form cluster posterior q(c|z) and the
entropy-minus-likelihood score of the post-hoc cluster selection. Pure tensor functions.

Notation (the paper's symbols):
    z        shared latent, (..., d)
    w_m      modality-specific latent of modality m, (..., d_w)
    c        cluster, 1..K; pi = softmax(l) its prior, mu_c the cluster means, sigma_c = 1 (fixed)
    q(z|x_m) unimodal posterior of modality m (Laplace); q(z|X) their mixture
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from iclr24.paperkit.errors import InputError

__all__ = [
    "SCALE_EPS",
    "OFFICIAL_SCALE_EPS",
    "softmax_scale",
    "laplace_log_prob",
    "log_moe_density",
    "cluster_log_joint",
    "cluster_posterior",
    "normalised_entropy",
    "cluster_marginal_log_likelihood",
    "LATENTS",
    "latent_scale",
    "latent_log_prob",
    "normal_log_prob",
    "official_selection_terms",
]

# The epsilon added to every latent scale. 1e-6 here; the official CMVAE code adds ``Constants.eta`` = 1e-20
# (``src/utils.py``), which in float32 vanishes next to any scale above ~1e-13 and only matters when a softmax
# scale underflows to 0 (then the official scale is 1e-20 and log q is about +45 per dimension). ``CMVAE(scale_eps=)``
# / ``cmvae train --scale-eps`` choose it; 1e-6 stays the default (a floor that keeps log q bounded).
SCALE_EPS = 1e-6
OFFICIAL_SCALE_EPS = 1e-20
Q_EPS = 1e-20


def softmax_scale(raw: torch.Tensor, eps: float = SCALE_EPS) -> torch.Tensor:
    """Scale of a Laplace latent from its raw parameter (MMVAE's ``laplace_with_softmax``).

    sigma = softmax(raw) * dim + eps over the last axis (eps = 1e-6 by default; the official code's 1e-20 with
    ``eps=OFFICIAL_SCALE_EPS``), so the scales of one vector sum to dim (1 + eps) and raw = 0 gives sigma = 1 + eps
    in every dimension."""
    # Eq. (scale): sigma = softmax(raw) * D + eps  (MMVAE's laplace_with_softmax; eps = 1e-6, official 1e-20)
    return F.softmax(raw, dim=-1) * raw.shape[-1] + eps


def laplace_log_prob(x: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor | float) -> torch.Tensor:
    """Elementwise log Laplace(x; loc, scale) = -|x - loc| / scale - log(2 scale) (no reduction)."""
    scale = torch.as_tensor(scale, dtype=x.dtype, device=x.device)
    return -(x - loc).abs() / scale - torch.log(2 * scale)


LATENTS = ("laplace", "normal")


def latent_scale(raw: torch.Tensor, latent: str = "laplace", eps: float = SCALE_EPS) -> torch.Tensor:
    """The scale of a latent density from its raw parameter: ``laplace`` -> softmax(raw) * D + eps (the official
    ``laplace_with_softmax``), ``normal`` -> softplus(raw) + eps (the official Normal variant; raw = 0 gives
    log 2 = 0.693). ``eps``: 1e-6 by default, the official ``Constants.eta`` = 1e-20 with ``OFFICIAL_SCALE_EPS``."""
    if latent == "laplace":
        return softmax_scale(raw, eps)
    # Eq. (scale, Normal variant): sigma = softplus(raw) + eps
    return F.softplus(raw) + eps


def normal_log_prob(x: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor | float) -> torch.Tensor:
    """Elementwise log N(x; loc, scale^2) (no reduction)."""
    scale = torch.as_tensor(scale, dtype=x.dtype, device=x.device)
    return -0.5 * ((x - loc) / scale) ** 2 - torch.log(scale) - 0.5 * math.log(2 * math.pi)


def latent_log_prob(
    x: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor | float, latent: str = "laplace"
) -> torch.Tensor:
    """Elementwise log density of the latent family (``laplace`` or ``normal``)."""
    if latent == "laplace":
        return laplace_log_prob(x, loc, scale)
    return normal_log_prob(x, loc, scale)


def log_moe_density(
    z: torch.Tensor,
    locs: torch.Tensor,
    scales: torch.Tensor,
    mask: torch.Tensor | None = None,
    latent: str = "laplace",
) -> torch.Tensor:
    """log q(z|X) of the mixture of experts over the available modalities.

    z: (..., B, d) samples; locs, scales: (M, B, d) unimodal posteriors; mask: (B, M) bool, True = available.
    Returns (..., B). A masked modality contributes -inf; the mean is over the available modalities."""
    lp = latent_log_prob(z.unsqueeze(-3), locs, scales, latent).sum(-1)  # (..., M, B)
    if mask is None:
        n = torch.full(lp.shape[-1:], locs.shape[0], dtype=z.dtype, device=z.device)
    else:
        m = mask.T.to(torch.bool)  # (M, B)
        lp = lp.masked_fill(~m, float("-inf"))
        n = m.sum(0).to(z.dtype)
    # Eq. (MoE): q(z|X) = (1/|A|) sum_{m in A} q(z|x_m)  ->  log q = logsumexp_m log q(z|x_m) - log |A|
    return torch.logsumexp(lp, dim=-2) - torch.log(n)


def cluster_log_joint(
    z: torch.Tensor,
    log_pi: torch.Tensor,
    mu: torch.Tensor,
    scale: torch.Tensor | float = 1.0,
    latent: str = "laplace",
) -> tuple[torch.Tensor, torch.Tensor]:
    """log pi_c and log p(z|c) for every cluster. z: (..., d); log_pi: (K,); mu: (K, d).

    Returns (log_pi broadcast to (..., K), log p(z|c) of shape (..., K)). An inactive cluster has log_pi = -inf."""
    lpzc = latent_log_prob(z.unsqueeze(-2), mu, scale, latent).sum(-1)  # (..., K)
    return log_pi.expand_as(lpzc), lpzc


def cluster_posterior(
    z: torch.Tensor,
    log_pi: torch.Tensor,
    mu: torch.Tensor,
    scale: torch.Tensor | float = 1.0,
    latent: str = "laplace",
) -> torch.Tensor:
    """The closed-form cluster posterior q(c|z) = p(c|z) (VaDE / MFCVAE style), shape (..., K).

    An inactive cluster (log_pi = -inf) gets exactly 0."""
    lpc, lpzc = cluster_log_joint(z, log_pi, mu, scale, latent)
    # Eq. (q(c|z)): q(c|z) = pi_c p(z|c) / sum_c' pi_c' p(z|c')
    return torch.softmax(lpc + lpzc, dim=-1)


def normalised_entropy(q: torch.Tensor, n_active: int | torch.Tensor) -> torch.Tensor:
    """H(q) / log(n_active) over the last axis (0 log 0 = 0)."""
    n = torch.as_tensor(n_active, dtype=q.dtype, device=q.device)
    if (n < 2).any():
        raise InputError(f"the normalised entropy needs at least 2 active clusters, got {n_active}")
    h = -(torch.where(q > 0, q * torch.log(q.clamp_min(Q_EPS)), torch.zeros_like(q))).sum(-1)
    return h / torch.log(n)


def cluster_marginal_log_likelihood(
    z: torch.Tensor,
    log_pi: torch.Tensor,
    mu: torch.Tensor,
    scale: torch.Tensor | float = 1.0,
    latent: str = "laplace",
) -> torch.Tensor:
    """sum_c q(c|z) (log p(z|c) + log pi_c - log q(c|z)) / d = log sum_c pi_c p(z|c) / d, shape (...)."""
    lpc, lpzc = cluster_log_joint(z, log_pi, mu, scale, latent)
    return torch.logsumexp(lpc + lpzc, dim=-1) / z.shape[-1]


def log_mean_exp(x: torch.Tensor, dim: int) -> torch.Tensor:
    """log (1/n) sum exp(x) along ``dim``."""
    return torch.logsumexp(x, dim=dim) - math.log(x.shape[dim])


def official_selection_terms(
    z: torch.Tensor,
    prior_logits: torch.Tensor,
    active: torch.Tensor,
    mu: torch.Tensor,
    scale: torch.Tensor | float = 1.0,
    latent: str = "laplace",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The two terms of the official cluster-selection score (``prune_polyMNIST.py``, lines 133-148 of the
    released code), per sample z (..., d): returns (normalised entropy, normalised log-likelihood, q) with

        pi  = softmax(l) with the pruned clusters' prior set to 0,  log pi_c -> log(pi_c + 1e-20)
        q   = softmax_c(log pi_c + log p(z|c)) + 1e-20            (every one of the K_max entries > 0)
        ent = H(q / sum q) / log K_max                             (the count of non-zero q is always K_max)
        ll  = sum_c q_c (log p(z|c) + log pi_c - log q_c) / d

    ``active`` (K,) bool marks the clusters not yet pruned; q covers all K_max clusters."""
    pi = torch.softmax(prior_logits.masked_fill(~active, float("-inf")), dim=-1)
    log_pi = torch.log(pi + Q_EPS)
    lpc, lpzc = cluster_log_joint(z, log_pi, mu, scale, latent)
    # Eq. (q(c|z), selection): q = softmax(log(pi + 1e-20) + log p(z|c)) + 1e-20
    q = torch.softmax(lpc + lpzc, dim=-1) + Q_EPS
    # Eq. (h(K), likelihood term): sum_c q (log p(z|c) + log pi_c - log q) / d
    ll = (q * (lpzc + lpc - torch.log(q))).sum(-1) / z.shape[-1]
    p = q / q.sum(-1, keepdim=True)
    # Eq. (h(K), entropy term): H(q) / log K_max (every entry of q is >= 1e-20, so all K_max count)
    ent = -(p * torch.log(p)).sum(-1) / math.log(q.shape[-1])
    return ent, ll, q
