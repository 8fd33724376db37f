"""The losses of episodic test-time adaptation: RLCF's policy gradient and the baselines' objectives.

Notation (Zhao et al., ICLR 2024, Sec. 3): pi_theta(y | x) = softmax(logits) the policy VLM, x_1..x_N the views of one
test image, H(p) = -sum_c p_c log p_c, K the number of sampled classes per view, r~ the centred CLIP rewards.
    Eq. (1): max_theta E_{y ~ pi_theta(.|x)} r(x, y)
    Eq. (2): grad = E_{y ~ pi}[(r(x, y) - b) grad log pi_theta(y | x)]                      (REINFORCE with baseline)
    Eq. (3): L(theta) = mean_{v, k} r~_{v,k} * CE(logits_v, y_{v,k}),  y_{v,1..K} = top-K(logits_v)
    Confidence selection (TPT, Sec. 3.3): keep the floor(rho * N) views of lowest H(pi(.|x_v)).
    TPT: L = H( mean_v pi(.|x_v) ) over the selected views.
    KD:  L = -mean_v sum_c p^R_c(x_v) log pi_c(x_v)    (the official ``kd_distill_loss_v2``, T = 1)
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_tensor

__all__ = [
    "entropy",
    "select_confident",
    "sample_top_k",
    "policy_gradient_loss",
    "average_entropy",
    "distillation_loss",
    "n_selected",
]


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """H(softmax(logits)) per row, ``(N,)``."""
    return -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1)


def n_selected(n_views: int, selection_p: float) -> int:
    """floor(rho * N) views, as the official ``int(N * top)``; a fraction that keeps no view is a ``ValueError``."""
    if not (isinstance(selection_p, int | float) and 0.0 < selection_p <= 1.0):
        raise InputError(f"selection_p must be a fraction in (0, 1], got {selection_p!r}")
    k = int(n_views * selection_p)
    if k < 1:
        raise InputError(
            f"selection_p={selection_p} of {n_views} views selects no view (floor({n_views} * {selection_p}) = 0); "
            f"use at least {math.ceil(1 / selection_p)} views or a larger fraction"
        )
    return k


def select_confident(logits: torch.Tensor, selection_p: float = 0.1) -> torch.Tensor:
    """Indices of the floor(rho * N) lowest-entropy views, most confident first (64 views, rho = 0.1 -> 6)."""
    check_tensor(logits, "logits", ndim=2, kind="float", finite=True)
    if logits.ndim != 2 or logits.shape[0] == 0:
        raise InputError(f"expected logits (N views, C classes), got {tuple(logits.shape)}")
    k = n_selected(logits.shape[0], selection_p)
    # confidence selection: the views of lowest H(pi(.|x_v))
    return torch.argsort(entropy(logits), descending=False)[:k]


def sample_top_k(logits: torch.Tensor, k: int = 3) -> torch.Tensor:
    """The official "sampling": the K most probable classes of each view, flattened row-major to ``(B*K,)`` so that
    row ``i`` belongs to view ``i // K`` (the order of ``repeat_interleave``)."""
    check_tensor(logits, "logits", ndim=2, kind="float")
    if logits.ndim != 2:
        raise InputError(f"expected logits (B, C), got {tuple(logits.shape)}")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= logits.shape[1]:
        raise InputError(f"sample_k must be an int in [1, C={logits.shape[1]}], got {k!r}")
    return torch.topk(logits, k, dim=-1).indices.flatten()


def policy_gradient_loss(logits: torch.Tensor, sampled: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
    """RLCF's loss: mean of r~ * CE over the B*K (view, sampled class) pairs; ``rewards`` are constants.

    ``logits`` ``(B, C)``, ``sampled`` and ``rewards`` ``(B*K,)`` ordered as :func:`sample_top_k`. With one view,
    logits [0, 0], y = 0 and r~ = 1 the gradient w.r.t. the logits is [-0.5, 0.5] (REINFORCE: ascend r~ log pi)."""
    check_tensor(logits, "logits", ndim=2, kind="float", finite=True)
    check_tensor(sampled, "sampled", ndim=1, kind="int")
    check_tensor(rewards, "rewards", ndim=1, kind="float", finite=True)
    if int(sampled.min()) < 0 or int(sampled.max()) >= logits.shape[1]:
        raise InputError(f"sampled classes must lie in [0, {logits.shape[1]}), got values outside")
    b = logits.shape[0]
    if sampled.ndim != 1 or sampled.shape != rewards.shape or b == 0 or sampled.shape[0] % b:
        raise InputError(
            f"expected (B*K,) sampled classes and rewards for B={b} views, got {tuple(sampled.shape)} and "
            f"{tuple(rewards.shape)}"
        )
    k = sampled.shape[0] // b
    rep = torch.repeat_interleave(logits, k, dim=0)
    # Eq. (3): L = mean_{v,k} r~_{v,k} * CE(logits_v, y_{v,k})  (CE = -log pi; Eq. (2) with b = mean reward)
    return torch.mean(rewards.detach() * F.cross_entropy(rep, sampled, reduction="none"))


def average_entropy(logits: torch.Tensor) -> torch.Tensor:
    """TPT's loss: the entropy of the view-averaged probability, computed in log space as the official code.
    ``logits``: ``(views, classes)``, finite (NaN/inf logits are an InputError, not a NaN loss)."""
    check_tensor(logits, "logits", ndim=2, kind="float", finite=True)
    logp = logits.log_softmax(-1)
    avg = torch.logsumexp(logp, dim=0) - math.log(logp.shape[0])
    avg = torch.clamp(avg, min=torch.finfo(avg.dtype).min)
    # TPT: L = H(mean_v pi(.|x_v))
    return -(avg * avg.exp()).sum(-1)


def distillation_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
    """KD from the reward model: cross-entropy of the student to the teacher's class distribution (the gradient-
    relevant part of KL(p^R || pi)), averaged over views."""
    check_tensor(student_logits, "student_logits", ndim=2, kind="float", finite=True)
    check_tensor(teacher_logits, "teacher_logits", ndim=2, kind="float", finite=True)
    if student_logits.shape != teacher_logits.shape:
        raise InputError(
            f"student and teacher logits differ in shape: {tuple(student_logits.shape)} vs {tuple(teacher_logits.shape)}"
        )
    # KD: L = -mean_v sum_c p^R_c log pi_c
    return -(teacher_logits.detach().softmax(-1) * student_logits.log_softmax(-1)).sum(-1).mean()
