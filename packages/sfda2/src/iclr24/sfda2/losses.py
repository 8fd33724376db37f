"""The SF(DA)^2 objective as small pure functions (Hwang et al., ICLR 2024, Sec. 3-4).

Notation (the paper's Sec. 3, Method; shapes in brackets): a batch of ``B`` target samples with bottleneck features
``z_n`` [B, A] (not normalised), logits ``l_n`` [B, C], predictions ``p_n = softmax(l_n)`` [B, C] and pseudo-labels
``y_n = argmax p_n``; ``S_nk`` [B, K, C] are the bank scores of the ``K`` nearest neighbours of ``z_n`` (cosine);
``w_c`` [C, A] the classifier's (effective) weight rows; ``Sigma_c`` [C, A, A] the running class-conditional
covariances of ``z``; ``m_c`` [C, C] the mean bank score of the samples pseudo-labelled ``c``; iteration ``t`` of ``T``.

    L_pos  = 1/B sum_n sum_k sum_c S_nkc (log S_nkc - p_nc)                         (Eq. SNC+)
    L_neg  = 1/B sum_n sum_{j != n} (p_n^T p_j)^2                                     (Eq. SNC-)
    alpha_t = alpha (1 + 10 t/T)^(-beta),   lambda_t = lambda_0 t/T                   (Eq. schedules)
    sigma^2_{n,c}(i) = lambda_t (w_c - w_i)^T Sigma_{y_n} (w_c - w_i)
    L_IFA  = 1/B sum_n sum_i 2 CE(l_n + sigma^2_{n,.}(i) / 2, i)                      (Eq. IFA)
    W_ab   = (m_a^T m_b) [a != b],   d_ab = 1 - cos(vec Sigma_a, vec Sigma_b)
    L_FD   = -1/2 sum_{a != b} W_ab d_ab                                              (Eq. FD)
    L      = L_pos + alpha_t L_neg + alpha_1 L_IFA + alpha_2 L_FD                     (Eq. total)

``L_pos`` is the official ``F.kl_div(p, S)`` with *probabilities* as its input: its gradient in ``p_n`` is
``-sum_k S_nk / B``, i.e. it maximises the neighbour affinity ``sum_k p_n^T S_nk`` of the spectral contrastive
loss. Equations are labelled by name (``grep "Eq. (IFA)"``). The covariances follow ISDA's online estimator (Wang et al. 2019), :func:`update_class_covariance`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from iclr24.paperkit.errors import InputError

__all__ = [
    "alpha_schedule",
    "lambda_schedule",
    "lr_decay",
    "snc_positive_loss",
    "snc_negative_loss",
    "update_class_covariance",
    "ifa_sigma2",
    "implicit_feature_augmentation_loss",
    "implicit_feature_augmentation_loss_loop",
    "class_mean_scores",
    "feature_disentanglement_loss",
    "information_maximization_loss",
]


def _check_t(t: float, T: float) -> None:
    if T <= 0:
        raise InputError(f"the total number of iterations T must be > 0, got {T}")
    if not 0 <= t <= T:
        raise InputError(f"the iteration t must lie in [0, T={T}], got {t}")


def alpha_schedule(t: float, T: float, alpha: float = 1.0, beta: float = 5.0) -> float:
    """Weight of the negative term at iteration ``t`` of ``T``: ``alpha (1 + 10 t/T)^(-beta)``."""
    _check_t(t, T)
    # Eq. (alpha_t): alpha_t = alpha * (1 + 10 t / T)^(-beta)
    return float(alpha * (1.0 + 10.0 * t / T) ** (-beta))


def lambda_schedule(t: float, T: float, lambda_0: float = 5.0) -> float:
    """Strength of the implicit augmentation at iteration ``t`` of ``T``: ``lambda_0 t / T``."""
    _check_t(t, T)
    # Eq. (lambda_t): lambda_t = lambda_0 * t / T
    return float(lambda_0 * t / T)


def lr_decay(t: float, T: float, gamma: float = 10.0, power: float = 0.75) -> float:
    """SHOT's learning-rate factor ``(1 + gamma t/T)^(-power)`` (the official ``lr_scheduler``)."""
    _check_t(t, T)
    return float((1.0 + gamma * t / T) ** (-power))


