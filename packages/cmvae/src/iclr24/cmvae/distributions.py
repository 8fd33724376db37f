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

__all__ = [
    "SCALE_EPS",
    "softmax_scale",
    "laplace_log_prob",
    "log_moe_density",
    "cluster_log_joint",
    "cluster_posterior",
    "normalised_entropy",
    "cluster_marginal_log_likelihood",
]

SCALE_EPS = 1e-6
Q_EPS = 1e-20


def softmax_scale(raw: torch.Tensor) -> torch.Tensor:
    """Scale of a Laplace latent from its raw parameter (MMVAE's ``laplace_with_softmax``).

    sigma = softmax(raw) * dim + 1e-6 over the last axis, so the scales of one vector sum to dim (1 + 1e-6) and
    raw = 0 gives sigma = 1 + 1e-6 in every dimension."""
    # Eq. (scale): sigma = softmax(raw) * D + 1e-6  (MMVAE's laplace_with_softmax)
    return F.softmax(raw, dim=-1) * raw.shape[-1] + SCALE_EPS


def laplace_log_prob(x: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor | float) -> torch.Tensor:
    """Elementwise log Laplace(x; loc, scale) = -|x - loc| / scale - log(2 scale) (no reduction)."""
    scale = torch.as_tensor(scale, dtype=x.dtype, device=x.device)
    return -(x - loc).abs() / scale - torch.log(2 * scale)


def log_moe_density(
    z: torch.Tensor, locs: torch.Tensor, scales: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """log q(z|X) of the mixture of experts over the available modalities.

    z: (..., B, d) samples; locs, scales: (M, B, d) unimodal posteriors; mask: (B, M) bool, True = available.
    Returns (..., B). A masked modality contributes -inf; the mean is over the available modalities."""
    lp = laplace_log_prob(z.unsqueeze(-3), locs, scales).sum(-1)  # (..., M, B)
    if mask is None:
        n = torch.full(lp.shape[-1:], locs.shape[0], dtype=z.dtype, device=z.device)
    else:
        m = mask.T.to(torch.bool)  # (M, B)
        lp = lp.masked_fill(~m, float("-inf"))
        n = m.sum(0).to(z.dtype)
    # Eq. (MoE): q(z|X) = (1/|A|) sum_{m in A} q(z|x_m)  ->  log q = logsumexp_m log q(z|x_m) - log |A|
    return torch.logsumexp(lp, dim=-2) - torch.log(n)


def cluster_log_joint(
    z: torch.Tensor, log_pi: torch.Tensor, mu: torch.Tensor, scale: torch.Tensor | float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """log pi_c and log p(z|c) for every cluster. z: (..., d); log_pi: (K,); mu: (K, d).

    Returns (log_pi broadcast to (..., K), log p(z|c) of shape (..., K)). An inactive cluster has log_pi = -inf."""
    lpzc = laplace_log_prob(z.unsqueeze(-2), mu, scale).sum(-1)  # (..., K)
    return log_pi.expand_as(lpzc), lpzc


def cluster_posterior(
    z: torch.Tensor, log_pi: torch.Tensor, mu: torch.Tensor, scale: torch.Tensor | float = 1.0
) -> torch.Tensor:
    """The closed-form cluster posterior q(c|z) = p(c|z) (VaDE / MFCVAE style), shape (..., K).

    An inactive cluster (log_pi = -inf) gets exactly 0."""
    lpc, lpzc = cluster_log_joint(z, log_pi, mu, scale)
    # Eq. (q(c|z)): q(c|z) = pi_c p(z|c) / sum_c' pi_c' p(z|c')
    return torch.softmax(lpc + lpzc, dim=-1)


def normalised_entropy(q: torch.Tensor, n_active: int | torch.Tensor) -> torch.Tensor:
    """H(q) / log(n_active) over the last axis (0 log 0 = 0)."""
    n = torch.as_tensor(n_active, dtype=q.dtype, device=q.device)
    if (n < 2).any():
        raise ValueError(f"the normalised entropy needs at least 2 active clusters, got {n_active}")
    h = -(torch.where(q > 0, q * torch.log(q.clamp_min(Q_EPS)), torch.zeros_like(q))).sum(-1)
    return h / torch.log(n)


def cluster_marginal_log_likelihood(
    z: torch.Tensor, log_pi: torch.Tensor, mu: torch.Tensor, scale: torch.Tensor | float = 1.0
) -> torch.Tensor:
    """sum_c q(c|z) (log p(z|c) + log pi_c - log q(c|z)) / d = log sum_c pi_c p(z|c) / d, shape (...)."""
    lpc, lpzc = cluster_log_joint(z, log_pi, mu, scale)
    return torch.logsumexp(lpc + lpzc, dim=-1) / z.shape[-1]


def log_mean_exp(x: torch.Tensor, dim: int) -> torch.Tensor:
    """log (1/n) sum exp(x) along ``dim``."""
    return torch.logsumexp(x, dim=dim) - math.log(x.shape[dim])
