"""The FIF maximum-likelihood surrogate and the exact log-likelihood, as small pure functions.

Notation (paper Sec. 3-4): data ``x in R^D``, latent ``z in R^d`` with ``d < D``; encoder ``f_theta: R^D -> R^d``,
decoder ``g_phi: R^d -> R^D``; Jacobians ``J_f = f'(x)`` (d x D) and ``J_g = g'(z)`` (D x d); latent ``p_Z = N(0, I_d)``.
Equations are labelled as in the paper's sections (the numbers below are this package's, listed in the README):

    (E1) injective change of variables, Sec. 3:  log p(x) = log p_Z(z) - 1/2 log det(J_g^T J_g),   z = f(x)
    (E2) encoder form, Sec. 4.1:                 log p(x) = log p_Z(z) + 1/2 log det(J_f J_f^T)   (J_f = J_g^+)
    (E3) gradient, Sec. 4.1:   d[1/2 log det(J_g^T J_g)] = tr(J_g^+ dJ_g) ~ tr(SG(J_f) dJ_g)
    (E4) Hutchinson with orthogonal probes:     tr(A) = E_v[v^T A v],  v = sqrt(d) Q[:, k],  Q from qr(randn(d, K))
    (E5) surrogate, stable objective (Sec. 4.2, official ``fff/loss.py``):
             S(x) = 1/K sum_k (v_k^T J_f(x)) . SG(J_g(f(x)) v_k)          J_f evaluated at the data point x
    (E5n) the naive variant the paper warns against (Sec. 4.2; not in the official code), for the ablation:
             S(x) = 1/K sum_k (v_k^T J_f(x^)) . SG(J_g(f(x)) v_k),   x^ = SG(g(f(x)))   J_f at the reconstruction
    (E6) loss:  L(x) = beta ||x~ - g(f(x~))||^2 - log p_Z(f(x~)) - S(x~),   x~ = x + sigma eps  (SoftFlow noise)
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.autograd.forward_ad import dual_level
from torch.autograd.forward_ad import make_dual
from torch.autograd.forward_ad import unpack_dual

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_choice
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe

__all__ = [
    "GRADIENT_SIDES",
    "JACOBIAN_POINTS",
    "JVP_MODES",
    "SurrogateOutput",
    "sample_v",
    "volume_change_surrogate",
    "standard_normal_log_prob",
    "decoder_jacobian",
    "encoder_jacobian",
    "log_det_gram",
    "exact_log_prob",
    "decoder_geometry",
    "z_marginal_w1",
]

Transform = Callable[[torch.Tensor], torch.Tensor]
GRADIENT_SIDES = ("encoder", "decoder")
JVP_MODES = ("double_vjp", "forward")
JACOBIAN_POINTS = ("data", "reconstruction")


@dataclass
class SurrogateOutput:
    """``surrogate`` (B,), latent ``z`` (B, d) and reconstruction ``x1`` (B, D) of one surrogate evaluation."""

    surrogate: torch.Tensor
    z: torch.Tensor
    x1: torch.Tensor


def _check_k(hutchinson_samples: object, latent_dim: int) -> int:
    k = hutchinson_samples
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"hutchinson_samples must be an int >= 1, got {k!r}")
    if k > latent_dim:
        raise InputError(
            f"hutchinson_samples must be <= the latent dimension d={latent_dim} (orthogonal probes), got {k}"
        )
    return k


def _check_net_input(x: object, net: object, name: str) -> torch.Tensor:
    """``x`` a non-empty floating (B, ...) tensor in the dtype of ``net``'s weights (when it has any)."""
    check_tensor(x, name, kind="float")
    if x.dim() < 2:
        raise InputError(f"{name} must be a batch (B, ...), got {describe(x)}")
    if not callable(net):
        raise InputError(f"the encoder and decoder must be callables (nn.Modules), got {describe(net)}")
    w = next(iter(net.parameters()), None) if isinstance(net, torch.nn.Module) else None
    if w is not None and w.dtype != x.dtype:
        raise InputError(f"{name} is {x.dtype} but the network's weights are {w.dtype}: convert one")
    return x


@contextlib.contextmanager
def _net_errors(what: str):
    """torch's shape errors inside the user's encoder/decoder, as one InputError line."""
    try:
        yield
    except RuntimeError as e:
        if isinstance(e, torch.OutOfMemoryError):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"{what}: the encoder/decoder cannot take this input ({first})") from None