def snc_positive_loss(p: torch.Tensor, score_near: torch.Tensor) -> torch.Tensor:
    """Positive (neighbour) term of spectral neighbourhood clustering.

    ``p`` [B, C] predictions, ``score_near`` [B, K, C] the neighbours' bank scores (no gradient).
    Returns ``mean_n sum_k sum_c S (log S - p)``, whose gradient in ``p_n`` is ``-sum_k S_nk / B``.
    """
    if (
        p.ndim != 2
        or score_near.ndim != 3
        or score_near.shape[0] != p.shape[0]
        or score_near.shape[2] != p.shape[1]
    ):
        raise InputError(
            f"expected p [B, C] and score_near [B, K, C], got {tuple(p.shape)} and {tuple(score_near.shape)}"
        )
    s = score_near.detach()
    # Eq. (SNC+): L_pos = 1/B sum_n sum_k sum_c S_nkc (log S_nkc - p_nc)
    return (torch.xlogy(s, s) - s * p.unsqueeze(1)).sum(dim=(1, 2)).mean()


def snc_negative_loss(p: torch.Tensor) -> torch.Tensor:
    """Negative (batch) term of spectral neighbourhood clustering: ``mean_n sum_{j != n} (p_n^T p_j)^2``."""
    if p.ndim != 2:
        raise InputError(f"expected predictions p of shape [B, C], got {tuple(p.shape)}")
    gram = p @ p.T
    off_diag = 1.0 - torch.eye(p.shape[0], dtype=p.dtype, device=p.device)
    # Eq. (SNC-): L_neg = 1/B sum_n sum_{j != n} (p_n^T p_j)^2
    return ((gram**2) * off_diag).sum(dim=1).mean()


