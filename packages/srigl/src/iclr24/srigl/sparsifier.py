"""Sparsifiers that wrap any ``nn.Module`` and its optimizer: SRigL, RigL, static masks and a dense baseline.

Use::

    sparsifier = SRigL(model, optimizer, sparsity=0.9, total_steps=10_000)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
        sparsifier.step()          # once after every optimizer.step()

What happens behind the scenes (as in the official code):

- every ``nn.Linear``, ``nn.Conv2d``, ``nn.ConvTranspose2d`` (``groups=1``) and ``nn.MultiheadAttention.in_proj_weight``
  is masked (a neuron is an output channel: a row of the weight, dim 1 of a transposed convolution);
- a gradient hook masks each weight's gradient, and during the step that precedes a mask update it keeps the
  *dense* gradient (averaged over ``grad_accumulation_n`` steps) for regrowth;
- an optimizer post-step hook re-applies the mask to the weights and to every optimizer state tensor of the
  weight's shape (SGD momentum, Adam moments), so masked weights and their momentum stay exactly zero;
- ``step()`` advances the schedule and, every ``delta_t`` steps before ``t_end``, prunes and regrows.

Under ``torchrun`` the dense gradients are all-reduced before scoring and the new masks are broadcast from rank 0,
so every rank holds the same masks.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

import torch
import torch.distributed as dist
from torch import nn

from iclr24.paperkit.errors import InputError

from .masks import UpdateResult
from .masks import constant_fan_in
from .masks import cosine_drop_fraction
from .masks import erk_densities
from .masks import is_update_step
from .masks import layer_budget
from .masks import random_constant_fan_in_mask
from .masks import random_unstructured_mask
from .masks import rigl_update
from .masks import srigl_update
from .masks import uniform_densities

__all__ = [
    "SparseLayer",
    "Sparsifier",
    "SRigL",
    "RigL",
    "StaticSparse",
    "Dense",
    "prunable_weights",
    "make_sparsifier",
    "METHODS",
    "NonFiniteError",
]

STATE_VERSION = 1


class NonFiniteError(FloatingPointError, InputError):
    """NaN or inf in a weight or a dense gradient at a mask update (bad data or a too-large learning rate)."""


def prunable_weights(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """``(name, weight)`` of every Linear, Conv2d, ConvTranspose2d (``groups=1``) and attention in-projection, in
    registration order.

    Names are parameter names (``"0.weight"``, ``"blocks.0.attn.in_proj_weight"``)."""
    found: list[tuple[str, nn.Parameter]] = []
    for mname, m in model.named_modules():
        prefix = f"{mname}." if mname else ""
        if isinstance(m, nn.Linear | nn.Conv2d) and m.weight is not None:
            found.append((f"{prefix}weight", m.weight))
        elif isinstance(m, nn.ConvTranspose2d) and m.groups == 1 and m.weight is not None:
            found.append((f"{prefix}weight", m.weight))
        elif isinstance(m, nn.MultiheadAttention) and getattr(m, "in_proj_weight", None) is not None:
            found.append((f"{prefix}in_proj_weight", m.in_proj_weight))
    return found


def _transposed_weights(model: nn.Module) -> set[int]:
    """ids of the weights stored ``[in, out, kh, kw]`` (ConvTranspose2d): their neurons are dim 1."""
    return {id(m.weight) for m in model.modules() if isinstance(m, nn.ConvTranspose2d)}


def _mha_weights(model: nn.Module) -> set[int]:
    """ids of the in- and out-projection weights of every ``nn.MultiheadAttention``."""
    ids: set[int] = set()
    for m in model.modules():
        if isinstance(m, nn.MultiheadAttention):
            if getattr(m, "in_proj_weight", None) is not None:
                ids.add(id(m.in_proj_weight))
            ids.add(id(m.out_proj.weight))
    return ids


def _matches(name: str, patterns: Iterable[str]) -> bool:
    mod = name.rsplit(".", 1)[0] if "." in name else ""
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(mod, p) for p in patterns)


@dataclass
class SparseLayer:
    """The sparse state of one weight: its mask, budget and (for SRigL) fan-in and ablated neurons."""

    name: str
    weight: nn.Parameter
    density: float
    budget: int
    k0: int
    mask: torch.Tensor
    ablated: torch.Tensor
    allow_ablation: bool = True
    dense_grad: torch.Tensor | None = None
    hook: object | None = field(default=None, repr=False)
    transposed: bool = (
        False  # ConvTranspose2d: weight [in, out, kh, kw], a neuron is an output channel (dim 1)
    )
    ever_active: torch.Tensor | None = None  # connections active at any time so far (for the ITOP rate)

    @property
    def shape2d(self) -> tuple[int, int]:
        """``(neurons, fan_in)``: the weight seen as one row per output neuron."""
        if self.transposed:
            return self.weight.shape[1], self.weight.numel() // self.weight.shape[1]
        return self.weight.shape[0], self.weight[0].numel()

    def to2d(self, t: torch.Tensor) -> torch.Tensor:
        """A tensor of the weight's shape as ``[neurons, fan_in]`` (a copy for ConvTranspose2d)."""
        if self.transposed:
            return t.transpose(0, 1).reshape(self.shape2d)
        return t.reshape(self.shape2d)

    def from2d(self, t2: torch.Tensor) -> torch.Tensor:
        """Inverse of :meth:`to2d`: ``[neurons, fan_in]`` back to the weight's shape."""
        w = self.weight
        if self.transposed:
            return t2.reshape(w.shape[1], w.shape[0], *w.shape[2:]).transpose(0, 1).contiguous()
        return t2.reshape(w.shape)

    @property
    def mask2d(self) -> torch.Tensor:
        return self.to2d(self.mask)

    def fan_ins(self) -> torch.Tensor:
        """Number of active connections per neuron (row)."""
        return self.mask2d.sum(dim=1)

    @property
    def nnz(self) -> int:
        return int(self.mask.sum())

    @property
    def n_ablated(self) -> int:
        return int(self.ablated.sum())

    @property
    def n_active_neurons(self) -> int:
        """Neurons (rows) with at least one active connection."""
        return int(self.mask2d.any(dim=1).sum())


