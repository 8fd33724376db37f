"""The paper's quantities: Lipschitz proxies, the Grönwall factor, the generalisation bound's terms and the
risk decomposition into sampling-induced and approximation bias. The paper's section, theorem and remark numbers
could not be checked offline, so results are named, not numbered.

Notation: ``L_x = sup ||x~^D||_{1-var}`` (the largest total variation over the data), ``Lip(G_psi)`` the
Lipschitz constant of the vector field, ``M_G = sup ||G_psi||``, ``n`` samples, a loss bounded by ``B``.
Where the paper's constants could not be checked, a quantity carries ``form_only=True``: its *growth* in
``L_x``, ``Lip`` and ``n`` is the paper's, its constant is set to 1.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from dataclasses import dataclass

import torch
from torch import nn

from iclr24.paperkit.errors import InputError

from .model import VectorField

__all__ = [
    "GeneralizationBound",
    "RiskDecomposition",
    "approximation_bias_bound",
    "empirical_lipschitz",
    "generalization_bound",
    "gronwall_factor",
    "lipschitz_upper",
    "risk_decomposition",
    "sampling_bias_bound",
    "state_bound",
    "vector_field_sup",
]


def _nonneg(name: str, v: object) -> float:
    if isinstance(v, torch.Tensor):
        v = float(v)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
        raise InputError(f"{name} must be a finite number >= 0, got {v!r}")
    return float(v)


def _check_field(vf: object) -> VectorField:
    if not isinstance(vf, VectorField):
        raise InputError(f"expected a VectorField (an NCDE's .vector_field), got {type(vf).__name__}")
    return vf


@torch.no_grad()
def lipschitz_upper(vector_field: VectorField) -> float:
    """``Lip(G_psi) <= prod_j ||A_j||_2`` (tanh is 1-Lipschitz), for ``z -> vec G_psi(z)`` in Euclidean norms, which
    also bounds the operator norm of ``G_psi(z) - G_psi(z')`` acting on increments."""
    vf = _check_field(vector_field)
    out = 1.0
    for layer in vf.layers:
        # generalisation bound (Lipschitz constant of the vector field): Lip(G_psi) <= prod_j ||A_j||_op
        out *= float(torch.linalg.matrix_norm(layer.weight.double(), ord=2))
    return out


@torch.no_grad()
def empirical_lipschitz(
    vector_field: VectorField, z: torch.Tensor, *, pairs: int = 2048, seed: int = 0
) -> float:
    """Largest ``||G(z) - G(z')||_F / ||z - z'||`` over random pairs near the points ``z (N, p)`` (a lower bound
    on the true Lipschitz constant, to compare with :func:`lipschitz_upper`)."""
    vf = _check_field(vector_field)
    if z.dim() != 2 or z.shape[1] != vf.hidden:
        raise InputError(f"z must have shape (N, {vf.hidden}), got {tuple(z.shape)}")
    g = torch.Generator().manual_seed(seed)
    w = vf.layers[0].weight
    z = z.to(w.dtype)
    i = torch.randint(0, z.shape[0], (pairs,), generator=g)
    scale = torch.logspace(-3, 0, pairs, dtype=w.dtype)[torch.randperm(pairs, generator=g)]
    a = z[i]
    b = a + scale[:, None] * torch.randn(pairs, vf.hidden, generator=g, dtype=w.dtype)
    num = (vf(a) - vf(b)).flatten(1).norm(dim=1)
    return float((num / (a - b).norm(dim=1)).max())


def vector_field_sup(vector_field: VectorField) -> float:
    """``M_G = sup_z ||G_psi(z)||_F <= sqrt(p d)``: every entry is a tanh, so in (-1, 1)."""
    vf = _check_field(vector_field)
    return math.sqrt(vf.hidden * vf.control_dim)


def state_bound(z0_norm: float, vector_field_sup: float, total_variation: float) -> float:
    """``||z_t|| <= ||z_0|| + M_G ||x~^D||_{1-var}`` for every ``t`` (exact: ``||dz|| <= ||G|| ||dx||``)."""
    # generalisation bound (state bound): ||z_t|| <= ||z_0|| + M_G ||x~||_{1-var}
    return _nonneg("z0_norm", z0_norm) + _nonneg("vector_field_sup", vector_field_sup) * _nonneg(
        "total_variation", total_variation
    )


def gronwall_factor(lipschitz: float, total_variation: float) -> float:
    """``exp(Lip(G) * ||x~^D||_{1-var})``: how far two CDE solutions driven by the same path can drift apart."""
    # generalisation bound (Grönwall factor): exp(K_2^D) with K_2^D = Lip(G_psi) L_x
    k = _nonneg("lipschitz", lipschitz) * _nonneg("total_variation", total_variation)
    if k > 700:  # exp overflows float64
        raise InputError(f"Lip(G) * total variation = {k:.3g} is too large: exp({k:.3g}) overflows")
    return math.exp(k)


@dataclass(frozen=True)
class GeneralizationBound:
    """Terms of the bound ``R(theta) - R^_n(theta) <= C_q K_1^D exp(K_2^D) / sqrt(n) + B sqrt(log(1/delta) / (2n))``.

    ``complexity`` is ``form_only`` (``C_q = 1``); ``concentration`` is the exact McDiarmid term.
    ``log10_complexity`` is the same term in log10, finite where ``exp(K_2^D)`` overflows a float (``complexity``
    and ``total`` are then ``inf``: the bound is vacuous)."""

    k1: float
    k2: float
    complexity: float
    concentration: float
    total: float
    log10_complexity: float = -math.inf
    form_only: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


def generalization_bound(
    *,
    lipschitz: float,
    max_total_variation: float,
    n: int,
    readout_norm: float,
    embed_norm: float = 1.0,
    max_initial_value: float = 1.0,
    vector_field_sup: float = 1.0,
    loss_lipschitz: float = 1.0,
    loss_bound: float = 1.0,
    delta: float = 0.05,
) -> GeneralizationBound:
    """The generalization bound's terms for an NCDE class (the paper's generalisation bound, form).

    ``K_2^D = Lip(G) L_x`` (Grönwall exponent), ``K_1^D = Lip(loss) ||theta|| (||zeta|| |x_0| + M_G L_x)`` (the
    scale of ``theta^T z_1``); larger total variation, as for rough paths sampled finely, loosens the bound."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"n must be an int >= 1 (number of training series), got {n!r}")
    delta = _nonneg("delta", delta)
    if not 0 < delta < 1:
        raise InputError(f"delta must be in (0, 1), got {delta}")
    lx = _nonneg("max_total_variation", max_total_variation)
    k2 = _nonneg("lipschitz", lipschitz) * lx
    k1 = _nonneg("loss_lipschitz", loss_lipschitz) * _nonneg("readout_norm", readout_norm)
    k1 *= (
        _nonneg("embed_norm", embed_norm) * _nonneg("max_initial_value", max_initial_value)
        + _nonneg("vector_field_sup", vector_field_sup) * lx
    )
    # generalisation bound, complexity term (form, C_q = 1): C_q K_1^D exp(K_2^D) / sqrt(n), in log10 first (exp overflows past K_2 ~ 709)
    log10_c = (math.log10(k1) + k2 / math.log(10) - 0.5 * math.log10(n)) if k1 > 0 else -math.inf
    complexity = 10.0**log10_c if log10_c < 300 else math.inf
    # generalisation bound, concentration term: B sqrt(log(1/delta) / (2n))  (McDiarmid)
    concentration = _nonneg("loss_bound", loss_bound) * math.sqrt(math.log(1 / delta) / (2 * n))
    return GeneralizationBound(k1, k2, complexity, concentration, complexity + concentration, log10_c)


def sampling_bias_bound(
    *, vector_field_sup: float, lipschitz: float, tv_path: float, tv_interpolation: float, sup_distance: float
) -> float:
    """Sampling-bias bound by flow continuity (form): ``||z_1(x) - z_1(x~^D)|| <~ M_G exp(L_G (||x||_1var + ||x~^D||_1var))
    ||x - x~^D||_inf``; ``O(|D|)`` when ``x`` has a Lipschitz derivative."""
    # sampling-bias bound (form): M_{G*} exp(L_{G*}(||x||_{1-var} + ||x~^D||_{1-var})) ||x - x~^D||_inf
    return (
        _nonneg("vector_field_sup", vector_field_sup)
        * math.exp(
            _nonneg("lipschitz", lipschitz)
            * (_nonneg("tv_path", tv_path) + _nonneg("tv_interpolation", tv_interpolation))
        )
        * _nonneg("sup_distance", sup_distance)
    )


def approximation_bias_bound(
    *,
    total_variation: float,
    lipschitz: float,
    field_error: float,
    readout_error: float = 0.0,
    init_error: float = 0.0,
) -> float:
    """Approximation-bias bound (form): ``||x~^D||_1var exp(L ||x~^D||_1var) sup_B ||G* - G_psi|| + readout + initial-condition``."""
    tv = _nonneg("total_variation", total_variation)
    # approximation-bias bound (form): ||x~||_{1-var} exp(L ||x~||_{1-var}) sup ||G* - G_psi|| + readout + init terms
    return (
        tv * math.exp(_nonneg("lipschitz", lipschitz) * tv) * _nonneg("field_error", field_error)
        + _nonneg("readout_error", readout_error)
        + _nonneg("init_error", init_error)
    )


@dataclass(frozen=True)
class RiskDecomposition:
    sampling_bias: float
    approximation_bias: float
    excess_risk_bound: float

    def to_dict(self) -> dict:
        return asdict(self)


def risk_decomposition(sampling_bias: float, approximation_bias: float) -> RiskDecomposition:
    """Risk decomposition: excess risk <= 2 * sampling bias + 2 * approximation bias (well-specified model)."""
    sb, ab = _nonneg("sampling_bias", sampling_bias), _nonneg("approximation_bias", approximation_bias)
    # risk decomposition: R(theta^) - R(theta*) <= 2 (sampling bias) + 2 (approximation bias)
    return RiskDecomposition(sb, ab, 2 * sb + 2 * ab)


def readout_norm(module: nn.Module) -> float:
    """``||theta||_2`` of an NCDE's readout (largest row norm for several outputs)."""
    w = module.readout.weight.detach()
    return float(w.norm(dim=1).max())
