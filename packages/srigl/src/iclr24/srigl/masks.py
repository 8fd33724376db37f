"""Pure tensor functions of SRigL and RigL: layer densities, constant fan-in masks, the drop schedule, neuron
ablation and the prune/regrow updates.

Every weight is seen as a matrix ``[out, fan_in]`` (a Conv2d weight ``[out, in, kh, kw]`` as ``[out, in*kh*kw]``):
a *neuron* is a row. Equation numbers refer to Lasby et al., "Dynamic Sparse Training with Structured Sparsity"
(ICLR 2024, arXiv 2305.02299) and to Evci et al., "Rigging the Lottery" (ICML 2020) for the shared RigL parts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe

__all__ = [
    "ablate_neurons",
    "cosine_drop_fraction",
    "constant_fan_in",
    "erk_densities",
    "is_update_step",
    "layer_budget",
    "random_constant_fan_in_mask",
    "random_unstructured_mask",
    "rigl_update",
    "srigl_update",
    "topk_mask",
    "uniform_densities",
    "UpdateResult",
]


def layer_budget(numel: int, density: float) -> int:
    """The number of weights a layer may keep: ``floor(numel * (1 - S_l))`` (``density = 1 - S_l``).

    A tiny tolerance keeps ``16384 * 0.1`` at 1638 despite binary floating point."""
    check_int(numel, "numel", minimum=0)
    check_float(density, "density", minimum=0, maximum=1)
    # Sec. 4 (SRigL), layer budget: |W_l|_0 <= floor(numel_l * (1 - S_l))
    return int(math.floor(numel * density + 1e-9))


def constant_fan_in(budget: int, n_active: int, fan_in: int) -> int:
    """SRigL's constant fan-in: ``k = floor(budget / n_active)``, capped at the dense fan-in.

    ``budget`` is :func:`layer_budget`, ``n_active`` the number of non-ablated neurons (rows)."""
    check_int(budget, "budget", minimum=0)
    check_int(n_active, "n_active", minimum=0)
    check_int(fan_in, "fan_in", minimum=1)
    if n_active <= 0:
        return 0
    # Sec. 4 (SRigL), constant fan-in: k_l = floor(budget_l / n_active_l), every active neuron has k_l inputs
    return min(fan_in, budget // n_active)


def uniform_densities(shapes: Sequence[Sequence[int]], density: float) -> list[float]:
    """Every layer gets the same density ``1 - S``."""
    return [float(density)] * len(shapes)


def erk_densities(shapes: Sequence[Sequence[int]], density: float, power: float = 1.0) -> list[float]:
    """Erdos-Renyi-Kernel layer densities (RigL, Sec. 3 "Sparsity distribution").

    Raw probability of layer l: ``p_l = (sum(shape_l) / prod(shape_l)) ** power``; density ``eps * p_l`` with
    ``eps`` solved so that ``sum_l d_l * numel_l = density * sum_l numel_l``. Layers with ``eps * p_l > 1`` become
    dense and ``eps`` is re-solved over the rest.

    shapes: weight shapes, e.g. ``[(256, 64), (256, 256), (10, 256)]``. Returns one density per layer in (0, 1].
    """
    if isinstance(shapes, str | bytes) or not shapes:
        raise InputError(f"shapes must be a non-empty list of weight shapes, got {describe(shapes)}")
    for s in shapes:
        if (
            isinstance(s, str | bytes)
            or not s
            or not all(check_int(d, "a weight dimension", minimum=1) for d in s)
        ):
            raise InputError(f"every shape must be a non-empty sequence of sizes >= 1, got {s!r}")
    check_float(density, "density", minimum=0, maximum=1, open_min=True)
    check_float(power, "power", minimum=0)
    numels = [math.prod(s) for s in shapes]
    raw = [(sum(s) / math.prod(s)) ** power for s in shapes]
    total = sum(numels)
    dense: set[int] = set()
    while True:
        budget = density * total - sum(numels[i] for i in dense)
        denom = sum(raw[i] * numels[i] for i in range(len(shapes)) if i not in dense)
        if denom <= 0:  # every layer dense
            return [1.0] * len(shapes)
        eps = budget / denom
        over = [i for i in range(len(shapes)) if i not in dense and eps * raw[i] > 1.0]
        if not over:
            return [1.0 if i in dense else eps * raw[i] for i in range(len(shapes))]
        dense.update(over)


def random_constant_fan_in_mask(
    out_features: int, fan_in: int, k: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """A ``[out, fan_in]`` bool mask with exactly ``k`` random ones per row (a random permutation per row)."""
    _check_layer_shape(out_features, fan_in)
    check_int(k, "k")
    if not 0 <= k <= fan_in:
        raise InputError(f"k must be in [0, fan_in={fan_in}], got {k}")
    order = torch.rand(out_features, fan_in, generator=generator).argsort(dim=1)
    mask = torch.zeros(out_features, fan_in, dtype=torch.bool)
    mask.scatter_(1, order[:, :k], True)
    return mask


def random_unstructured_mask(
    out_features: int, fan_in: int, n_ones: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """A ``[out, fan_in]`` bool mask with ``n_ones`` ones placed uniformly at random over the whole layer."""
    _check_layer_shape(out_features, fan_in)
    check_int(n_ones, "n_ones")
    numel = out_features * fan_in
    if not 0 <= n_ones <= numel:
        raise InputError(f"n_ones must be in [0, {numel}], got {n_ones}")
    flat = torch.zeros(numel, dtype=torch.bool)
    flat[torch.randperm(numel, generator=generator)[:n_ones]] = True
    return flat.view(out_features, fan_in)


def cosine_drop_fraction(step: int, alpha: float, t_end: int) -> float:
    """RigL's cosine decay of the drop fraction: ``f(t) = alpha/2 * (1 + cos(pi * t / T_end))``."""
    check_float(step, "step", minimum=0)
    check_float(alpha, "alpha", minimum=0, maximum=1)
    check_float(t_end, "t_end", minimum=0, open_min=True)
    # Eq. (1) of Evci et al. (RigL): f_decay(t; alpha, T_end) = alpha / 2 * (1 + cos(t * pi / T_end))
    return alpha / 2.0 * (1.0 + math.cos(math.pi * step / t_end))


