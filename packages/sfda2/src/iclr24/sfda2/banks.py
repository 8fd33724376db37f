"""The augmentation graph's memory: feature/score/pseudo-label banks over the whole target set, the K-nearest-
neighbour lookup, and :class:`SFDA2Loss`, which holds the banks and the running class covariances and returns
every term of the objective separately.

The graph (the paper's Sec. 3, augmentation graph in feature space): target sample ``n`` is connected to its
``K`` nearest neighbours in the bank of normalised bottleneck features (cosine similarity), never to itself.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_tensor

from .losses import alpha_schedule
from .losses import class_mean_scores
from .losses import feature_disentanglement_loss
from .losses import implicit_feature_augmentation_loss
from .losses import lambda_schedule
from .losses import snc_negative_loss
from .losses import snc_positive_loss
from .losses import update_class_covariance

__all__ = ["NeighbourBanks", "SFDA2Loss", "nearest_neighbours"]


def nearest_neighbours(
    query: torch.Tensor, bank: torch.Tensor, self_idx: torch.Tensor, k: int
) -> torch.Tensor:
    """Indices [B, K] of the ``k`` rows of ``bank`` [N, A] most cosine-similar to ``query`` [B, A] (both already
    L2-normalised), excluding each query's own row ``self_idx`` [B]. The official code takes ``topk(K + 1)`` and
    drops the first column, which keeps ``self`` when another row ties with it; masking it out cannot."""
    if k < 1 or k > bank.shape[0] - 1:
        raise InputError(
            f"K must be in [1, N - 1] = [1, {bank.shape[0] - 1}] for a bank of {bank.shape[0]} rows, got {k}"
        )
    sim = query @ bank.T  # [B, N]
    sim[torch.arange(len(self_idx), device=sim.device), self_idx] = -math.inf
    return torch.topk(sim, k=k, dim=1, largest=True).indices


class NeighbourBanks:
    """``fea_bank`` [N, A] (normalised features), ``score_bank`` [N, C] (softmax) and ``pseudo_bank`` [N]
    (argmax) over all ``N`` target samples; widths come from the data (the official code hard-codes 256 and 12)."""

    def __init__(self, features: torch.Tensor, scores: torch.Tensor):
        if features.ndim != 2 or scores.ndim != 2 or len(features) != len(scores):
            raise InputError(
                f"expected features [N, A] and scores [N, C] with the same N, got {tuple(features.shape)} and "
                f"{tuple(scores.shape)}"
            )
        if not (torch.isfinite(features).all() and torch.isfinite(scores).all()):
            raise InputError(
                "the target features or scores contain NaN/inf; check the source model and the inputs"
            )
        self.fea_bank = F.normalize(features.detach(), dim=1).clone()
        self.score_bank = scores.detach().clone()
        self.pseudo_bank = scores.argmax(dim=1)

    @property
    def num_samples(self) -> int:
        return self.fea_bank.shape[0]

    @torch.no_grad()
    def update(self, idx: torch.Tensor, z: torch.Tensor, p: torch.Tensor) -> None:
        """Overwrite the rows ``idx`` with this batch's normalised features, scores and argmax."""
        self.fea_bank[idx] = F.normalize(z.detach(), dim=1)
        self.score_bank[idx] = p.detach()
        self.pseudo_bank[idx] = p.detach().argmax(dim=1)

    @torch.no_grad()
    def neighbour_scores(
        self, idx: torch.Tensor, z: torch.Tensor, k: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(idx_near [B, K], score_near [B, K, C])`` of the batch rows ``idx`` with features ``z``."""
        near = nearest_neighbours(F.normalize(z.detach(), dim=1), self.fea_bank, idx, k)
        return near, self.score_bank[near]


class SFDA2Loss:
    """The SF(DA)^2 objective with its state (banks, class means/covariances, counts).

    ``forward(z, logits, idx, it, max_iter, w)`` updates the banks and the covariances with the batch and returns a
    dict of the unweighted terms ``pos``, ``neg``, ``ifa``, ``fd``, the weights ``alpha_t`` and ``lambda_t`` of this
    iteration, and ``total = pos + alpha_t neg + alpha_1 ifa + alpha_2 fd``.
    ``use_ifa=False, use_fd=False`` gives AaD (SNC only)."""

    def __init__(
        self,
        num_classes: int,
        feat_dim: int,
        *,
        K: int = 5,
        alpha_1: float = 1e-4,
        alpha_2: float = 10.0,
        lambda_0: float = 5.0,
        alpha: float = 1.0,
        beta: float = 5.0,
        use_ifa: bool = True,
        use_fd: bool = True,
    ):
        for name, v in (("num_classes", num_classes), ("feat_dim", feat_dim), ("K", K)):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 2**20:
                raise InputError(f"{name} must be an int >= 1 (at most 2**20), got {v!r}")
        if num_classes < 2:
            raise InputError(f"num_classes must be >= 2, got {num_classes}")
        for name, v in (
            ("alpha_1", alpha_1),
            ("alpha_2", alpha_2),
            ("lambda_0", lambda_0),
            ("alpha", alpha),
            ("beta", beta),
        ):
            if not math.isfinite(v) or v < 0:
                raise InputError(f"{name} must be a finite number >= 0, got {v!r}")
        self.num_classes, self.feat_dim, self.K = num_classes, feat_dim, K
        self.alpha_1, self.alpha_2, self.lambda_0, self.alpha, self.beta = (
            alpha_1,
            alpha_2,
            lambda_0,
            alpha,
            beta,
        )
        self.use_ifa, self.use_fd = use_ifa, use_fd
        self.banks: NeighbourBanks | None = None
        self.amount = torch.zeros(num_classes)
        self.mean = torch.zeros(num_classes, feat_dim)
        self.cov = torch.zeros(num_classes, feat_dim, feat_dim)

    def init_banks(self, features: torch.Tensor, logits: torch.Tensor) -> None:
        """Fill the banks from the eval-mode features [N, A] and logits [N, C] of all target samples."""
        check_tensor(features, "bank features", kind="float", finite=True)
        check_tensor(logits, "bank logits", kind="float", finite=True)
        if features.ndim != 2 or features.shape[1] != self.feat_dim:
            raise InputError(f"expected bank features [N, {self.feat_dim}], got {tuple(features.shape)}")
        if logits.ndim != 2 or logits.shape[1] != self.num_classes:
            raise InputError(
                f"the classifier gives {logits.shape[-1]} classes but the config says num_classes={self.num_classes}"
            )
        if len(features) <= self.K:
            raise InputError(f"K={self.K} neighbours need more than K target samples; got {len(features)}")
        self.banks = NeighbourBanks(features, torch.softmax(logits, dim=1))
        dev, dt = features.device, features.dtype
        self.amount = self.amount.to(dev, dt)
        self.mean = self.mean.to(dev, dt)
        self.cov = self.cov.to(dev, dt)

    def forward(
        self,
        z: torch.Tensor,
        logits: torch.Tensor,
        idx: torch.Tensor,
        it: int,
        max_iter: int,
        w: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """One iteration's terms. ``z`` [B, A] bottleneck features and ``logits`` [B, C] (train mode, with grad),
        ``idx`` [B] the batch's bank rows, ``it`` the 0-based iteration of ``max_iter``, ``w`` [C, A] the
        classifier's effective weights (needed for IFA)."""
        if self.banks is None:
            raise InputError("call init_banks(features, logits) over the whole target set before forward()")
        if z.ndim != 2 or z.shape[1] != self.feat_dim or logits.shape != (z.shape[0], self.num_classes):
            raise InputError(
                f"expected z [B, {self.feat_dim}] and logits [B, {self.num_classes}], got {tuple(z.shape)} and "
                f"{tuple(logits.shape)}"
            )
        if not torch.isfinite(z).all():
            raise InputError("non-finite bottleneck features (NaN/inf) in this batch")
        p = torch.softmax(logits, dim=1)
        pseudo = p.argmax(dim=1).detach()
        self.banks.update(idx, z, p)
        _, score_near = self.banks.neighbour_scores(idx, z, self.K)
        alpha_t = alpha_schedule(it, max_iter, self.alpha, self.beta)
        # Eq. (total), SNC part: L_pos + alpha_t L_neg
        pos = snc_positive_loss(p, score_near)
        neg = snc_negative_loss(p)
        total = pos + alpha_t * neg
        zero = z.new_zeros(())
        ifa, fd = zero, zero
        lam = lambda_schedule(it + 1, max_iter, self.lambda_0)  # the official ratio uses the incremented t
        if self.use_ifa or self.use_fd:
            amount, mean, cov = update_class_covariance(z, pseudo, self.amount, self.mean, self.cov)
            self.amount, self.mean, self.cov = amount, mean, cov.detach()
            if self.use_ifa:
                if w is None or w.shape != (self.num_classes, self.feat_dim):
                    raise InputError(
                        f"IFA needs the classifier weights w [{self.num_classes}, {self.feat_dim}], got "
                        f"{None if w is None else tuple(w.shape)}"
                    )
                ifa = implicit_feature_augmentation_loss(logits, w, cov, lam, pseudo).mean()
                # Eq. (total): + alpha_1 L_IFA
                total = total + self.alpha_1 * ifa
            if self.use_fd:
                m = class_mean_scores(self.banks.score_bank, self.banks.pseudo_bank, self.num_classes)
                fd = feature_disentanglement_loss(cov, m)
                # Eq. (total): + alpha_2 L_FD
                total = total + self.alpha_2 * fd
        return {
            "pos": pos,
            "neg": neg,
            "ifa": ifa,
            "fd": fd,
            "alpha_t": z.new_tensor(alpha_t),
            "lambda_t": z.new_tensor(lam),
            "total": total,
        }

    __call__ = forward
