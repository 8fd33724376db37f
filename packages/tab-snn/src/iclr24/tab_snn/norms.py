"""Temporal batch normalisations for spiking networks: TAB and the baselines it is compared with.

Notation (Jiang et al., ICLR 2024, Sec. 4; official ``model.py:TAB_Layer``)
---------------------------------------------------------------------------
x[n, t, c, ...]     pre-activation of channel c at time step t (t = 1..T) of sample n; ``...`` are spatial dims
mu_{1:t}, s2_{1:t}  mean and biased variance of channel c over samples n, steps i <= t and spatial positions
gamma_t, beta_t     per-step affine parameters (T independent BatchNorms in the official code)
p_t, lambda_t       learnable step weights, lambda_t = p_t^2 >= 0, p initialised to 1

All modules take ``[N, T, C]`` (MLP) or ``[N, T, C, H, W]`` (conv) when ``layout="NT"`` (the official layout), or
``[T, N, ...]`` when ``layout="TN"`` (SpikingJelly's layout). Statistics are per channel in every case:

==========  ===========================================================  ==============================
norm        statistics used for x[t]                                     affine
==========  ===========================================================  ==============================
``bn``      all N*T*HW values (SeqToANN: one BatchNorm over time)        gamma, beta (shared)
``tdbn``    same as ``bn`` (Zheng et al., 2021)                          gamma = alpha*V_th, beta = 0 at init
``bntt``    N*HW values of step t only (Kim & Panda, 2021)               gamma_t, no beta
``tebn``    same as ``bn`` (Duan et al., 2022)                           gamma, beta, then k_t (init 1)
``tab``     N*t*HW values of steps 1..t (causal, this paper)              gamma_t, beta_t, then p_t^2
==========  ===========================================================  ==============================
"""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.paperkit.errors import InputError

__all__ = [
    "NORMS",
    "BNTT",
    "TAB",
    "TDBN",
    "TEBN",
    "NoNorm",
    "SeqBN",
    "cumulative_moments",
    "make_norm",
    "tab_normalize",
    "tab_normalize_loop",
]

NORMS = ("none", "bn", "tdbn", "bntt", "tebn", "tab")


def _reduce_dims(x: torch.Tensor) -> tuple[int, ...]:
    """Dims of an ``[N, T, C, ...]`` tensor that per-channel, per-step statistics reduce over: N and spatial."""
    return (0, *range(3, x.dim()))


