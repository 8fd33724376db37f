"""ASMR (Activation-Sharing Multi-Resolution coordinate network) and the SIREN baseline.

Notation (paper Sec. 3): ``D`` axes of sizes ``S_a``, ``L`` levels with bases ``B_{a,l}``, hidden width ``h``,
``omega0 = 30``. With the normalised digits ``c_hat_l`` of a coordinate (see :mod:`.decomposition`):

    h_0     = c_hat_0                                                         (a D-vector)
    h_{i+1} = sin(omega0 * (W_i h_i + b_i + M_i(c_hat_{i+1})))       i = 0 .. L-2     (Eq. 2-3)
    y       = W_out h_{L-1} + b_out                                           (linear output)

with the modulator ``M_i(c) = omega0 * V_i c`` (linear, no bias; so it enters the sine scaled by omega0^2), or
the "nonlinear" one, ``M_i(c) = SIREN_3x32(c)`` without that factor (the official ``Modulator_nonlinear``).
Because ``W_i h_i + b_i`` depends only on the digits of levels ``0..i``, it is computed once per level-``i`` cell
(``N_i = prod_a C_{a,i}`` cells) and shared by every finer point of that cell: :meth:`ASMR.render`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import describe
from iclr24.paperkit.pretrained import PretrainedMixin

from .decomposition import decompose_coords
from .decomposition import grid_coords
from .decomposition import normalize_digits
from .decomposition import validate_bases

__all__ = ["ASMR", "SIREN", "NonlinearModulator", "siren_init_", "build_model", "MODULATORS"]

MODULATORS = ("linear", "nonlinear")


def siren_init_(layer: nn.Linear, omega0: float, first: bool) -> nn.Linear:
    """SIREN initialisation (Sitzmann et al. 2020, Sec. 3.2), weights and biases alike:
    first layer ``U(-1/d_in, 1/d_in)``, others ``U(-sqrt(6/d_in)/omega0, sqrt(6/d_in)/omega0)``."""
    d_in = layer.in_features
    bound = 1.0 / d_in if first else math.sqrt(6.0 / d_in) / omega0
    with torch.no_grad():
        layer.weight.uniform_(-bound, bound)
        if layer.bias is not None:
            layer.bias.uniform_(-bound, bound)
    return layer


def _check_int(name: str, v: object, minimum: int = 1, maximum: int = 2**16) -> int:
    """An int in [minimum, maximum]: widths, depths and dimensions far past any real model are refused before a
    layer is allocated."""
    if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= maximum:
        raise InputError(f"{name} must be an int in [{minimum}, {maximum}], got {v!r}")
    return int(v)


def _check_float(name: str, v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
        raise InputError(f"{name} must be a positive finite number, got {v!r}")
    return float(v)


def _check_shape(data_shape: Sequence[int], dim_in: int) -> list[int]:
    if isinstance(data_shape, str | bytes) or not isinstance(data_shape, Sequence):
        raise InputError(f"data_shape must be a list of axis sizes, e.g. (512, 768), got {data_shape!r}")
    shape = [_check_int("data_shape[...]", s, maximum=2**31) for s in data_shape]
    if len(shape) != dim_in:
        raise InputError(
            f"dim_in={dim_in} but data_shape {tuple(shape)} has {len(shape)} axes; dim_in is the "
            "number of coordinate axes (2 for images, 1 for audio, 3 for video)"
        )
    return shape


def _check_coords(coords: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    if not isinstance(coords, torch.Tensor):
        raise InputError(f"coords must be a torch tensor of integer indices, got {type(coords).__name__}")
    if coords.dtype.is_floating_point or coords.dtype.is_complex or coords.dtype == torch.bool:
        raise InputError(f"coords must hold integer indices (0 <= p_a < S_a), got dtype {coords.dtype}")
    if coords.ndim != 2 or coords.shape[1] != len(shape):
        raise InputError(f"coords must have shape (N, {len(shape)}), got {tuple(coords.shape)}")
    return coords


class NonlinearModulator(nn.Module):
    """The "nonlinear" modulator: a 3-layer SIREN ``dim_in -> width -> width -> hidden`` (sine on the two hidden
    layers, a linear last layer, biases everywhere, SIREN init), returned as is: unlike the linear modulator it
    carries no extra ``omega0`` factor (as the official ``Modulator_nonlinear`` in ``models/asmr.py``), so inside
    the sine it enters as ``omega0 * M(c)``, about 1 rad (RMS) at init for ``width = 32``. Its MAC cost per
    evaluation is ``d_in*w + w + (w*w + w) + w*h + h`` (the official profiler's count)."""

    def __init__(self, dim_in: int, hidden: int, width: int = 32, omega0: float = 30.0) -> None:
        super().__init__()
        self.omega0 = omega0
        self.net = nn.ModuleList(
            [nn.Linear(dim_in, width), nn.Linear(width, width), nn.Linear(width, hidden)]
        )
        for i, layer in enumerate(self.net):
            siren_init_(layer, omega0, first=i == 0)

    def forward(self, c: torch.Tensor) -> torch.Tensor:
        x = torch.sin(self.omega0 * self.net[0](c))
        x = torch.sin(self.omega0 * self.net[1](x))
        return self.net[2](x)  # no omega0 factor here: the layer's sine applies omega0 once


class _LinearModulator(nn.Module):
    """``M(c) = omega0 * V c`` with ``V`` an ``nn.Linear(dim_in, hidden, bias=False)`` at its default init."""

    def __init__(self, dim_in: int, hidden: int, omega0: float) -> None:
        super().__init__()
        self.omega0 = omega0
        self.linear = nn.Linear(dim_in, hidden, bias=False)

    def forward(self, c: torch.Tensor) -> torch.Tensor:
        return self.omega0 * self.linear(c)


class _Pretrained(PretrainedMixin):
    """The model folder (``save_pretrained(dir)`` / ``from_pretrained(dir)``): ``config.json`` holds
    :meth:`config` (the checked constructor arguments); rebuilding draws nothing from the global RNG."""

    def pretrained_config(self) -> dict:
        cfg = self.config()
        cfg.pop("model")
        return cfg

    @classmethod
    def from_pretrained_config(cls, **config):
        with torch.random.fork_rng(devices=[]):
            return cls(**config)


class ASMR(_Pretrained, nn.Module):
    """Activation-Sharing Multi-Resolution coordinate network, for any number of axes.

    Args:
        dim_in: number of coordinate axes ``D`` (1 audio, 2 image, 3 video).
        dim_out: output channels (1 grey, 3 RGB, channels of audio).
        data_shape: the grid size ``(S_0, ..., S_{D-1})``.
        bases: ``bases[a][l]`` = base ``B_{a,l}`` of axis ``a`` at level ``l`` (coarse to fine); each axis's
            bases multiply to its size, and the level count ``L`` is the number of linear layers.
        hidden: hidden width ``h``.
        omega0: the SIREN frequency (30), also used for the first layer unless ``omega0_initial`` is given.
        modulator: ``"linear"`` (``omega0 * V c``) or ``"nonlinear"`` (a 3-layer SIREN of width 32, output
            not scaled by ``omega0``, as in the official code).
        n_layers: optional check: must equal the number of levels.

    ``forward(coords)`` evaluates integer coordinates one by one (for training on batches); ``render()``
    evaluates the whole grid with activation sharing and returns the same numbers in row-major order.
    """

    def __init__(
        self,
        dim_in: int,
        dim_out: int,
        data_shape: Sequence[int],
        bases: Sequence[Sequence[int]],
        hidden: int = 256,
        omega0: float = 30.0,
        modulator: str = "linear",
        *,
        omega0_initial: float | None = None,
        n_layers: int | None = None,
        modulator_width: int = 32,
    ) -> None:
        super().__init__()
        dim_in = _check_int("dim_in", dim_in)
        dim_out = _check_int("dim_out", dim_out)
        hidden = _check_int("hidden", hidden)
        omega0 = _check_float("omega0", omega0)
        omega0_initial = omega0 if omega0_initial is None else _check_float("omega0_initial", omega0_initial)
        shape = _check_shape(data_shape, dim_in)
        bases = validate_bases(bases, shape)
        n_levels = len(bases[0])
        if n_levels < 2:
            raise InputError(
                f"ASMR needs at least 2 levels (one hidden layer and the output), got bases {bases}"
            )
        if n_layers is not None and _check_int("n_layers", n_layers) != n_levels:
            raise InputError(
                f"n_layers={n_layers} but the bases have {n_levels} levels; ASMR uses one level per "
                f"linear layer, so give {n_layers} bases per axis or set n_layers={n_levels}"
            )
        if modulator not in MODULATORS:
            raise InputError(f"modulator must be one of {MODULATORS}, got {modulator!r}")
        self.dim_in, self.dim_out, self.hidden = dim_in, dim_out, hidden
        self.data_shape = tuple(shape)
        self.bases = bases
        self.n_levels = n_levels
        self.omega0, self.omega0_initial = omega0, omega0_initial
        self.modulator_kind = modulator
        self.modulator_width = _check_int("modulator_width", modulator_width)
        widths = [dim_in] + [hidden] * (n_levels - 1)
        self.layers = nn.ModuleList([nn.Linear(widths[i], widths[i + 1]) for i in range(n_levels - 1)])
        for i, layer in enumerate(self.layers):
            siren_init_(layer, omega0, first=i == 0)
        self.out = siren_init_(nn.Linear(hidden, dim_out), omega0, first=False)
        if modulator == "linear":
            mods = [_LinearModulator(dim_in, hidden, omega0) for _ in range(n_levels - 1)]
        else:
            mods = [NonlinearModulator(dim_in, hidden, modulator_width, omega0) for _ in range(n_levels - 1)]
        self.modulators = nn.ModuleList(mods)
        self.last_render_peak_cells = 0  # the largest hidden block (in cells) the last render() materialised

    # ----------------------------------------------------------------------------------------------------
    def config(self) -> dict:
        """The constructor arguments (JSON-friendly), enough to rebuild the model with :func:`build_model`."""
        return {
            "model": "asmr",
            "dim_in": self.dim_in,
            "dim_out": self.dim_out,
            "data_shape": list(self.data_shape),
            "bases": self.bases,
            "hidden": self.hidden,
            "omega0": self.omega0,
            "omega0_initial": self.omega0_initial,
            "modulator": self.modulator_kind,
            "modulator_width": self.modulator_width,
        }

    def _omega(self, i: int) -> float:
        return self.omega0_initial if i == 0 else self.omega0

    def _dtype(self) -> torch.dtype:
        return self.out.weight.dtype

    def _device(self) -> torch.device:
        return self.out.weight.device

    def normalized_digits(self, coords: torch.Tensor) -> torch.Tensor:
        """``c_hat`` of integer ``coords`` ``(N, D)``: ``(N, L, D)`` in the model's dtype."""
        _check_coords(coords, self.data_shape)
        digits = decompose_coords(coords.to(self._device()), self.bases)
        return normalize_digits(digits, self.bases, dtype=self._dtype())

    def hidden_preactivations(self, coords: torch.Tensor) -> list[torch.Tensor]:
        """Per-coordinate ``W_i h_i + b_i`` for ``i = 0..L-2`` (before modulation ``i+1`` is added): a list of
        ``(N, h)`` tensors. Activation sharing rests on these depending only on the digits of levels ``<= i``."""
        c = self.normalized_digits(coords)
        h, pre_list = c[:, 0], []
        for i, layer in enumerate(self.layers):
            pre = layer(h)
            pre_list.append(pre)
            h = torch.sin(self._omega(i) * pre + self._omega(i) * self.modulators[i](c[:, i + 1]))
        return pre_list

    def forward(self, coords: torch.Tensor) -> torch.Tensor:
        """Per-coordinate forward: integer ``coords`` ``(N, D)`` with ``0 <= p_a < S_a`` -> ``(N, dim_out)``."""
        c = self.normalized_digits(coords)
        h = c[:, 0]  # h_0 = c_hat_0
        for i, layer in enumerate(self.layers):
            # Eq. (3): h_{i+1} = sin(omega0 (W_i h_i + b_i + M_i(c_hat_{i+1}))), as omega0 * pre + omega0 * mod
            w = self._omega(i)
            h = torch.sin(w * layer(h) + w * self.modulators[i](c[:, i + 1]))
        return self.out(h)  # y = W_out h_{L-1} + b_out

    # ----------------------------------------------------------------------------------------------------
    def _level_grid(self, level: int) -> torch.Tensor:
        """The normalised digits of one level on its own small grid: ``(B_{0,l}, ..., B_{D-1,l}, D)``."""
        axes = []
        for a in range(self.dim_in):
            b = self.bases[a][level]
            v = torch.arange(b, dtype=self._dtype(), device=self._device())
            axes.append(v / (b - 1) if b > 1 else torch.zeros_like(v))
        return torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1)

    def render(self, chunk_size: int | None = None) -> torch.Tensor:
        """The whole grid with activation sharing: ``(prod S_a, dim_out)`` in row-major order.

        Layer ``i`` runs on the ``N_i`` level-``i`` cells only; its output is tiled ``B_{a,i+1}`` times per axis
        and the modulation (computed once on the ``prod_a B_{a,i+1}`` digit grid) is broadcast over the cells.
        ``chunk_size`` bounds the number of cells of any hidden block: blocks that would be larger are split
        along their first axis of size > 1 (then the next) and rendered one after another into the output, so an
        8192^2 grid renders in bounded memory. Differentiable (``fit`` trains through it).
        """
        if chunk_size is not None:
            chunk_size = _check_int("chunk_size", chunk_size, maximum=2**40)
        # omega0 * M_i(c_hat_{i+1}) once on the small level-(i+1) digit grid: (B_{0,i+1}, ..., h) per level
        mods = [self._omega(i) * m(self._level_grid(i + 1)) for i, m in enumerate(self.modulators)]
        h0 = self._level_grid(0)  # h_0 = c_hat_0 on the level-0 cells
        self.last_render_peak_cells = math.prod(h0.shape[:-1])
        if chunk_size is None:
            y = self._render_block(0, h0, mods, None, None, None)
            return y.reshape(-1, self.dim_out)
        out = torch.empty(*self.data_shape, self.dim_out, dtype=self._dtype(), device=self._device())
        self._render_block(0, h0, mods, chunk_size, out, [0] * self.dim_in)
        return out.reshape(-1, self.dim_out)

    def _render_block(
        self,
        i: int,
        h: torch.Tensor,
        mods: list[torch.Tensor],
        chunk: int | None,
        out: torch.Tensor | None,
        starts: list[int] | None,
    ) -> torch.Tensor | None:
        """``h``: hidden ``h_i`` of a block of level-``i`` cells, shape ``(r_0, ..., r_{D-1}, width)`` starting at
        cell ``starts``. Returns the block's outputs (no ``out``) or writes them into ``out``."""
        rows = list(h.shape[:-1])
        if i == self.n_levels - 1:
            y = self.out(h)  # the output layer on the N_{L-1} = prod S_a points
            if out is None:
                return y
            out[tuple(slice(s, s + r) for s, r in zip(starts, rows))] = y
            return None
        nb = [self.bases[a][i + 1] for a in range(self.dim_in)]
        n_next = math.prod(rows) * math.prod(nb)
        if chunk is not None and n_next > chunk and max(rows) > 1:
            a = next(k for k, r in enumerate(rows) if r > 1)
            pieces = min(rows[a], math.ceil(n_next / chunk))
            offset = 0
            for piece in torch.tensor_split(h, pieces, dim=a):
                st = list(starts)
                st[a] += offset
                offset += piece.shape[a]
                self._render_block(i, piece, mods, chunk, out, st)
            return None
        pre = self._omega(i) * self.layers[i](h)  # omega0 (W_i h_i + b_i) once per level-i cell (shared)
        d = self.dim_in
        pre = pre.reshape([x for r in rows for x in (r, 1)] + [self.hidden])
        mod = mods[i].reshape([x for b in nb for x in (1, b)] + [self.hidden])
        # Eq. (3) with sharing: tile the cell's pre-activation B_{a,i+1} times per axis and add M_i(c_hat_{i+1})
        z = pre + mod  # the only full-size arithmetic of the level, then the sine (in place when no grad)
        h_next = (z.sin_() if not torch.is_grad_enabled() else torch.sin(z)).reshape(
            [rows[a] * nb[a] for a in range(d)] + [self.hidden]
        )
        self.last_render_peak_cells = max(self.last_render_peak_cells, n_next)
        next_starts = None if starts is None else [starts[a] * nb[a] for a in range(d)]
        return self._render_block(i + 1, h_next, mods, chunk, out, next_starts)