class Sparsifier:
    """Base class: masks, hooks, schedule, state dict. Subclasses choose the mask structure and the update.

    Args:
        model: any ``nn.Module``; its Linear/Conv2d/attention in-projection weights are sparsified.
        optimizer: the optimizer that trains ``model`` (its state is masked after every step).
        sparsity: overall sparsity ``S`` in [0, 1) of the sparsified weights.
        total_steps: number of optimizer steps of the run; ``t_end = t_end_fraction * total_steps``.
        delta_t: steps between mask updates (``Delta T``).
        alpha: initial drop fraction.
        t_end_fraction / t_end: when updates stop (absolute ``t_end`` wins).
        distribution: ``"erk"`` (Erdos-Renyi-Kernel) or ``"uniform"`` layer densities.
        exclude: glob patterns of weight or module names to keep dense (e.g. ``["conv1", "head.*"]``); a pattern
            that matches no prunable layer is an error.
        keep_first_layer_dense: keep the first prunable layer dense (the official config's name).
        ignore_mha_layers: keep the in- and out-projections of every ``nn.MultiheadAttention`` dense (the
            official config's name).
        grad_accumulation_n: dense gradients averaged over this many steps before an update.
        sparse_init: re-initialise the kept weights with ``N(0, 2 / fan_in_row)`` (sparse He init, the paper's
            and the official config's init; default). ``False`` keeps the model's own weights and masks them
            (use it for trained weights; masking a dense Kaiming init shrinks activations by ~sqrt(density)).
        seed: seed of the random initial masks (``None``: drawn from torch's global generator).
    """

    dynamic = True
    structured = False

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        sparsity: float,
        total_steps: int | None = None,
        *,
        delta_t: int = 100,
        alpha: float = 0.3,
        t_end_fraction: float = 0.75,
        t_end: int | None = None,
        distribution: str = "erk",
        exclude: Sequence[str] = (),
        keep_first_layer_dense: bool = False,
        ignore_mha_layers: bool = False,
        grad_accumulation_n: int = 1,
        sparse_init: bool = True,
        seed: int | None = None,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise InputError(f"model must be an nn.Module, got {type(model).__name__}")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise InputError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
        if isinstance(sparsity, bool) or not isinstance(sparsity, int | float) or not 0.0 <= sparsity < 1.0:
            raise InputError(
                f"sparsity must be a number in [0, 1) (e.g. 0.9 keeps 10% of the weights), got {sparsity!r}"
            )
        if distribution not in ("erk", "uniform"):
            raise InputError(f"distribution must be 'erk' or 'uniform', got {distribution!r}")
        if not isinstance(delta_t, int) or delta_t < 1:
            raise InputError(f"delta_t must be a positive int, got {delta_t!r}")
        if not 0.0 <= alpha <= 1.0:
            raise InputError(f"alpha (initial drop fraction) must be in [0, 1], got {alpha!r}")
        if not isinstance(grad_accumulation_n, int) or not 1 <= grad_accumulation_n <= delta_t:
            raise InputError(
                f"grad_accumulation_n must be an int in [1, delta_t={delta_t}], got {grad_accumulation_n!r}"
            )
        if t_end is None:
            if self.dynamic and total_steps is None:
                raise InputError(
                    "give total_steps (the number of optimizer steps of the run) or an absolute "
                    "t_end: mask updates stop at t_end = t_end_fraction * total_steps"
                )
            if total_steps is not None and (not isinstance(total_steps, int) or total_steps < 1):
                raise InputError(f"total_steps must be a positive int, got {total_steps!r}")
            if not 0.0 < t_end_fraction <= 1.0:
                raise InputError(f"t_end_fraction must be in (0, 1], got {t_end_fraction!r}")
            t_end = int(t_end_fraction * total_steps) if total_steps is not None else 0
        elif not isinstance(t_end, int) or t_end < 1:
            raise InputError(f"t_end must be a positive int, got {t_end!r}")
        self.model = model
        self.optimizer = optimizer
        self.sparsity = float(sparsity)
        self.total_steps = total_steps
        self.delta_t = delta_t
        self.alpha = float(alpha)
        self.t_end = t_end
        self.distribution = distribution
        self.exclude = list(exclude)
        self.grad_accumulation_n = grad_accumulation_n
        self.step_count = 0
        self.n_updates = 0
        self._pending_optimizer_steps = 0
        self._seed = int(torch.randint(0, 2**31 - 1, ()).item()) if seed is None else int(seed)

        if isinstance(exclude, str):
            raise InputError(f"exclude must be a list of glob patterns, got the string {exclude!r}")
        all_weights = prunable_weights(model)
        unmatched = [p for p in self.exclude if not any(_matches(n, [p]) for n, _ in all_weights)]
        if unmatched:
            names = [n for n, _ in all_weights]
            raise InputError(
                f"exclude patterns {unmatched} match no prunable layer; the prunable weights are "
                f"{names[:6]}{' ...' if len(names) > 6 else ''} (patterns match a weight or module name)"
            )
        self.keep_first_layer_dense = bool(keep_first_layer_dense)
        self.ignore_mha_layers = bool(ignore_mha_layers)
        skip = _mha_weights(model) if ignore_mha_layers else set()
        weights = [(n, w) for n, w in all_weights if not _matches(n, self.exclude) and id(w) not in skip]
        if keep_first_layer_dense and weights and all_weights and weights[0][0] == all_weights[0][0]:
            weights = weights[1:]
        self._transposed = _transposed_weights(model)
        if not weights:
            raise InputError(
                f"{type(model).__name__} has no prunable layers (nn.Linear, nn.Conv2d or "
                f"nn.MultiheadAttention) left after exclude={self.exclude}, keep_first_layer_dense="
                f"{self.keep_first_layer_dense}, ignore_mha_layers={self.ignore_mha_layers}; nothing to sparsify"
            )
        opt_params = {id(p) for g in optimizer.param_groups for p in g["params"]}
        missing = [n for n, w in weights if id(w) not in opt_params]
        if missing:
            raise InputError(
                f"the optimizer does not train {missing[:3]}: create the sparsifier with the "
                f"optimizer of this model"
            )
        self.layers: list[SparseLayer] = self._build_layers(weights)
        self._init_masks(sparse_init)
        for i, layer in enumerate(self.layers):
            layer.hook = layer.weight.register_hook(self._grad_hook(i))
        self._opt_hook = optimizer.register_step_post_hook(self._after_optimizer_step)

    # ---------------------------------------------------------------- construction
    def _densities(self, shapes: list[tuple[int, ...]]) -> list[float]:
        d = 1.0 - self.sparsity
        return erk_densities(shapes, d) if self.distribution == "erk" else uniform_densities(shapes, d)

    def _build_layers(self, weights: list[tuple[str, nn.Parameter]]) -> list[SparseLayer]:
        dens = self._densities([tuple(w.shape) for _, w in weights])
        layers = []
        for (name, w), d in zip(weights, dens):
            transposed = id(w) in self._transposed
            out = w.shape[1] if transposed else w.shape[0]
            fan_in = w.numel() // out
            budget = layer_budget(w.numel(), d)
            k0 = constant_fan_in(budget, out, fan_in)
            if self.structured and k0 == 0:
                raise InputError(
                    f"layer {name!r} {tuple(w.shape)} at density {d:.4g} keeps {budget} weights for {out} "
                    f"neurons: constant fan-in would be 0. Use distribution='erk', a lower sparsity, or "
                    f"exclude={name.rsplit('.', 1)[0]!r}"
                )
            if budget == 0:
                raise InputError(
                    f"layer {name!r} {tuple(w.shape)} would keep no weight at density {d:.4g}; "
                    f"use distribution='erk', a lower sparsity, or exclude it"
                )
            layers.append(
                SparseLayer(
                    name=name,
                    weight=w,
                    density=d,
                    budget=budget,
                    k0=k0,
                    mask=torch.ones_like(w, dtype=torch.bool),
                    ablated=torch.zeros(out, dtype=torch.bool, device=w.device),
                    transposed=transposed,
                )
            )
        return layers

    def _random_mask(self, layer: SparseLayer, gen: torch.Generator) -> torch.Tensor:
        out, fan_in = layer.shape2d
        if self.structured:
            return random_constant_fan_in_mask(out, fan_in, layer.k0, gen)
        return random_unstructured_mask(out, fan_in, layer.budget, gen)

    @torch.no_grad()
    def _init_masks(self, sparse_init: bool) -> None:
        gen = torch.Generator().manual_seed(self._seed)
        for layer in self.layers:
            w = layer.weight
            mask = layer.from2d(self._random_mask(layer, gen)).to(w.device)
            mask = self._broadcast_mask(mask)
            layer.mask = mask
            layer.ever_active = mask.clone()
            if sparse_init:
                # Sparse He init: std_r = sqrt(2 / fan_in_r) with fan_in_r the row's active connections (the
                # official code uses std = 2/k; the intended variance is 2/k).
                fan = layer.fan_ins().clamp(min=1).to(w.dtype)
                std = layer.from2d((2.0 / fan).sqrt().unsqueeze(1).expand(layer.shape2d))
                w.copy_(torch.randn(w.shape, generator=gen).to(w) * std.to(w.device))
            w.mul_(mask)

    # ---------------------------------------------------------------- hooks
    def _accumulating(self) -> bool:
        """True during the backward passes whose dense gradient feeds the next mask update."""
        if not self.dynamic:
            return False
        nxt = self.step_count + 1
        if nxt >= self.t_end:
            return False
        r = nxt % self.delta_t
        return r == 0 or r > self.delta_t - self.grad_accumulation_n

    def _grad_hook(self, i: int):
        def hook(grad: torch.Tensor) -> torch.Tensor:
            layer = self.layers[i]
            if self._accumulating():
                g = grad.detach() / self.grad_accumulation_n
                layer.dense_grad = g.clone() if layer.dense_grad is None else layer.dense_grad + g
            return grad * layer.mask

        return hook

    @torch.no_grad()
    def _after_optimizer_step(self, optimizer, args, kwargs) -> None:
        self._pending_optimizer_steps += 1
        self.apply_masks()

    @torch.no_grad()
    def apply_masks(self) -> None:
        """Zero the masked weights and the matching entries of every optimizer state tensor (masked momentum)."""
        for layer in self.layers:
            layer.weight.mul_(layer.mask)
            state = self.optimizer.state.get(layer.weight, {})
            for v in state.values():
                if torch.is_tensor(v) and v.shape == layer.weight.shape:
                    v.mul_(layer.mask)

    # ---------------------------------------------------------------- schedule
    def drop_fraction(self, step: int | None = None) -> float:
        """Cosine drop fraction at ``step`` (default: the current step)."""
        return cosine_drop_fraction(self.step_count if step is None else step, self.alpha, max(self.t_end, 1))

    def is_update_step(self, step: int | None = None) -> bool:
        return self.dynamic and is_update_step(
            self.step_count if step is None else step, self.delta_t, self.t_end
        )

    def step(self) -> bool:
        """Advance the schedule by one optimizer step; prune and regrow when due. Returns True after an update.

        Call it exactly once after every ``optimizer.step()``."""
        if self._pending_optimizer_steps == 0:
            raise RuntimeError(
                f"{type(self).__name__}.step() was called before optimizer.step(): call "
                f"optimizer.step() first, then sparsifier.step(), once per training step"
            )
        self._pending_optimizer_steps = 0
        self.step_count += 1
        if not self.is_update_step():
            return False
        self._update()
        self.n_updates += 1
        return True

    @torch.no_grad()
    def _update(self) -> None:
        f = self.drop_fraction()
        grads = []
        for layer in self.layers:  # validate every layer before any mask changes
            g = layer.dense_grad
            if g is None:
                raise RuntimeError(
                    f"no dense gradient was recorded for {layer.name!r} before the mask update at "
                    f"step {self.step_count}: run backward() and optimizer.step() before "
                    f"sparsifier.step()"
                )
            g = _all_reduce_mean(g.clone())
            for what, t in (("dense gradient", g), ("weight", layer.weight)):
                if not bool(torch.isfinite(t).all()):
                    raise NonFiniteError(
                        f"non-finite (NaN/inf) {what} of {layer.name!r} at the mask update of step "
                        f"{self.step_count}: check the data for NaN/inf or lower the learning rate; the "
                        f"masks were not updated"
                    )
            grads.append(g)
        for layer, g in zip(self.layers, grads):
            w = layer.weight
            res = self._layer_update(layer, layer.to2d(w.detach()), layer.to2d(g), f)
            mask = self._broadcast_mask(layer.from2d(res.mask))
            grown = mask & ~layer.mask
            w[grown] = 0.0  # newly grown connections start at zero
            layer.mask = mask
            layer.ever_active = mask.clone() if layer.ever_active is None else layer.ever_active | mask
            layer.ablated = self._broadcast_mask(res.ablated)
            layer.dense_grad = None
            if w.grad is not None:
                w.grad.mul_(mask)
        self.apply_masks()

    def _layer_update(self, layer: SparseLayer, w: torch.Tensor, g: torch.Tensor, f: float) -> UpdateResult:
        raise NotImplementedError

    @staticmethod
    def _broadcast_mask(mask: torch.Tensor) -> torch.Tensor:
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            t = mask.to(torch.uint8)
            dist.broadcast(t, src=0)
            return t.bool()
        return mask

    # ---------------------------------------------------------------- inspection
    @property
    def masks(self) -> dict[str, torch.Tensor]:
        """Parameter name -> bool mask of the weight's shape."""
        return {layer.name: layer.mask for layer in self.layers}

    def density(self) -> float:
        """Fraction of the sparsified weights that are active."""
        return sum(layer.nnz for layer in self.layers) / sum(layer.mask.numel() for layer in self.layers)

    def n_ablated(self) -> dict[str, int]:
        """Ablated neurons per layer."""
        return {layer.name: layer.n_ablated for layer in self.layers}

    def active_neurons(self) -> dict[str, int]:
        """Neurons with at least one active connection, per layer."""
        return {layer.name: layer.n_active_neurons for layer in self.layers}

    def itop_rate(self) -> float:
        """In-time over-parameterisation rate (Liu et al., 2021): the fraction of the sparsified weights that have
        been active at some point of training so far (= the density for a static mask)."""
        seen = sum(int(layer.ever_active.sum()) for layer in self.layers if layer.ever_active is not None)
        return seen / sum(layer.mask.numel() for layer in self.layers)

    def check_invariants(self) -> None:
        """Raise ``RuntimeError`` when a mask exceeds its layer budget, when a masked weight is not zero, or (constant
        fan-in methods) when the active rows do not all have the same number of connections."""
        for layer in self.layers:
            if layer.nnz > layer.budget:
                raise RuntimeError(
                    f"{layer.name}: {layer.nnz} active weights exceed the budget {layer.budget}"
                )
            if bool((layer.weight.detach()[~layer.mask] != 0).any()):
                raise RuntimeError(f"{layer.name}: masked weights are not zero")
            if self.structured:
                fans = layer.fan_ins()
                active = fans[fans > 0]
                if active.numel() and bool((active != active[0]).any()):
                    raise RuntimeError(
                        f"{layer.name}: fan-in is not constant: {sorted(set(active.tolist()))}"
                    )

    def summary(self) -> list[dict]:
        """One dict per sparse layer: name, shape, density, budget, nnz, fan-in (if constant), ablated and active
        neurons."""
        rows = []
        for layer in self.layers:
            fans = layer.fan_ins()
            act = fans[fans > 0]
            const = int(act[0]) if act.numel() and bool((act == act[0]).all()) else None
            rows.append(
                {
                    "name": layer.name,
                    "shape": list(layer.weight.shape),
                    "density": layer.density,
                    "budget": layer.budget,
                    "nnz": layer.nnz,
                    "fan_in": const,
                    "ablated": layer.n_ablated,
                    "active_neurons": layer.n_active_neurons,
                }
            )
        return rows

    def remove(self) -> None:
        """Detach the gradient and optimizer hooks (the masks stay applied to the weights)."""
        for layer in self.layers:
            if layer.hook is not None:
                layer.hook.remove()
                layer.hook = None
        self._opt_hook.remove()

    # ---------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict:
        """Everything needed to resume exactly: step, masks, ablated neurons, pending dense gradients."""
        return {
            "version": STATE_VERSION,
            "method": type(self).__name__,
            "step_count": self.step_count,
            "n_updates": self.n_updates,
            "pending_optimizer_steps": self._pending_optimizer_steps,
            "config": {
                "sparsity": self.sparsity,
                "delta_t": self.delta_t,
                "alpha": self.alpha,
                "t_end": self.t_end,
                "distribution": self.distribution,
                "grad_accumulation_n": self.grad_accumulation_n,
                **self._extra_config(),
            },
            "layers": {
                layer.name: {
                    "shape": list(layer.weight.shape),
                    "mask": layer.mask.clone(),
                    "ablated": layer.ablated.clone(),
                    "dense_grad": None if layer.dense_grad is None else layer.dense_grad.clone(),
                    "ever_active": None if layer.ever_active is None else layer.ever_active.clone(),
                }
                for layer in self.layers
            },
        }

    def _extra_config(self) -> dict:
        return {}

    @torch.no_grad()
    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict`. The checkpoint must come from the same method and architecture."""
        if not isinstance(state, dict) or "layers" not in state or "method" not in state:
            raise InputError(
                "not a sparsifier state dict (expected keys 'method', 'layers', ...); pass "
                "sparsifier.state_dict() as saved"
            )
        if state["method"] != type(self).__name__:
            raise InputError(
                f"checkpoint is from {state['method']}, this sparsifier is {type(self).__name__}"
            )
        mine = {layer.name: layer for layer in self.layers}
        theirs = state["layers"]
        if set(theirs) != set(mine):
            only_ckpt = sorted(set(theirs) - set(mine))[:3]
            only_model = sorted(set(mine) - set(theirs))[:3]
            raise InputError(
                f"checkpoint is from a different architecture: layers only in the checkpoint "
                f"{only_ckpt}, only in the model {only_model}"
            )
        for name, rec in theirs.items():
            layer = mine[name]
            if list(rec["shape"]) != list(layer.weight.shape):
                raise InputError(
                    f"checkpoint is from a different architecture: {name} has shape "
                    f"{tuple(rec['shape'])} there and {tuple(layer.weight.shape)} here"
                )
        for name, rec in theirs.items():
            layer = mine[name]
            dev = layer.weight.device
            layer.mask = rec["mask"].to(dev, torch.bool).clone()
            layer.ablated = rec["ablated"].to(dev, torch.bool).clone()
            layer.dense_grad = None if rec["dense_grad"] is None else rec["dense_grad"].to(dev).clone()
            ever = rec.get("ever_active")
            layer.ever_active = layer.mask.clone() if ever is None else ever.to(dev, torch.bool).clone()
        cfg = state.get("config", {})
        self.t_end = int(cfg.get("t_end", self.t_end))
        self.delta_t = int(cfg.get("delta_t", self.delta_t))
        self.alpha = float(cfg.get("alpha", self.alpha))
        self.step_count = int(state["step_count"])
        self.n_updates = int(state.get("n_updates", 0))
        self._pending_optimizer_steps = int(state.get("pending_optimizer_steps", 0))
        self.apply_masks()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(sparsity={self.sparsity}, layers={len(self.layers)}, "
            f"step={self.step_count}, t_end={self.t_end}, delta_t={self.delta_t}, density={self.density():.4f})"
        )


def _all_reduce_mean(t: torch.Tensor) -> torch.Tensor:
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        t /= dist.get_world_size()
    return t


class RigL(Sparsifier):
    """RigL (Evci et al., 2020): unstructured masks, magnitude drop and gradient regrowth, constant nnz."""

    def _layer_update(self, layer, w, g, f):
        return rigl_update(w, g, layer.mask2d, f)


class SRigL(Sparsifier):
    """SRigL: constant fan-in masks with neuron ablation (Lasby et al., ICLR 2024).

    Extra args:
        gamma_sal: minimum fraction of salient weights per neuron (``gamma_sal``; 0 disables ablation; >= 1 is an
            absolute count). Paper default 0.3 (0.95 for ViT).
        no_ablation: glob patterns of layers whose neurons are never ablated; default: the last sparse layer
            (the output layer).
    """

    structured = True

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        sparsity: float,
        total_steps: int | None = None,
        *,
        gamma_sal: float = 0.3,
        no_ablation: Sequence[str] | None = None,
        **kwargs,
    ) -> None:
        if isinstance(gamma_sal, bool) or not isinstance(gamma_sal, int | float) or gamma_sal < 0:
            raise InputError(
                f"gamma_sal must be a number >= 0 (fraction of k, or a count when >= 1), got {gamma_sal!r}"
            )
        self.gamma_sal = float(gamma_sal)
        self._no_ablation = None if no_ablation is None else list(no_ablation)
        super().__init__(model, optimizer, sparsity, total_steps, **kwargs)
        if self._no_ablation is None:
            self.no_ablation = [self.layers[-1].name]
        else:
            self.no_ablation = self._no_ablation
        for layer in self.layers:
            layer.allow_ablation = not _matches(layer.name, self.no_ablation)

    def _extra_config(self) -> dict:
        return {"gamma_sal": self.gamma_sal, "no_ablation": list(self.no_ablation)}

    def _layer_update(self, layer, w, g, f):
        return srigl_update(
            w,
            g,
            layer.mask2d,
            f,
            layer.budget,
            layer.k0,
            self.gamma_sal,
            allow_ablation=layer.allow_ablation and self.gamma_sal > 0,
        )


class StaticSparse(Sparsifier):
    """Static random masks (never updated): ``structure="unstructured"`` (RigL's static baseline) or
    ``"constant_fan_in"`` (SRigL's)."""

    dynamic = False

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        sparsity: float,
        total_steps: int | None = None,
        *,
        structure: str = "unstructured",
        **kwargs,
    ) -> None:
        if structure not in ("unstructured", "constant_fan_in"):
            raise InputError(f"structure must be 'unstructured' or 'constant_fan_in', got {structure!r}")
        self.structure = structure
        self.structured = structure == "constant_fan_in"
        super().__init__(model, optimizer, sparsity, total_steps, **kwargs)

    def _extra_config(self) -> dict:
        return {"structure": self.structure}

    def state_dict(self) -> dict:
        d = super().state_dict()
        d["method"] = f"StaticSparse[{self.structure}]"
        return d

    def load_state_dict(self, state: dict) -> None:
        if isinstance(state, dict) and state.get("method") == f"StaticSparse[{self.structure}]":
            state = {**state, "method": type(self).__name__}
        super().load_state_dict(state)


class Dense(Sparsifier):
    """The dense baseline under the same interface: every mask is all ones and ``step()`` only counts."""

    dynamic = False

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        sparsity: float = 0.0,
        total_steps: int | None = None,
        **kwargs,
    ) -> None:
        if sparsity != 0.0:
            raise InputError(f"Dense trains every weight: sparsity must be 0, got {sparsity!r}")
        kwargs.setdefault("sparse_init", False)  # the dense baseline keeps the model's own init by default
        super().__init__(model, optimizer, 0.0, total_steps, **kwargs)


METHODS = ("srigl", "rigl", "static", "static-cfi", "dense")


def make_sparsifier(
    method: str,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    sparsity: float,
    total_steps: int,
    **kwargs,
) -> Sparsifier:
    """Build a sparsifier by name: ``srigl``, ``rigl``, ``static`` (unstructured), ``static-cfi``, ``dense``.

    ``gamma_sal``/``no_ablation`` only reach SRigL; they are ignored by the other methods."""
    srigl_only = {k: kwargs.pop(k) for k in ("gamma_sal", "no_ablation") if k in kwargs}
    if method == "srigl":
        return SRigL(model, optimizer, sparsity, total_steps, **srigl_only, **kwargs)
    if method == "rigl":
        return RigL(model, optimizer, sparsity, total_steps, **kwargs)
    if method == "static":
        return StaticSparse(model, optimizer, sparsity, total_steps, structure="unstructured", **kwargs)
    if method == "static-cfi":
        return StaticSparse(model, optimizer, sparsity, total_steps, structure="constant_fan_in", **kwargs)
    if method == "dense":
        return Dense(model, optimizer, 0.0, total_steps, **kwargs)
    raise InputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