def _guarded(what: str):
    """Decorator of the estimators taking ``(x, encode, decode, ...)``: the input checked first, torch's shape errors
    inside the user's networks turned into one InputError line."""

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(x, encode, decode, *args, **kwargs):
            _check_net_input(x, encode, "x")
            if not callable(decode):
                raise InputError(f"decode must be a callable (the decoder), got {describe(decode)}")
            with _net_errors(what):
                return fn(x, encode, decode, *args, **kwargs)

        return wrapper

    return deco


def sample_v(
    z: torch.Tensor, hutchinson_samples: int = 1, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Probe vectors of shape ``(B, d, K)``: scaled orthonormal columns, so ``E[v v^T] = I`` and ``||v||^2 = d``.

    With ``K = d`` the probes span R^d and ``1/K sum_k v_k^T A v_k = tr(A)`` exactly.
    """
    check_tensor(z, "z", kind="float", allow_empty=True)
    if z.ndim != 2:
        raise InputError(f"z must have shape (batch, latent_dim), got {tuple(z.shape)}")
    b, d = z.shape
    k = _check_k(hutchinson_samples, d)
    g = torch.randn(b, d, k, generator=generator, dtype=z.dtype).to(z.device)
    # Eq. (E4): v = sqrt(d) Q[:, k],  Q = qr(randn(d, K)).Q  ->  E[v v^T] = I
    q = torch.linalg.qr(g).Q
    return q * math.sqrt(d)


@_guarded("volume_change_surrogate")
def volume_change_surrogate(
    x: torch.Tensor,
    encode: Transform,
    decode: Transform,
    hutchinson_samples: int = 1,
    gradient_side: str = "encoder",
    generator: torch.Generator | None = None,
    v: torch.Tensor | None = None,
    jvp: str = "double_vjp",
    jacobian_at: str = "data",
) -> SurrogateOutput:
    """The volume-change surrogate whose *gradient* is that of the log-det term of ``log p(x)``.

    ``gradient_side="encoder"`` (official code): ``S = 1/K sum_k (v^T J_f(x)) . SG(J_g v)``; its value estimates
    ``tr(J_f J_g)`` (= d at a perfect pseudo-inverse), its gradient flows into the encoder only and equals
    ``grad 1/2 log det(J_f J_f^T)`` when ``J_g = J_f^+``.
    ``gradient_side="decoder"`` (the paper's Sec. 4.1 derivation): ``S = -1/K sum_k SG(v^T J_f(x)) . (J_g v)``,
    whose gradient is ``grad[-1/2 log det(J_g^T J_g)] ~ -tr(SG(J_f) dJ_g)``; it flows into the decoder (and into
    the encoder through ``z = f(x)``).

    ``jvp``: how ``u = J_g v`` is computed. ``"forward"`` is the official dual-number pass through the decoder;
    ``"double_vjp"`` (default) takes the VJP of the VJP ``w -> J_g^T w`` (same value; forward-mode ``Linear`` runs
    through Python decompositions in torch 2.x, so this is about 30% cheaper per training step on CPU).

    ``jacobian_at``: where ``J_f`` is evaluated. ``"data"`` (default): at the input ``x``, the paper's stable
    objective and the official code. ``"reconstruction"``: at ``x^ = g(f(x))`` held fixed (stop-gradient), the naive
    objective of the paper's ablation (Sec. 4.2), whose manifold curvature grows over training at small noise; the
    two differ only in that evaluation point.
    """
    check_choice(jacobian_at, "jacobian_at", JACOBIAN_POINTS)
    check_choice(gradient_side, "gradient_side", GRADIENT_SIDES)
    check_choice(jvp, "jvp", JVP_MODES)
    if not x.requires_grad:
        x = x.detach().requires_grad_(True)
    z = encode(x)
    if v is None:
        v = sample_v(z, hutchinson_samples, generator)
    elif v.ndim != 3 or v.shape[:2] != z.shape:
        raise InputError(
            f"v must have shape (batch, latent_dim, K) = {(*z.shape, 'K')}, got {tuple(v.shape)}"
        )
    k_total = v.shape[-1]
    surrogate = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device)
    x1 = None
    jt_w = w = None
    if jvp == "double_vjp":
        x1 = decode(z)
        # w -> J_g^T w is linear in w; its VJP with v is J_g v (kept differentiable for the decoder side)
        w = torch.zeros_like(x1, requires_grad=True)
        (jt_w,) = torch.autograd.grad(x1, z, w, create_graph=True)
    # the point where J_f is evaluated: x (stable) or the fixed reconstruction x^ = SG(g(f(x))) (naive)
    x_at, z_at = x, z
    if jacobian_at == "reconstruction":
        x_hat = decode(z) if x1 is None else x1
        x_at = x_hat.detach().requires_grad_(True)
        z_at = encode(x_at)
    for k in range(k_total):
        vk = v[..., k]
        if jvp == "forward":
            # u = J_g(z) v by forward-mode AD (one dual pass through the decoder, as the official code)
            with dual_level():
                x1_dual = decode(make_dual(z, vk))
                x1, u = unpack_dual(x1_dual)
        else:
            (u,) = torch.autograd.grad(
                jt_w, w, vk, create_graph=gradient_side == "decoder", retain_graph=True
            )
        # s = v^T J_f(x) (or v^T J_f(x^), the naive variant) by backward-mode AD, kept differentiable
        (s,) = torch.autograd.grad(z_at, x_at, vk, create_graph=gradient_side == "encoder", retain_graph=True)
        if gradient_side == "encoder":
            # Eq. (E5): S = 1/K sum_k (v_k^T J_f(x)) . SG(J_g(z) v_k)   (Eq. (E5n): J_f at x^ instead of x)
            surrogate = surrogate + (s * u.detach()).flatten(1).sum(1) / k_total
        else:
            # Eq. (E3): grad 1/2 log det(J_g^T J_g) ~ tr(SG(J_f) dJ_g)  ->  S = -1/K sum_k SG(v_k^T J_f) . (J_g v_k)
            surrogate = surrogate - (s.detach() * u).flatten(1).sum(1) / k_total
    if x1 is None:  # K >= 1 is guaranteed; this keeps type checkers quiet
        x1 = decode(z)
    return SurrogateOutput(surrogate, z, x1)


def standard_normal_log_prob(z: torch.Tensor) -> torch.Tensor:
    """``log N(z; 0, I_d)`` per row: ``-1/2 ||z||^2 - d/2 log(2 pi)``."""
    d = z.shape[-1]
    return -0.5 * (z**2).sum(-1) - 0.5 * d * math.log(2 * math.pi)


def decoder_jacobian(z: torch.Tensor, decode: Transform) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x1, J_g)``: the decoder output (B, D) and its Jacobian (B, D, d) from ``d`` forward-mode passes."""
    cols = []
    x1 = None
    for j in range(z.shape[1]):
        e = torch.zeros_like(z)
        e[:, j] = 1.0
        with dual_level():
            x1_dual = decode(make_dual(z, e))
            x1, col = unpack_dual(x1_dual)
        cols.append(col.flatten(1))
    return x1.flatten(1), torch.stack(cols, dim=-1)


def encoder_jacobian(
    x: torch.Tensor, encode: Transform, create_graph: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(z, J_f)``: the encoder output (B, d) and its Jacobian (B, d, D) from ``d`` backward passes.

    With ``create_graph=True`` the Jacobian stays differentiable (exact-ML training)."""
    if not x.requires_grad:
        x = x.detach().requires_grad_(True)
    with torch.enable_grad():
        z = encode(x)
        rows = []
        for i in range(z.shape[1]):
            e = torch.zeros_like(z)
            e[:, i] = 1.0
            (r,) = torch.autograd.grad(z, x, e, create_graph=create_graph, retain_graph=True)
            rows.append(r.flatten(1))
    return z, torch.stack(rows, dim=1)


def log_det_gram(j: torch.Tensor) -> torch.Tensor:
    """``1/2 log det(J^T J)`` for J of shape (B, D, d) (tall) or ``1/2 log det(J J^T)`` for (B, d, D) (wide)."""
    gram = j.transpose(1, 2) @ j if j.shape[1] >= j.shape[2] else j @ j.transpose(1, 2)
    return 0.5 * torch.linalg.slogdet(gram).logabsdet


@_guarded("exact_log_prob")
def exact_log_prob(
    x: torch.Tensor, encode: Transform, decode: Transform, jacobian_target: str = "decoder"
) -> dict[str, torch.Tensor]:
    """Exact ``log p(x)`` on the learned manifold (small d): returns ``z``, ``x1``, ``log_prob`` and the two forms.

    ``jacobian_target``: ``"decoder"`` (Eq. E1, official default for evaluation), ``"encoder"`` (Eq. E2) or
    ``"both"`` (computes both; ``log_prob`` is the decoder one, as in the official ``exact_log_prob``).
    """
    if jacobian_target not in ("decoder", "encoder", "both"):
        raise InputError(f"jacobian_target must be 'decoder', 'encoder' or 'both', got {jacobian_target!r}")
    if isinstance(x, torch.Tensor) and x.is_floating_point() and not torch.isfinite(x).all():
        bad = torch.nonzero(~torch.isfinite(x.reshape(x.shape[0], -1)).all(1)).flatten().tolist()
        raise InputError(
            f"x contains NaN or inf in {len(bad)} of {x.shape[0]} rows (first: {bad[:5]}); a likelihood of a "
            "non-finite point is undefined: drop or impute those rows first"
        )
    out: dict[str, torch.Tensor] = {}
    if jacobian_target in ("encoder", "both"):
        z, jf = encoder_jacobian(x, encode)
        z = z.detach()
        # Eq. (E2): log p(x) = log p_Z(z) + 1/2 log det(J_f J_f^T)
        out["log_prob_encoder"] = standard_normal_log_prob(z) + log_det_gram(jf.detach())
    else:
        with torch.no_grad():
            z = encode(x)
    out["z"] = z
    if jacobian_target in ("decoder", "both"):
        with torch.no_grad():
            x1, jg = decoder_jacobian(z, decode)
        # Eq. (E1): log p(x) = log p_Z(z) - 1/2 log det(J_g^T J_g)
        out["log_prob_decoder"] = standard_normal_log_prob(z) - log_det_gram(jg)
        out["x1"] = x1
        out["log_prob"] = out["log_prob_decoder"]
    else:
        with torch.no_grad():
            out["x1"] = decode(z)
        out["log_prob"] = out["log_prob_encoder"]
    return out


def z_marginal_w1(z: torch.Tensor) -> float:
    """1-D Wasserstein-1 distance of the pooled latent marginal to N(0, 1) (the official ``z 1D-Wasserstein-1``),
    computed against the N(0,1) quantiles instead of a random Gaussian draw, so it has no sampling noise."""
    flat = z.detach().reshape(-1).double().sort().values
    n = flat.numel()
    if n == 0:
        raise InputError("z is empty")
    p = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    q = math.sqrt(2.0) * torch.erfinv(2 * p - 1)
    return float((flat - q).abs().mean())


def decoder_geometry(decode: Transform, z: torch.Tensor) -> dict[str, torch.Tensor]:
    """How stretched and bent the learned manifold is at latent points ``z`` (B, d): ``jacobian_norm`` (B,), the
    spectral norm ``||J_g(z)||_2``, and for ``d = 1`` ``curvature`` (B,), the curvature of the curve ``g`` at ``z``,
    ``kappa = sqrt(|g'|^2 |g''|^2 - (g' . g'')^2) / |g'|^3`` (needs a twice-differentiable decoder, e.g. SiLU).
    The naive objective's failure (paper Sec. 4.2) shows as these growing over training at small noise."""
    if not isinstance(z, torch.Tensor) or z.ndim != 2 or z.shape[0] == 0:
        raise InputError(
            f"z must be a non-empty (batch, latent_dim) tensor, got {getattr(z, 'shape', type(z))}"
        )
    if not torch.isfinite(z).all():
        raise InputError("z contains NaN or inf")
    with torch.no_grad():
        _, jg = decoder_jacobian(z.detach(), decode)
    out = {"jacobian_norm": torch.linalg.matrix_norm(jg, ord=2)}
    if z.shape[1] == 1:
        with torch.enable_grad():
            zz = z.detach().clone().requires_grad_(True)
            x = decode(zz).flatten(1)
            g1 = torch.stack(
                [
                    torch.autograd.grad(x[:, i].sum(), zz, create_graph=True)[0][:, 0]
                    for i in range(x.shape[1])
                ],
                1,
            )
            g2 = torch.stack(
                [
                    torch.autograd.grad(g1[:, i].sum(), zz, retain_graph=True, allow_unused=True)[0]
                    if g1[:, i].requires_grad
                    else torch.zeros_like(zz)
                    for i in range(x.shape[1])
                ],
                1,
            )[..., 0]
        g1, g2 = g1.detach(), g2.detach()
        speed2 = (g1**2).sum(1)
        cross2 = (speed2 * (g2**2).sum(1) - (g1 * g2).sum(1) ** 2).clamp_min(0)
        out["curvature"] = cross2.sqrt() / speed2.clamp_min(1e-30) ** 1.5
    return out
