"""The diffusion refinement stage (Palumbo et al., ICLR 2024, Sec. 3, "diffusion"): a DDPM trained after the CMVAE
to turn its (blurry) decoder means into sharper images, conditioned on them in the DiffuseVAE way (the condition
x_hat is concatenated to the noisy input of the denoiser). Off by default: build it only when you want it.

Notation: x_0 the real image scaled to [-1, 1]; x_hat the CMVAE output for it (reconstruction when training,
prior sample when generating); t = 1..T; beta_t the noise schedule, alpha_t = 1 - beta_t, abar_t = prod alpha.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn as nn

from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError

__all__ = ["DiffusionRefiner", "linear_beta_schedule"]


def linear_beta_schedule(T: int) -> torch.Tensor:
    """DDPM's linear schedule 1e-4 .. 0.02 for 1000 steps, rescaled by 1000 / T so that abar_T ~ 0 for short T."""
    s = 1000.0 / T
    return torch.linspace(1e-4 * s, min(0.02 * s, 0.999), T, dtype=torch.float64)


def _time_embedding(t: torch.Tensor, dim: int = 32) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    a = t.float().unsqueeze(-1) * freqs
    return torch.cat([a.sin(), a.cos()], dim=-1)


class DiffusionRefiner(nn.Module):
    """An MLP-denoiser DDPM on flat images of ``dim`` pixels in [0, 1], conditioned on the CMVAE output
    (concatenated) and on the modality index (one-hot). ``fit`` trains it on (reconstruction, image) pairs;
    ``refine`` maps CMVAE outputs to refined images."""

    def __init__(self, dim: int, n_modalities: int = 1, *, steps: int = 200, hidden: int = 256) -> None:
        super().__init__()
        for name, v in (("dim", dim), ("n_modalities", n_modalities), ("steps", steps), ("hidden", hidden)):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 2**17:
                raise InputError(f"{name} must be an integer in [1, 2**17], got {v!r}")
        self.dim, self.n_modalities, self.T = dim, n_modalities, steps
        betas = linear_beta_schedule(steps)
        self.register_buffer("betas", betas.float())
        self.register_buffer("abar", torch.cumprod(1 - betas, 0).float())
        self.net = nn.Sequential(
            nn.Linear(2 * dim + 32 + n_modalities, hidden),
            nn.SiLU(),
            nn.Linear(hidden, hidden),
            nn.SiLU(),
            nn.Linear(hidden, hidden),
            nn.SiLU(),
            nn.Linear(hidden, dim),
        )

    def _check(self, x: torch.Tensor, name: str) -> None:
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != self.dim:
            shape = list(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise InputError(f"{name} must be a [N, {self.dim}] tensor, got {shape}")
        if not torch.isfinite(x).all():
            raise InputError(f"{name} has non-finite values")

    def eps(
        self, x_t: torch.Tensor, cond: torch.Tensor, t: torch.Tensor, modality: torch.Tensor
    ) -> torch.Tensor:
        onehot = torch.nn.functional.one_hot(modality, self.n_modalities).to(x_t.dtype)
        return self.net(torch.cat([x_t, cond, _time_embedding(t).to(x_t.device), onehot], dim=-1))

    def loss(self, x0: torch.Tensor, cond: torch.Tensor, modality: torch.Tensor) -> torch.Tensor:
        """The DDPM simple loss E || eps - eps_theta(sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps, x_hat, t) ||^2."""
        x0, cond = 2 * x0 - 1, 2 * cond - 1
        t = torch.randint(0, self.T, (x0.shape[0],), device=x0.device)
        noise = torch.randn_like(x0)
        ab = self.abar[t].unsqueeze(-1)
        # Eq. (DDPM q(x_t|x_0)): x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps
        x_t = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
        return ((self.eps(x_t, cond, t, modality) - noise) ** 2).mean()

    def fit(
        self,
        images: Sequence[torch.Tensor],
        conditions: Sequence[torch.Tensor],
        *,
        iterations: int = 3000,
        batch_size: int = 256,
        lr: float = 1e-3,
        seed: int = 0,
        show_progress: bool = False,
    ) -> list[float]:
        """Train on pairs (image, CMVAE output) of every modality: ``images[m]``, ``conditions[m]`` [N_m, dim]."""
        if len(images) != self.n_modalities or len(conditions) != self.n_modalities:
            raise InputError(
                f"expected {self.n_modalities} modalities of images and conditions, got {len(images)} and {len(conditions)}"
            )
        for m, (x, c) in enumerate(zip(images, conditions, strict=True)):
            self._check(x, f"images[{m}]")
            self._check(c, f"conditions[{m}]")
            if x.shape != c.shape:
                raise InputError(f"images[{m}] {list(x.shape)} and conditions[{m}] {list(c.shape)} differ")
        x_all = torch.cat(list(images))
        c_all = torch.cat(list(conditions))
        mod = torch.cat([torch.full((len(x),), m, dtype=torch.long) for m, x in enumerate(images)])
        g = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, iterations)
        hist = []
        for _ in progress(range(iterations), desc="train refiner", disable=not show_progress):
            idx = torch.randint(0, len(x_all), (batch_size,), generator=g)
            loss = self.loss(x_all[idx], c_all[idx], mod[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            hist.append(float(loss.detach()))
        return hist

    @torch.no_grad()
    def refine(self, cond: torch.Tensor, modality: int = 0, *, seed: int = 0) -> torch.Tensor:
        """Ancestral DDPM sampling x_T ~ N(0, I) -> x_0 conditioned on ``cond`` [N, dim] (CMVAE outputs in [0, 1]);
        returns [N, dim] in [0, 1]."""
        self._check(cond, "cond")
        if not 0 <= modality < self.n_modalities:
            raise InputError(f"modality must be in [0, {self.n_modalities}), got {modality}")
        g = torch.Generator().manual_seed(seed)
        c = 2 * cond - 1
        mod = torch.full((len(c),), modality, dtype=torch.long)
        x = torch.randn(c.shape, generator=g)
        for t in range(self.T - 1, -1, -1):
            tt = torch.full((len(c),), t, dtype=torch.long)
            beta, ab = self.betas[t], self.abar[t]
            e = self.eps(x, c, tt, mod)
            # Eq. (DDPM reverse): x_{t-1} = (x_t - beta_t / sqrt(1 - abar_t) eps_theta) / sqrt(alpha_t) + sigma_t n
            x = (x - beta / (1 - ab).sqrt() * e) / (1 - beta).sqrt()
            if t > 0:
                x = x + beta.sqrt() * torch.randn(c.shape, generator=g)
        return ((x.clamp(-1, 1) + 1) / 2).to(cond.dtype)