def is_update_step(step: int, delta_t: int, t_end: int) -> bool:
    """A mask update runs at step ``t`` iff ``t % delta_t == 0`` and ``0 < t < T_end``."""
    check_int(step, "step", minimum=0)
    check_int(delta_t, "delta_t", minimum=1)
    check_int(t_end, "t_end", minimum=0)
    # Alg. 1 (RigL), line "if t mod Delta T == 0 and t < T_end": update the masks
    return step > 0 and step % delta_t == 0 and step < t_end


def topk_mask(scores: torch.Tensor, n: int) -> torch.Tensor:
    """Bool mask (same shape as ``scores``) of the ``n`` largest entries over the whole tensor."""
    flat = torch.zeros(scores.numel(), dtype=torch.bool, device=scores.device)
    if n > 0:
        flat[torch.topk(scores.flatten(), k=min(n, scores.numel()), sorted=False).indices] = True
    return flat.view(scores.shape)


def _rowwise_topk_mask(scores: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Bool mask with the ``counts[r]`` largest entries of each row ``r`` of ``scores`` (stable on ties)."""
    order = scores.argsort(dim=1, descending=True, stable=True)
    ranks = torch.empty_like(order)
    ranks.scatter_(
        1, order, torch.arange(scores.shape[1], device=scores.device).expand_as(order).contiguous()
    )
    return ranks < counts.unsqueeze(1)


def ablate_neurons(
    weight: torch.Tensor,
    dense_grad: torch.Tensor,
    mask: torch.Tensor,
    n_keep: int,
    n_prune: int,
    gamma_sal: float,
    k0: int,
    budget: int,
) -> torch.Tensor:
    """SRigL's dynamic neuron ablation (Sec. 4, "Neuron ablation"). Returns bool ``[out]``: True = ablated.

    Salient weights: the top ``n_keep`` of ``|W|`` (over the active connections) together with the top ``n_prune``
    of ``|grad|``; ``c_i`` counts them in row ``i``. A row is ablated when ``c_i < thr`` with
    ``thr = max(1, floor(gamma_sal * k0))`` (``gamma_sal >= 1`` is an absolute count), ``k0`` the constant
    fan-in with no ablation. Safeguard: at least ``ceil(budget / fan_in)`` rows stay active so that the new fan-in
    never exceeds the dense fan-in (the official code uses ``floor``, which can ask for ``k > fan_in``).
    ``gamma_sal == 0`` disables ablation.

    weight, dense_grad, mask: ``[out, fan_in]``.
    """
    out, fan_in = _check_update(weight, dense_grad, mask)
    check_int(n_keep, "n_keep", minimum=0)
    check_int(n_prune, "n_prune", minimum=0)
    check_float(gamma_sal, "gamma_sal", minimum=0)
    check_int(k0, "k0", minimum=0)
    check_int(budget, "budget", minimum=0)
    if gamma_sal <= 0:
        return torch.zeros(out, dtype=torch.bool, device=weight.device)
    s_drop = torch.where(mask, weight.abs(), torch.full_like(weight, -1.0))
    salient = topk_mask(s_drop, n_keep) | topk_mask(dense_grad.abs(), n_prune)
    # Alg. 1 (SRigL), ablation: c_i = |{salient weights in neuron i}|, salient = TopK(|W|, n_keep) u TopK(|grad|, n_prune)
    counts = salient.sum(dim=1)
    # Threshold of salient weights per neuron: gamma_sal * k (a fraction) or gamma_sal itself (an absolute count).
    thr = int(gamma_sal) if gamma_sal >= 1 else max(1, int(math.floor(gamma_sal * k0)))
    min_neurons = min(out, max(1, math.ceil(budget / fan_in)))
    c_at_min = int(counts.sort(descending=True).values[min_neurons - 1])
    thr = min(thr, c_at_min)
    # Alg. 1 (SRigL): ablate neuron i iff c_i < gamma_sal * k
    return counts < thr


@dataclass(frozen=True)
class UpdateResult:
    """One layer's mask update: the new mask, the newly grown connections (set to zero), the ablated rows, the
    fan-in (``None`` for unstructured), and how many were dropped."""

    mask: torch.Tensor
    grown: torch.Tensor
    ablated: torch.Tensor
    fan_in: int | None
    n_prune: int


def _check_layer_shape(out_features: object, fan_in: object) -> None:
    check_int(out_features, "out_features", minimum=1, maximum=2**24)
    check_int(fan_in, "fan_in", minimum=1, maximum=2**24)
    if out_features * fan_in > 2**31:
        raise InputError(f"a {out_features} x {fan_in} mask is too large (over 2**31 entries)")


def _check_update(weight: object, dense_grad: object, mask: object) -> tuple[int, int]:
    """weight and dense_grad floating ``[out, fan_in]``, mask bool of the same shape: ``(out, fan_in)``."""
    check_tensor(weight, "weight", ndim=2)
    shape = tuple(weight.shape)
    check_tensor(dense_grad, "dense_grad", shape=shape)
    check_tensor(mask, "mask", shape=shape, kind="bool")
    return shape


def _keep_counts(weight: torch.Tensor, mask: torch.Tensor, drop_fraction: float) -> tuple[int, int]:
    check_float(drop_fraction, "drop_fraction", minimum=0, maximum=1)
    n_ones = int(mask.sum())
    # Alg. 1 (RigL): n_prune = floor(f(t) * n_ones)
    n_prune = int(math.floor(n_ones * drop_fraction))
    n_keep = n_ones - n_prune
    nnz = int((weight * mask).count_nonzero())
    if nnz < n_keep:  # keep every non-zero weight, regrow the rest
        n_keep = nnz
        n_prune = n_ones - n_keep
    return n_keep, n_prune


def rigl_update(
    weight: torch.Tensor, dense_grad: torch.Tensor, mask: torch.Tensor, drop_fraction: float
) -> UpdateResult:
    """RigL's unstructured update (Evci et al., Alg. 1).

    Drop: keep the layer-global top ``n_keep = n - floor(f * n)`` active connections by ``|W|``.
    Grow: the top ``n - n_keep`` of ``|grad|`` among the connections not kept (just-dropped ones are eligible).
    The number of ones never changes; grow and keep are disjoint.
    weight, dense_grad, mask: ``[out, fan_in]``.
    """
    _check_update(weight, dense_grad, mask)
    n_keep, n_prune = _keep_counts(weight, mask, drop_fraction)
    s_drop = torch.where(mask, weight.abs(), torch.full_like(weight, -1.0))
    # Alg. 1 (RigL), drop: keep = TopK(|W|, n_keep) ...
    keep = topk_mask(s_drop, n_keep) & mask
    s_grow = torch.where(keep, torch.full_like(dense_grad, -math.inf), dense_grad.abs())
    # ... grow: TopK(|grad| outside keep, n_prune)
    grow = topk_mask(s_grow, n_prune) & ~keep
    new = keep | grow
    return UpdateResult(
        new, new & ~mask, torch.zeros(mask.shape[0], dtype=torch.bool, device=mask.device), None, n_prune
    )


def srigl_update(
    weight: torch.Tensor,
    dense_grad: torch.Tensor,
    mask: torch.Tensor,
    drop_fraction: float,
    budget: int,
    k0: int,
    gamma_sal: float = 0.3,
    allow_ablation: bool = True,
) -> UpdateResult:
    """SRigL's constant fan-in update (Sec. 4, Alg. 1 of Lasby et al.).

    1. ``n_keep``/``n_prune`` as in RigL with drop fraction ``f``.
    2. Neuron ablation (:func:`ablate_neurons`) unless disabled.
    3. New fan-in ``k = floor(budget / n_active)``.
    4. Keep the global top ``n_keep`` by ``|W|`` outside ablated rows, then at most the ``k`` largest per row.
    5. Grow each active row back to exactly ``k`` by the largest ``|grad|`` among its connections not kept.

    Invariant: every active row has exactly ``k`` ones, ablated rows have none, ``k * n_active <= budget``.
    weight, dense_grad, mask: ``[out, fan_in]``; ``budget`` = :func:`layer_budget`; ``k0`` = fan-in without ablation.
    """
    out, fan_in = _check_update(weight, dense_grad, mask)
    check_int(budget, "budget", minimum=0)
    check_int(k0, "k0", minimum=0)
    check_float(gamma_sal, "gamma_sal", minimum=0)
    n_keep, n_prune = _keep_counts(weight, mask, drop_fraction)
    if allow_ablation:
        ablated = ablate_neurons(weight, dense_grad, mask, n_keep, n_prune, gamma_sal, k0, budget)
    else:
        ablated = torch.zeros(out, dtype=torch.bool, device=weight.device)
    n_active = out - int(ablated.sum())
    # Alg. 1 (SRigL): k = floor(budget / (out - n_ablated)), the fan-in after ablation
    k = constant_fan_in(budget, n_active, fan_in)
    if k == 0:
        raise InputError(f"constant fan-in became 0 (budget {budget}, {n_active} active neurons)")
    # Drop: ablated rows and inactive connections score below every active one.
    s_drop = torch.where(mask, weight.abs(), torch.full_like(weight, -1.0))
    s_drop[ablated] = -2.0
    # Alg. 1 (SRigL), drop: keep = TopK(|W| over active, non-ablated weights, n_keep)
    keep = topk_mask(s_drop, n_keep) & mask & ~ablated.unsqueeze(1)
    # At most k kept per row: the k largest |W| (the official code truncates in arbitrary order).
    keep &= _rowwise_topk_mask(
        torch.where(keep, weight.abs(), torch.full_like(weight, -1.0)),
        torch.full((out,), k, device=weight.device),
    )
    need = torch.where(ablated, torch.zeros_like(ablated, dtype=torch.long), k - keep.sum(dim=1))
    s_grow = torch.where(keep, torch.full_like(dense_grad, -math.inf), dense_grad.abs())
    # Alg. 1 (SRigL), grow: per active neuron i, TopK(|grad_i| outside keep_i, k - |keep_i|)
    grow = _rowwise_topk_mask(s_grow, need) & ~keep
    new = keep | grow
    return UpdateResult(new, new & ~mask, ablated, k, n_prune)