class SIREN(_Pretrained, nn.Module):
    """The SIREN baseline (Sitzmann et al. 2020) on the same integer-coordinate interface as :class:`ASMR`.

    ``n_layers`` linear layers: ``n_layers - 1`` sine layers of width ``hidden`` and a linear output. Integer
    coordinates are mapped per axis to ``x_a = 2 p_a / (S_a - 1) - 1`` in [-1, 1], so non-square grids are
    normalised correctly (the official code divides (row, col) by (W, H)).
    """

    def __init__(
        self,
        dim_in: int,
        dim_out: int,
        data_shape: Sequence[int],
        hidden: int = 256,
        n_layers: int = 4,
        omega0: float = 30.0,
        *,
        omega0_initial: float | None = None,
    ) -> None:
        super().__init__()
        dim_in = _check_int("dim_in", dim_in)
        dim_out = _check_int("dim_out", dim_out)
        hidden = _check_int("hidden", hidden)
        n_layers = _check_int("n_layers", n_layers, minimum=2)
        omega0 = _check_float("omega0", omega0)
        omega0_initial = omega0 if omega0_initial is None else _check_float("omega0_initial", omega0_initial)
        self.data_shape = tuple(_check_shape(data_shape, dim_in))
        self.dim_in, self.dim_out, self.hidden, self.n_layers = dim_in, dim_out, hidden, n_layers
        self.omega0, self.omega0_initial = omega0, omega0_initial
        widths = [dim_in] + [hidden] * (n_layers - 1)
        self.layers = nn.ModuleList([nn.Linear(widths[i], widths[i + 1]) for i in range(n_layers - 1)])
        for i, layer in enumerate(self.layers):
            siren_init_(layer, omega0, first=i == 0)
        self.out = siren_init_(nn.Linear(hidden, dim_out), omega0, first=False)

    def config(self) -> dict:
        return {
            "model": "siren",
            "dim_in": self.dim_in,
            "dim_out": self.dim_out,
            "data_shape": list(self.data_shape),
            "hidden": self.hidden,
            "n_layers": self.n_layers,
            "omega0": self.omega0,
            "omega0_initial": self.omega0_initial,
        }

    def normalize_coords(self, coords: torch.Tensor) -> torch.Tensor:
        """Integer ``(N, D)`` -> float ``(N, D)`` in [-1, 1] per axis (``x = 2 p / (S - 1) - 1``; 0 if S = 1)."""
        _check_coords(coords, self.data_shape)
        w = self.out.weight
        size = torch.tensor(self.data_shape, dtype=w.dtype, device=w.device)
        p = coords.to(device=w.device)
        if p.numel() and (bool((p < 0).any()) or bool((p >= size.to(p.dtype)).any())):
            raise InputError(
                f"coords out of range: each axis a needs 0 <= p < S_a with S = {self.data_shape}"
            )
        denom = torch.clamp(size - 1, min=1)
        return torch.where(
            size > 1, 2 * p.to(w.dtype) / denom - 1, torch.zeros((), dtype=w.dtype, device=w.device)
        )

    def forward(self, coords: torch.Tensor) -> torch.Tensor:
        """Integer ``coords`` ``(N, D)`` -> ``(N, dim_out)``."""
        h = self.normalize_coords(coords)
        for i, layer in enumerate(self.layers):
            z = layer(h).mul_(
                self.omega0_initial if i == 0 else self.omega0
            )  # in place: same speed-ups as ASMR
            h = z.sin_() if not torch.is_grad_enabled() else torch.sin(z)
        return self.out(h)

    def render(self, chunk_size: int | None = None) -> torch.Tensor:
        """The whole grid, ``(prod S_a, dim_out)`` in row-major order, ``chunk_size`` points per forward."""
        coords = grid_coords(self.data_shape, device=self.out.weight.device)
        if chunk_size is None:
            return self(coords)
        chunk_size = _check_int("chunk_size", chunk_size, maximum=2**40)
        return torch.cat([self(c) for c in torch.split(coords, chunk_size)])


def build_model(config: dict) -> ASMR | SIREN:
    """Rebuild a model from its :meth:`config` dict (as stored in a checkpoint)."""
    if not isinstance(config, dict):
        raise InputError(f"config must be the dict model.config() returns, got {describe(config)}")
    cfg = dict(config)
    kind = cfg.pop("model", None)
    try:
        if kind == "asmr":
            return ASMR(**cfg)
        if kind == "siren":
            return SIREN(**cfg)
    except TypeError as e:
        raise InputError(f"config does not describe a {kind} model ({e})") from None
    raise InputError(f"config['model'] must be 'asmr' or 'siren', got {kind!r}")