def _per_step(v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Broadcast a ``[T, C]`` tensor against ``x`` of shape ``[N, T, C, ...]``."""
    return v.reshape(1, *v.shape, *([1] * (x.dim() - 3)))


class _PerStepMoments(torch.autograd.Function):
    """Per-step, per-channel mean and mean square of ``x`` ``[N, T, C, ...]`` (both ``[T, C]``), with the backward
    written out (one fused pass, ``dx = g_mu / m + 2 x g_q / m``) instead of autograd's chain of broadcasts."""

    @staticmethod
    def forward(ctx, x: torch.Tensor):
        dims = _reduce_dims(x)
        m = x.numel() // (x.shape[1] * x.shape[2])
        ctx.save_for_backward(x)
        ctx.m = m
        return x.sum(dim=dims) / m, torch.linalg.vector_norm(x, ord=2, dim=dims).square() / m

    @staticmethod
    def backward(ctx, g_mu: torch.Tensor, g_q: torch.Tensor):
        (x,) = ctx.saved_tensors
        return torch.addcmul(_per_step(g_mu / ctx.m, x), x, _per_step(g_q * (2.0 / ctx.m), x))


def cumulative_moments(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Causal per-channel statistics of ``x`` ``[N, T, C, ...]`` over steps 1..t, for every t, in O(T).

    Returns ``(mu, s2, count)``: ``mu[t-1, c]`` = mu_{1:t}, ``s2[t-1, c]`` = biased variance s2_{1:t}
    (both ``[T, C]``), and ``count[t-1]`` = number of values the step-t statistics averaged (N * t * HW).
    Every step holds the same number of values, so the running averages over steps are cumulative means of the
    per-step moments (one pass over ``x``; the variance is formed on ``[T, C]`` tensors, in float64 when ``x`` is
    float32, to keep E[x^2] - mu^2 accurate).
    """
    T = x.shape[1]
    mu_t, q_t = _PerStepMoments.apply(x)  # per step: [T, C]
    work = torch.float64 if x.dtype in (torch.float16, torch.bfloat16, torch.float32) else x.dtype
    mu_t, q_t = mu_t.to(work), q_t.to(work)
    steps = torch.arange(1, T + 1, dtype=work, device=x.device).unsqueeze(1)
    # Eq. (TAB mean): mu_{1:t} = ((t-1) mu_{1:t-1} + mu_t) / t, i.e. the cumulative mean of the per-step means
    mu = torch.cumsum(mu_t, dim=0) / steps
    # Eq. (TAB var): s2_{1:t} = E_{1:t}[x^2] - mu_{1:t}^2, E_{1:t}[x^2] the same running average of E_t[x^2]
    s2 = torch.cumsum(q_t, dim=0) / steps - mu * mu
    per_step = x.numel() // (x.shape[1] * x.shape[2])
    count = torch.arange(1, T + 1, device=x.device) * per_step
    return mu.to(x.dtype), s2.clamp_min(0.0).to(x.dtype), count


def tab_normalize(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    p: torch.Tensor,
    mean: torch.Tensor,
    var: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """TAB output for ``x`` ``[N, T, C, ...]`` given per-step statistics ``mean``, ``var`` ``[T, C]``.

    ``weight``/``bias`` are gamma_t, beta_t ``[T, C]`` (or None), ``p`` is ``[T]`` (or ``[T, C]``, one p_t per
    channel, which :mod:`.packed` uses to train independent networks side by side).
    """
    # Eq. (TAB norm): x_hat[t] = (x[t] - mu_{1:t}) / sqrt(s2_{1:t} + eps)
    inv_std = torch.rsqrt(var + eps)  # [T, C]
    # Eq. (TAB scale): y[t] = lambda_t * (gamma_t x_hat[t] + beta_t), lambda_t = p_t^2
    lam = p * p
    lam = lam.unsqueeze(1) if lam.dim() == 1 else lam  # [T, 1] or [T, C]
    # folded into one scale and shift per (t, c), so the full-size tensor is touched once: y = x * a + b
    a = inv_std if weight is None else weight * inv_std
    b = -mean * a if bias is None else bias - mean * a
    return torch.addcmul(_per_step(b * lam, x), x, _per_step(a * lam, x))


def tab_normalize_loop(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    p: torch.Tensor,
    eps: float = 1e-5,
    running_mean: torch.Tensor | None = None,
    running_var: torch.Tensor | None = None,
    momentum: float = 0.1,
) -> torch.Tensor:
    """Reference TAB in train mode, the official way: step t calls a BatchNorm on ``x[:, :t]`` (O(T^2) work).

    Used to check :func:`tab_normalize` + :func:`cumulative_moments` and as the benchmark's naive baseline.
    ``running_mean``/``running_var`` ``[T, C]`` are updated in place when given.
    """
    out = []
    for t in range(x.shape[1]):
        seg = x[:, : t + 1].transpose(1, 2)  # [N, C, t, ...]: a BatchNorm over N, steps <= t and space
        y = F.batch_norm(
            seg,
            None if running_mean is None else running_mean[t],
            None if running_var is None else running_var[t],
            None if weight is None else weight[t],
            None if bias is None else bias[t],
            training=True,
            momentum=momentum,
            eps=eps,
        )
        out.append(y[:, :, t])
    y = torch.stack(out, dim=1)
    return y * (p * p).reshape(1, -1, *([1] * (x.dim() - 2)))


class _TemporalNorm(nn.Module):
    """Shared input checks, layout handling and the eval-before-training warning."""

    def __init__(self, num_features: int, T: int, *, eps: float, momentum: float, layout: str) -> None:
        super().__init__()
        if (
            not isinstance(num_features, int)
            or isinstance(num_features, bool)
            or not 1 <= num_features <= 2**17
        ):
            raise InputError(f"num_features must be a positive int (at most 2**17), got {num_features!r}")
        if not isinstance(T, int) or isinstance(T, bool) or not 1 <= T <= 4096:
            raise InputError(f"T (number of time steps) must be an int >= 1, got {T!r}")
        if layout not in ("NT", "TN"):
            raise InputError(f"layout must be 'NT' ([N, T, C, ...]) or 'TN' ([T, N, C, ...]), got {layout!r}")
        if not eps > 0:
            raise InputError(f"eps must be > 0, got {eps!r}")
        if not 0.0 < momentum <= 1.0:
            raise InputError(f"momentum must be in (0, 1], got {momentum!r}")
        self.num_features = num_features
        self.T = T
        self.eps = float(eps)
        self.momentum = float(momentum)
        self.layout = layout
        self.check_finite = True
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def extra_repr(self) -> str:
        return f"{self.num_features}, T={self.T}, eps={self.eps}, momentum={self.momentum}, layout={self.layout!r}"

    def _to_nt(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise InputError(f"{type(self).__name__} expects a torch.Tensor, got {type(x).__name__}")
        shape = "[N, T, C, ...]" if self.layout == "NT" else "[T, N, C, ...]"
        if x.dim() < 3:
            raise InputError(
                f"{type(self).__name__} expects {shape} (layout={self.layout!r}) with at least 3 dims, "
                f"got shape {tuple(x.shape)}"
            )
        tdim = 1 if self.layout == "NT" else 0
        if x.shape[tdim] != self.T:
            raise InputError(
                f"{type(self).__name__}: time dim {tdim} of the input has {x.shape[tdim]} steps but T={self.T} "
                f"(layout={self.layout!r} assumes {shape}; input shape {tuple(x.shape)})"
            )
        if x.shape[2] != self.num_features:
            raise InputError(
                f"{type(self).__name__}: expected {self.num_features} channels in dim 2 of {shape}, "
                f"got shape {tuple(x.shape)}"
            )
        if not x.is_floating_point():
            raise InputError(f"{type(self).__name__} expects a floating-point tensor, got dtype {x.dtype}")
        if self.check_finite and not math.isfinite(
            float(x.detach().sum())
        ):  # one pass; NaN/inf make it non-finite
            raise InputError(f"{type(self).__name__}: the input contains NaN or inf values")
        return x if self.layout == "NT" else x.transpose(0, 1)

    def _from_nt(self, y: torch.Tensor) -> torch.Tensor:
        return y if self.layout == "NT" else y.transpose(0, 1)

    def _warn_if_untrained(self) -> None:
        if not self.training and int(self.num_batches_tracked) == 0:
            warnings.warn(
                f"{type(self).__name__} is in eval mode but has never seen a training batch: its running "
                "statistics are the defaults (mean 0, var 1)",
                UserWarning,
                stacklevel=3,
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._to_nt(x)
        if self.training:
            self.num_batches_tracked += 1
        else:
            self._warn_if_untrained()
        return self._from_nt(self._forward_nt(x))


class NoNorm(_TemporalNorm):
    """The no-normalisation baseline: the identity, with the same input checks."""

    def __init__(self, num_features: int, T: int, *, layout: str = "NT") -> None:
        super().__init__(num_features, T, eps=1e-5, momentum=0.1, layout=layout)

    def _warn_if_untrained(self) -> None:
        pass

    def _forward_nt(self, x: torch.Tensor) -> torch.Tensor:
        return x


class TAB(_TemporalNorm):
    """Temporal Accumulated Batch Normalisation (Jiang et al., ICLR 2024, Sec. 4).

    ``y[t] = p_t^2 * (gamma_t * (x[t] - mu_{1:t}) / sqrt(s2_{1:t} + eps) + beta_t)``, with statistics over the
    steps seen so far (causal), computed with cumulative sums (O(T)). Eval uses per-step running statistics,
    updated with ``momentum`` from the unbiased variance as in :class:`torch.nn.BatchNorm1d`.
    """

    def __init__(
        self,
        num_features: int,
        T: int,
        *,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        layout: str = "NT",
    ) -> None:
        super().__init__(num_features, T, eps=eps, momentum=momentum, layout=layout)
        self.affine = affine
        self.track_running_stats = track_running_stats
        self.weight = nn.Parameter(torch.ones(T, num_features)) if affine else None
        self.bias = nn.Parameter(torch.zeros(T, num_features)) if affine else None
        self.p = nn.Parameter(torch.ones(T))
        if track_running_stats:
            self.register_buffer("running_mean", torch.zeros(T, num_features))
            self.register_buffer("running_var", torch.ones(T, num_features))
        else:
            self.running_mean = None
            self.running_var = None

    def _warn_if_untrained(self) -> None:
        if self.track_running_stats:
            super()._warn_if_untrained()

    def _forward_nt(self, x: torch.Tensor) -> torch.Tensor:
        if self.training or not self.track_running_stats:
            mean, var, count = cumulative_moments(x)
            if self.training and self.track_running_stats:
                with torch.no_grad():
                    n = count.to(var.dtype).unsqueeze(1)
                    unbiased = var * n / (n - 1).clamp_min(1)
                    self.running_mean.lerp_(mean.detach(), self.momentum)
                    self.running_var.lerp_(unbiased.detach(), self.momentum)
        else:
            mean, var = self.running_mean, self.running_var
        return tab_normalize(x, self.weight, self.bias, self._step_weights(), mean, var, self.eps)

    def _step_weights(self) -> torch.Tensor:
        return self.p


def _joint_batch_norm(mod: _TemporalNorm, x: torch.Tensor, weight, bias) -> torch.Tensor:
    """One BatchNorm over N*T*HW (SeqToANN): fold time into the batch."""
    y = F.batch_norm(
        x.flatten(0, 1),
        mod.running_mean,
        mod.running_var,
        weight,
        bias,
        training=mod.training,
        momentum=mod.momentum,
        eps=mod.eps,
    )
    return y.view_as(x)


class SeqBN(_TemporalNorm):
    """BatchNorm over time (SeqToANN): one set of statistics over all N*T*HW values of a channel."""

    def __init__(
        self, num_features: int, T: int, *, eps: float = 1e-5, momentum: float = 0.1, layout: str = "NT"
    ) -> None:
        super().__init__(num_features, T, eps=eps, momentum=momentum, layout=layout)
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def _forward_nt(self, x: torch.Tensor) -> torch.Tensor:
        return _joint_batch_norm(self, x, self.weight, self.bias)


class TDBN(SeqBN):
    """Threshold-dependent BN (Zheng et al., AAAI 2021): joint statistics, gamma initialised to alpha * V_th.

    ``alpha`` is 1, or 1/sqrt(2) for the norms right before a residual addition.
    """

    def __init__(
        self,
        num_features: int,
        T: int,
        *,
        alpha: float = 1.0,
        v_th: float = 1.0,
        eps: float = 1e-5,
        momentum: float = 0.1,
        layout: str = "NT",
    ) -> None:
        super().__init__(num_features, T, eps=eps, momentum=momentum, layout=layout)
        if not alpha > 0 or not v_th > 0:
            raise InputError(f"alpha and v_th must be > 0, got alpha={alpha!r}, v_th={v_th!r}")
        self.alpha, self.v_th = float(alpha), float(v_th)
        with torch.no_grad():
            # tdBN: x_hat = alpha * V_th * (x - mu) / sqrt(s2 + eps) at init
            self.weight.fill_(alpha * v_th)


class TEBN(SeqBN):
    """Temporal effective BN (Duan et al., NeurIPS 2022): joint BN, then a learnable per-step scale k_t (init 1)."""

    def __init__(
        self, num_features: int, T: int, *, eps: float = 1e-5, momentum: float = 0.1, layout: str = "NT"
    ) -> None:
        super().__init__(num_features, T, eps=eps, momentum=momentum, layout=layout)
        self.k = nn.Parameter(torch.ones(T))

    def _forward_nt(self, x: torch.Tensor) -> torch.Tensor:
        y = _joint_batch_norm(self, x, self.weight, self.bias)
        # TEBN: y_t = k_t * BN(x)_t
        k = self._step_weights()
        return y * (k.reshape(1, -1, *([1] * (x.dim() - 2))) if k.dim() == 1 else _per_step(k, x))

    def _step_weights(self) -> torch.Tensor:
        return self.k


class BNTT(_TemporalNorm):
    """BatchNorm through time (Kim & Panda, 2021): a separate BN per step (statistics over N*HW), no beta.

    The BNTT reference code and snnTorch use ``eps=1e-4``, kept here.
    """

    def __init__(
        self, num_features: int, T: int, *, eps: float = 1e-4, momentum: float = 0.1, layout: str = "NT"
    ) -> None:
        super().__init__(num_features, T, eps=eps, momentum=momentum, layout=layout)
        self.weight = nn.Parameter(torch.ones(T, num_features))
        self.register_buffer("running_mean", torch.zeros(T, num_features))
        self.register_buffer("running_var", torch.ones(T, num_features))

    def _forward_nt(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            mean, q = _PerStepMoments.apply(x)
            var = (q.double() - mean.double().square()).clamp_min(0.0).to(x.dtype)
            with torch.no_grad():
                n = x.numel() // (x.shape[1] * x.shape[2])
                self.running_mean.lerp_(mean.detach(), self.momentum)
                self.running_var.lerp_(var.detach() * n / max(n - 1, 1), self.momentum)
        else:
            mean, var = self.running_mean, self.running_var
        a = self.weight * torch.rsqrt(
            var + self.eps
        )  # BNTT: gamma_t (x[t] - mu_t) / sqrt(s2_t + eps), no beta
        return torch.addcmul(_per_step(-mean * a, x), x, _per_step(a, x))


def make_norm(
    name: str, num_features: int, T: int, *, layout: str = "NT", alpha: float = 1.0
) -> _TemporalNorm:
    """Build a temporal norm by name: one of ``none, bn, tdbn, bntt, tebn, tab`` (``alpha`` only for tdbn)."""
    key = name.lower() if isinstance(name, str) else name
    if key == "none":
        return NoNorm(num_features, T, layout=layout)
    if key == "bn":
        return SeqBN(num_features, T, layout=layout)
    if key == "tdbn":
        return TDBN(num_features, T, alpha=alpha, layout=layout)
    if key == "bntt":
        return BNTT(num_features, T, layout=layout)
    if key == "tebn":
        return TEBN(num_features, T, layout=layout)
    if key == "tab":
        return TAB(num_features, T, layout=layout)
    raise InputError(f"unknown norm {name!r}; expected one of {', '.join(NORMS)}")
