"""The explicit augmentation the benchmark compares against: the implicit loss upper-bounds its expectation."""

import torch

from iclr24.sfda2.bench import explicit_augmentation_loss
from iclr24.sfda2.losses import implicit_feature_augmentation_loss


def test_implicit_loss_upper_bounds_explicit_monte_carlo():
    g = torch.Generator().manual_seed(0)
    C, A = 3, 2
    z, w, b = torch.randn(4, A, generator=g), torch.randn(C, A, generator=g), torch.zeros(C)
    M = torch.randn(C, A, A, generator=g)
    cov = M @ M.transpose(1, 2) + 0.5 * torch.eye(A)
    implicit = implicit_feature_augmentation_loss(z @ w.T + b, w, cov, 1.0).mean()
    explicit = explicit_augmentation_loss(z, w, b, cov, 1.0, M=20000, generator=g)
    no_aug = implicit_feature_augmentation_loss(z @ w.T + b, w, torch.zeros_like(cov), 1.0).mean()
    assert no_aug < explicit < implicit  # Jensen: E[CE(l + W eps)] <= CE(l + sigma^2 / 2)
