"""A minimal Adam (Kingma & Ba), the update of ``torch.optim.Adam`` with weight decay 0 and amsgrad off.

Written out because constructing any ``torch.optim`` optimizer imports ``torch._dynamo`` (seconds of start-up,
tens of seconds on a loaded machine), which would dominate the smoke runs and tests of this package."""

from __future__ import annotations

import torch

__all__ = ["Adam"]


class Adam:
    def __init__(
        self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
    ):
        self.params = [p for p in params if p.requires_grad]
        self.lr, (self.b1, self.b2), self.eps = lr, betas, eps
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        c1, c2 = 1 - self.b1**self.t, 1 - self.b2**self.t
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            if p.grad is None:
                continue
            g = p.grad
            m.mul_(self.b1).add_(g, alpha=1 - self.b1)
            v.mul_(self.b2).addcmul_(g, g, value=1 - self.b2)
            # p <- p - lr * m_hat / (sqrt(v_hat) + eps)
            p.addcdiv_(m, (v / c2).sqrt_().add_(self.eps), value=-self.lr / c1)