def update_class_covariance(
    z: torch.Tensor,
    pseudo: torch.Tensor,
    amount: torch.Tensor,
    mean: torch.Tensor,
    cov: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """ISDA's online class-conditional mean/covariance estimator (the official ``update_CV``).

    ``z`` [B, A] raw features, ``pseudo`` [B] labels in ``[0, C)``, ``amount`` [C] samples seen so far,
    ``mean`` [C, A], ``cov`` [C, A, A]. Returns the new ``(amount, mean, cov)``. The old ``cov`` and the new ``mean``
    are detached; the new ``cov`` keeps the gradient through this batch's ``z`` (so IFA and FD reach the features).
    A class absent from the batch keeps its statistics (``lambda_c = 0``; ``0/0`` is taken as 0).
    """
    if z.ndim != 2:
        raise InputError(f"expected features z of shape [B, A], got {tuple(z.shape)}")
    C, A = mean.shape
    if z.shape[1] != A or cov.shape != (C, A, A) or amount.shape != (C,):
        raise InputError(
            f"feature width {z.shape[1]} does not compose with mean {tuple(mean.shape)}, "
            f"cov {tuple(cov.shape)}, amount {tuple(amount.shape)}"
        )
    onehot = F.one_hot(pseudo.long(), C).to(z.dtype)  # [B, C]
    n_c = onehot.sum(0)  # [C]
    safe_n = n_c.clamp_min(1.0)
    mu_b = (onehot.T @ z) / safe_n[:, None]  # [C, A]
    y = pseudo.long()
    centred = z - mu_b[y]  # [B, A]: each sample minus its own class's batch mean
    outer = centred.unsqueeze(2) * centred.unsqueeze(1)  # [B, A, A]
    # biased batch covariance, summed per class: O(B A^2) instead of the masked O(B C A^2)
    sigma_b = z.new_zeros(C, A, A).index_add(0, y, outer) / safe_n[:, None, None]
    denom = n_c + amount
    lam = torch.where(denom > 0, n_c / denom.clamp_min(1e-30), torch.zeros_like(denom))  # lambda_c, 0/0 -> 0
    diff = mean - mu_b  # [C, A]
    lam3 = lam[:, None, None]
    # Eq. (ISDA-cov): Sigma_c <- (1 - l) Sigma_c^old + l Sigma_c^b + l (1 - l) (mu_c^old - mu_c^b)(mu_c^old - mu_c^b)^T
    new_cov = (
        cov.detach() * (1 - lam3) + sigma_b * lam3 + lam3 * (1 - lam3) * diff.unsqueeze(2) * diff.unsqueeze(1)
    )
    # Eq. (ISDA-mean): mu_c <- (1 - l) mu_c + l mu_c^b (detached)
    new_mean = (mean * (1 - lam[:, None]) + mu_b * lam[:, None]).detach()
    return amount + n_c.detach(), new_mean, new_cov


def ifa_sigma2(w: torch.Tensor, cov: torch.Tensor, pseudo: torch.Tensor, lam: float) -> torch.Tensor:
    """``sigma2[n, i, c] = lam (w_c - w_i)^T Sigma_{y_n} (w_c - w_i)`` [B, C, C], vectorised through
    ``D = W Sigma_y W^T``: ``sigma2[n, i, c] = lam (D_cc - D_ci - D_ic + D_ii)``."""
    D = torch.einsum("ia,kab,jb->kij", w, cov, w)  # [C, C, C], one C x C matrix per class covariance
    Dn = D[pseudo.long()]  # [B, C, C]
    diag = torch.diagonal(Dn, dim1=1, dim2=2)  # [B, C]
    # Eq. (IFA-sigma): sigma^2_{n,c}(i) = lambda_t (w_c - w_i)^T Sigma_{y_n} (w_c - w_i) = lambda_t (D_cc - D_ci - D_ic + D_ii)
    # (both cross terms, not 2 D_ic: equal for a symmetric Sigma, and then the gradient in Sigma matches the loop's)
    return lam * (diag.unsqueeze(1) - Dn - Dn.transpose(1, 2) + diag.unsqueeze(2))


def implicit_feature_augmentation_loss(
    logits: torch.Tensor, w: torch.Tensor, cov: torch.Tensor, lam: float, pseudo: torch.Tensor | None = None
) -> torch.Tensor:
    """Per-sample IFA loss [B]: ``sum_i 2 CE(l_n + sigma^2_{n,.}(i) / 2, i)`` (take ``.mean()`` for ``L_IFA``).

    ``logits`` [B, C], ``w`` [C, A] classifier weights, ``cov`` [C, A, A], ``lam`` = lambda_t, ``pseudo`` [B]
    (default ``argmax logits``). Every class is a target (weight 2, from the spectral loss), none weighted by p.
    """
    if (
        logits.ndim != 2
        or w.ndim != 2
        or w.shape[0] != logits.shape[1]
        or cov.shape != (w.shape[0], w.shape[1], w.shape[1])
    ):
        raise InputError(
            f"expected logits [B, C], w [C, A], cov [C, A, A], got {tuple(logits.shape)}, {tuple(w.shape)}, "
            f"{tuple(cov.shape)}"
        )
    if pseudo is None:
        pseudo = logits.argmax(dim=1).detach()
    sigma2 = ifa_sigma2(w, cov, pseudo, lam)  # [B, i, c]
    aug = logits.unsqueeze(1) + 0.5 * sigma2  # [B, i, c]: the augmented logits for target i
    # Eq. (IFA): CE(l + sigma^2(i)/2, i) = logsumexp_c(l_c + sigma^2_c(i)/2) - l_i   (sigma^2_i(i) = 0)
    ce = torch.logsumexp(aug, dim=2) - torch.diagonal(aug, dim1=1, dim2=2)  # [B, C]
    # Eq. (IFA): L_IFA(n) = sum_i 2 CE_i(n)
    return 2.0 * ce.sum(dim=1)


def implicit_feature_augmentation_loss_loop(
    logits: torch.Tensor, w: torch.Tensor, cov: torch.Tensor, lam: float, pseudo: torch.Tensor | None = None
) -> torch.Tensor:
    """Reference form of :func:`implicit_feature_augmentation_loss`: one pass per target class ``i`` with the
    ``B x C x A`` weight differences, as the official ``IFA`` does. Used to test the vectorised form."""
    B, C = logits.shape
    if pseudo is None:
        pseudo = logits.argmax(dim=1).detach()
    cov_n = cov[pseudo.long()]  # [B, A, A]
    losses = []
    for i in range(C):
        dw = (w - w[i]).unsqueeze(0).expand(B, C, w.shape[1])  # [B, C, A]: w_c - w_i
        sigma2 = lam * torch.einsum("nca,nab,ncb->nc", dw, cov_n, dw)
        target = torch.full((B,), i, dtype=torch.long, device=logits.device)
        losses.append(F.cross_entropy(logits + 0.5 * sigma2, target, reduction="none"))
    return 2.0 * torch.stack(losses, dim=1).sum(dim=1)


def class_mean_scores(score_bank: torch.Tensor, pseudo_bank: torch.Tensor, num_classes: int) -> torch.Tensor:
    """``m_c`` [C, C]: the mean bank score of the samples pseudo-labelled ``c``; zeros for an empty class (the
    official code takes a mean over an empty set there, giving NaN)."""
    onehot = F.one_hot(pseudo_bank.long(), num_classes).to(score_bank.dtype)  # [N, C]
    counts = onehot.sum(0)
    sums = onehot.T @ score_bank  # [C, C]
    return torch.where(counts[:, None] > 0, sums / counts.clamp_min(1.0)[:, None], torch.zeros_like(sums))


def feature_disentanglement_loss(
    cov: torch.Tensor, mean_scores: torch.Tensor, eps: float = 1e-12
) -> torch.Tensor:
    """``L_FD = -1/2 sum_{a != b} W_ab (1 - cos(vec Sigma_a, vec Sigma_b))`` with ``W = (M M^T) (1 - I)`` detached.

    ``cov`` [C, A, A], ``mean_scores`` [C, C] (:func:`class_mean_scores`). Minimising it pushes apart the covariance
    directions of classes the model confuses (large ``m_a^T m_b``)."""
    C = cov.shape[0]
    if cov.ndim != 3 or mean_scores.shape != (C, C):
        raise InputError(
            f"expected cov [C, A, A] and mean_scores [C, C], got {tuple(cov.shape)}, {tuple(mean_scores.shape)}"
        )
    eye = torch.eye(C, dtype=cov.dtype, device=cov.device)
    # Eq. (FD): W_ab = m_a^T m_b for a != b (no gradient)
    weight = ((mean_scores @ mean_scores.T) * (1.0 - eye)).detach()
    v = cov.reshape(C, -1)
    norms = v.norm(dim=1)
    # Eq. (FD): d_ab = 1 - <vec Sigma_a, vec Sigma_b> / (|vec Sigma_a| |vec Sigma_b| + eps)
    dist = 1.0 - (v @ v.T) / (norms[:, None] * norms[None, :] + eps)
    # Eq. (FD): L_FD = -1/2 sum_{a != b} W_ab d_ab
    return -(weight * dist).sum() / 2.0


def information_maximization_loss(p: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """SHOT-IM (Liang et al. 2020): ``mean_n H(p_n) - H(mean_n p_n)`` (entropy minimisation + diversity)."""
    ent = -(p * torch.log(p + eps)).sum(dim=1).mean()
    pm = p.mean(dim=0)
    div = -(pm * torch.log(pm + eps)).sum()
    return ent - div
