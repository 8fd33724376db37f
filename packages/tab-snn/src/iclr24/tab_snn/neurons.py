"""Leaky integrate-and-fire neurons with a triangle surrogate gradient, in plain torch.

Notation (official ``model.py:LIFNeuron``/``TriangleSG``; the surrogate is TET's, Deng et al., ICLR 2022)
--------------------------------------------------------------------------------------------------------
I_t     input current at step t (the output of a norm layer), u_0 = 0
m_t     membrane potential before firing; u_t after the hard reset
tau     decay factor (0.9), V_th firing threshold (1.0), gamma width of the triangle surrogate (1.0)

Inputs are ``[N, T, ...]`` (``layout="NT"``) or ``[T, N, ...]`` (``layout="TN"``).
"""

from __future__ import annotations

import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import describe

__all__ = [
    "LIF",
    "ReadoutIntegrator",
    "SURROGATES",
    "TriangleSurrogate",
    "direct_encoding",
    "firing_rates",
    "lif_forward",
]

SURROGATES = ("triangle",)


class TriangleSurrogate(torch.autograd.Function):
    """Heaviside step H(m - V_th) with a strict ``>`` forward, a triangle of half-width gamma backward."""

    @staticmethod
    def forward(ctx, m: torch.Tensor, v_th: float, gamma: float) -> torch.Tensor:
        ctx.save_for_backward(m)
        ctx.v_th, ctx.gamma = v_th, gamma
        # Eq. (LIF fire): s_t = H(m_t - V_th), with m_t = V_th not firing
        return (m > v_th).to(m.dtype)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        (m,) = ctx.saved_tensors
        g = ctx.gamma
        # Eq. (surrogate): ds/dm = (1/gamma^2) * max(0, gamma - |m - V_th|)
        surrogate = (g - (m - ctx.v_th).abs()).clamp_min(0.0) / (g * g)
        return grad_out * surrogate, None, None


def _check_lif_params(tau: float, v_th: float, gamma: float, surrogate: str) -> None:
    if not 0.0 <= tau <= 1.0:
        raise InputError(f"tau (membrane decay factor) must be in [0, 1], got {tau!r}")
    if not v_th > 0:
        raise InputError(f"v_th (firing threshold) must be > 0, got {v_th!r}")
    if not gamma > 0:
        raise InputError(f"gamma (surrogate width) must be > 0, got {gamma!r}")
    if surrogate not in SURROGATES:
        raise InputError(f"unknown surrogate {surrogate!r}; expected one of {', '.join(SURROGATES)}")


def lif_forward(
    current: torch.Tensor, tau: float = 0.9, v_th: float = 1.0, gamma: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run a LIF layer over ``current`` ``[N, T, ...]``; returns ``(spikes, m)``, both ``[N, T, ...]``.

    ``m`` is the pre-reset membrane potential (what the surrogate gradient is evaluated at).
    """
    steps = current.unbind(1)  # unbind's backward is one stack, not T full-size scatters
    u = torch.zeros_like(steps[0])
    spikes, mems = [], []
    for i_t in steps:
        # Eq. (LIF charge): m_t = tau * u_{t-1} + I_t
        m = tau * u + i_t
        s = TriangleSurrogate.apply(m, v_th, gamma)
        # Eq. (LIF reset): u_t = m_t * (1 - s_t)  (hard reset to 0)
        u = m * (1.0 - s)
        spikes.append(s)
        mems.append(m)
    return torch.stack(spikes, dim=1), torch.stack(mems, dim=1)


class LIF(nn.Module):
    """LIF spiking activation (hard reset, u_0 = 0). Remembers its last firing rate for :func:`firing_rates`."""

    def __init__(
        self,
        tau: float = 0.9,
        v_th: float = 1.0,
        *,
        surrogate: str = "triangle",
        gamma: float = 1.0,
        layout: str = "NT",
    ) -> None:
        super().__init__()
        _check_lif_params(tau, v_th, gamma, surrogate)
        if layout not in ("NT", "TN"):
            raise InputError(f"layout must be 'NT' or 'TN', got {layout!r}")
        self.tau, self.v_th, self.gamma = float(tau), float(v_th), float(gamma)
        self.surrogate, self.layout = surrogate, layout
        self.last_rate: torch.Tensor | None = None

    def extra_repr(self) -> str:
        return f"tau={self.tau}, v_th={self.v_th}, gamma={self.gamma}, surrogate={self.surrogate!r}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dim() < 2:
            raise InputError(
                f"LIF expects a tensor with a batch and a time dim, got {getattr(x, 'shape', x)!r}"
            )
        xt = x if self.layout == "NT" else x.transpose(0, 1)
        s, _ = lif_forward(xt, self.tau, self.v_th, self.gamma)
        self.last_rate = s.detach().mean(dim=[d for d in range(s.dim()) if d != 1])  # per step: [T]
        return s if self.layout == "NT" else s.transpose(0, 1)


class ReadoutIntegrator(nn.Module):
    """Non-firing readout of the official ``LIFNeuron(firing=False)``: u_t = u_{t-1} + I_t (no decay, no reset)."""

    def __init__(self, layout: str = "NT") -> None:
        super().__init__()
        if layout not in ("NT", "TN"):
            raise InputError(f"layout must be 'NT' or 'TN', got {layout!r}")
        self.layout = layout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dim() < 2:
            raise InputError(
                f"ReadoutIntegrator expects [N, T, ...] (or [T, N, ...]) tensors, got {describe(x)}"
            )
        # Eq. (readout): u_t = u_{t-1} + I_t
        return torch.cumsum(x, dim=1 if self.layout == "NT" else 0)


def direct_encoding(x: torch.Tensor, T: int) -> torch.Tensor:
    """Direct input encoding (official ``input_expand``): repeat a static input ``[N, ...]`` T times -> ``[N, T, ...]``."""
    if isinstance(T, bool) or not isinstance(T, int) or not 1 <= T <= 4096:
        raise InputError(f"T must be an int >= 1 (at most 4096), got {T!r}")
    if not isinstance(x, torch.Tensor) or x.dim() < 1:
        raise InputError(f"x must be a batch of static inputs [N, ...], got {describe(x)}")
    return x.unsqueeze(1).expand(x.shape[0], T, *x.shape[1:])


def firing_rates(model: nn.Module, per_step: bool = False) -> dict[str, float | list[float]]:
    """Firing rate (spikes per neuron per step) of every :class:`LIF` in ``model`` at its last forward:
    the mean over steps, or with ``per_step`` the list over t = 1..T."""
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be an nn.Module, got {describe(model)}")
    out: dict[str, float | list[float]] = {}
    for name, m in model.named_modules():
        if isinstance(m, LIF) and m.last_rate is not None:
            out[name] = [float(v) for v in m.last_rate] if per_step else float(m.last_rate.mean())
    return out
