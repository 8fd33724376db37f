"""Neural CDEs driven by interpolated irregular time series, and their solvers.

Notation (the paper's NCDE model): hidden state ``z_t in R^p``, control ``x~^D_t in R^d`` (time is channel 0),
vector field ``G_psi : R^p -> R^{p x d}``, readout ``theta in R^p``:

    z_0 = zeta_psi(x_{t_0})                                   (linear embedding of the first observation)
    dz_t = G_psi(z_t) dx~^D_t,  t in [0, 1]                   (the NCDE)
    G_psi(z) = sigma(A_q sigma(... sigma(A_1 z + b_1) ...) + b_q), reshaped p x d, sigma = tanh
    y^ = theta^T z_1

On interval ``j`` of a piecewise-linear path ``dz/dt = G_psi(z) Delta x_j / Delta t_j``; one Euler step per interval
is the discretized NCDE ``z_{j+1} = z_j + G_psi(z_j) Delta x_j``, a depth-K weight-shared ResNet.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_choice
from iclr24.paperkit.pretrained import PretrainedMixin

from .paths import INTERPOLATIONS
from .paths import Control
from .paths import add_time_channel
from .paths import build_control
from .paths import validate_series

__all__ = ["NCDE", "SOLVERS", "VectorField", "solve_cde"]

SOLVERS = ("euler", "rk4", "dopri5")


def _check_int(name: str, v: object, minimum: int, maximum: int = 2**16) -> int:
    """A size in [minimum, maximum]: widths, depths and step counts far past any real model are refused before
    anything is allocated or looped over."""
    if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= maximum:
        raise InputError(f"{name} must be an int >= {minimum} (at most {maximum}), got {v!r}")
    return v


def _check_solver(solver: object) -> str:
    check_choice(solver, "solver", SOLVERS)
    return str(solver)


class VectorField(nn.Module):
    """``G_psi(z) = tanh(A_q tanh(... tanh(A_1 z + b_1) ...) + b_q)`` reshaped to ``(p, d)``.

    ``depth`` = number of hidden layers (``q = depth + 1`` affine maps); ``depth=0`` is ``tanh(W z + b)``."""

    def __init__(self, hidden: int, control_dim: int, *, width: int = 32, depth: int = 1) -> None:
        super().__init__()
        self.hidden = _check_int("hidden", hidden, 1)
        self.control_dim = _check_int("control_dim", control_dim, 1)
        _check_int("width", width, 1)
        _check_int("depth", depth, 0)
        sizes = [hidden] + [width] * depth + [hidden * control_dim]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:], strict=True))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = z
        for layer in self.layers:
            # NCDE model: G_psi(z) = sigma(A_q sigma(... sigma(A_1 z + b_1) ...) + b_q), sigma = tanh
            h = torch.tanh(layer(h))
        return h.view(*z.shape[:-1], self.hidden, self.control_dim)


def _field(vf: nn.Module, z: torch.Tensor, dxdu: torch.Tensor) -> torch.Tensor:
    # NCDE model: dz/du = G_psi(z) dx~/du  (matrix (p x d) times vector (d))
    return (vf(z) * dxdu.unsqueeze(-2)).sum(-1)


def solve_cde(
    vector_field: nn.Module,
    z0: torch.Tensor,
    control: Control,
    *,
    solver: str = "rk4",
    substeps: int = 2,
    rtol: float = 1e-4,
    atol: float = 1e-6,
    on_interval: Callable[[int], None] | None = None,
) -> torch.Tensor:
    """Solve ``dz = G(z) dx~`` from ``z0 (B, p)`` over the whole control; returns ``z_1 (B, p)``.
    ``on_interval(j)`` (fixed-step solvers) is called after each observation interval, e.g. to move a progress bar.

    ``euler`` / ``rk4``: ``substeps`` fixed steps per observation interval (one Euler step = the ResNet recursion);
    ``dopri5``: torchdiffeq's adaptive solver in index time with the knots as ``jump_t`` (tolerances as torchcde's
    defaults)."""
    solver = _check_solver(solver)
    _check_int("substeps", substeps, 1)
    k = control.n_intervals
    if solver == "dopri5":
        from torchdiffeq import odeint

        def func(s: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
            sf = float(s.detach())
            j = min(max(int(math.floor(sf)), 0), k - 1)
            return _field(vector_field, z, control.derivative(j, sf - j))

        grid = torch.tensor([0.0, float(k)], dtype=torch.float64)
        opts = {"jump_t": torch.arange(1, k, dtype=torch.float64)} if k > 1 else {}
        return odeint(func, z0, grid, method="dopri5", rtol=rtol, atol=atol, options=opts)[-1]
    h = 1.0 / substeps
    z = z0
    linear = control.m0 is None
    for j in range(k):
        for i in range(substeps):
            u = i * h
            if solver == "euler":
                # discretized NCDE (substeps=1): z_{j+1} = z_j + G_psi(z_j) Delta x_j
                z = z + h * _field(vector_field, z, control.derivative(j, u))
                continue
            a = control.derivative(j, u)
            m = a if linear else control.derivative(j, u + h / 2)
            e = a if linear else control.derivative(j, u + h)
            k1 = _field(vector_field, z, a)
            k2 = _field(vector_field, z + (h / 2) * k1, m)
            k3 = _field(vector_field, z + (h / 2) * k2, m)
            k4 = _field(vector_field, z + h * k3, e)
            z = z + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4)
        if on_interval is not None:
            on_interval(j)
    return z


class NCDE(PretrainedMixin, nn.Module):
    """A neural CDE on irregularly sampled, variable-length series (``save_pretrained(dir)`` /
    ``NCDE.from_pretrained(dir)``: a model folder with model.safetensors, config.json, provenance.json).

    ``forward(times, values, lengths=None, mask=None) -> (B, output_dim)`` with ``values (B, L, input_channels)``
    and ``times (L,)`` or ``(B, L)``. Time is added as a control channel (``include_time``); series shorter than
    ``L`` are padded by repeating their last observation, which adds zero increments and changes nothing."""

    def __init__(
        self,
        input_channels: int,
        hidden: int = 8,
        vector_field_width: int = 32,
        depth: int = 1,
        *,
        solver: str = "rk4",
        substeps: int = 2,
        interpolation: str = "linear",
        include_time: bool = True,
        output_dim: int = 1,
        rtol: float = 1e-4,
        atol: float = 1e-6,
    ) -> None:
        super().__init__()
        self.input_channels = _check_int("input_channels", input_channels, 1)
        self.solver = _check_solver(solver)
        self.substeps = _check_int("substeps", substeps, 1)
        check_choice(interpolation, "interpolation", INTERPOLATIONS)
        self.interpolation = interpolation
        self.include_time = bool(include_time)
        self.rtol, self.atol = float(rtol), float(atol)
        d = input_channels + int(self.include_time)
        self.control_dim = d
        self.embed = nn.Linear(d, _check_int("hidden", hidden, 1))  # zeta_psi
        self.vector_field = VectorField(hidden, d, width=vector_field_width, depth=depth)
        self.readout = nn.Linear(hidden, _check_int("output_dim", output_dim, 1))  # theta

    def control(
        self, times: object, values: object, lengths: object | None = None, mask: object | None = None
    ) -> Control:
        """Validate and interpolate the input: the path ``x~^D`` the CDE is driven by."""
        t, v, n = validate_series(
            times, values, lengths=lengths, mask=mask, input_channels=self.input_channels
        )
        w = self.embed.weight
        t, v = t.to(w.device, w.dtype), v.to(w.device, w.dtype)
        n = n.to(w.device)
        x = add_time_channel(t, v) if self.include_time else v
        return build_control(t, x, n, self.interpolation)

    def hidden_state(
        self, times: object, values: object, lengths: object | None = None, mask: object | None = None
    ) -> torch.Tensor:
        """``z_1 (B, p)``."""
        ctrl = self.control(times, values, lengths, mask)
        # NCDE model: z_0 = zeta_psi(x_{t_0})
        z0 = self.embed(ctrl.x0)
        return solve_cde(
            self.vector_field,
            z0,
            ctrl,
            solver=self.solver,
            substeps=self.substeps,
            rtol=self.rtol,
            atol=self.atol,
        )

    def forward(
        self, times: object, values: object, lengths: object | None = None, mask: object | None = None
    ) -> torch.Tensor:
        # NCDE model: y^ = theta^T z_1
        return self.readout(self.hidden_state(times, values, lengths, mask))
