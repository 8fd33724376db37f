"""The condensed inference layer of SRigL (Sec. 4.3 of Lasby et al., "condensed representation").

A constant fan-in layer ``W [out, in]`` with ``k`` non-zeros in each active row is stored as
``values [n, k]`` and ``indices [n, k]`` (the column of each non-zero), ``n`` = active neurons, and computes

    y[b, i] = sum_j values[i, j] * x[b, indices[i, j]] + bias[i]          (condensed matmul, Eq. in Sec. 4.3)

Ablated neurons (rows without weights) are dropped; :func:`condense` also drops the matching input columns of the
next ``nn.Linear`` and folds their constant output ``act(bias)`` into that layer's bias, so the condensed model
computes exactly what the masked dense model computes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["CondensedLinear", "condense", "condensed_linear", "VARIANTS", "ELEMENTWISE_MODULES"]

VARIANTS = ("gather", "gather_kmajor", "embedding_bag", "fused")

# Modules that act elementwise, so an ablated neuron's constant output passes through them unchanged in shape.
ELEMENTWISE_MODULES = (
    nn.ReLU,
    nn.ReLU6,
    nn.GELU,
    nn.SiLU,
    nn.Tanh,
    nn.Sigmoid,
    nn.LeakyReLU,
    nn.ELU,
    nn.Hardswish,
    nn.Mish,
    nn.Softplus,
    nn.Identity,
    nn.Dropout,
)

_MAX_CHUNK_ELEMENTS = 1 << 22  # gathered floats per chunk (16 MiB in float32): bounds memory at large batch


def condensed_linear(
    x: torch.Tensor,
    values: torch.Tensor,
    indices: torch.Tensor,
    bias: torch.Tensor | None = None,
    variant: str = "gather",
    kernel_mode: str = "avx2_packed",
) -> torch.Tensor:
    """The condensed matmul on a 2-D input.

    x: ``[B, in]``; values, indices: ``[n, k]`` (``gather``, ``embedding_bag``) or ``[k, n]``
    (``gather_kmajor``); bias: ``[n]``. ``fused`` runs the C++ kernel of :mod:`.kernels` (int16/int32 indices). Returns ``[B, n]`` with ``y[b, i] = sum_j values[i,j] x[b, idx[i,j]] + b[i]``.
    """
    if variant == "gather":
        n, k = values.shape
        g = x.index_select(1, indices.reshape(-1)).view(x.shape[0], n, k)  # [B, n, k]
        y = (g * values).sum(-1)
    elif variant == "gather_kmajor":
        k, n = values.shape
        g = x.index_select(1, indices.reshape(-1)).view(x.shape[0], k, n)  # [B, k, n]: n contiguous
        y = (g * values).sum(1)
    elif variant == "fused":  # the optional C++ kernel (kernels.py): one pass, int16/int32 indices
        from .kernels import fused_condensed_linear

        return fused_condensed_linear(x.contiguous(), values, indices, bias, mode=kernel_mode)
    elif variant == "embedding_bag":
        # x^T is the embedding table [in, B]; each neuron is a bag of its k inputs weighted by its values.
        y = F.embedding_bag(indices, x.t().contiguous(), per_sample_weights=values, mode="sum").t()
    else:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    return y + bias if bias is not None else y


class CondensedLinear(nn.Module):
    """A constant fan-in linear layer in condensed form: gather the ``k`` inputs of each active neuron, multiply,
    add. Built with :meth:`from_linear` (or :func:`condense` for a whole model).

    Attributes: ``in_features``, ``out_features`` (= active neurons kept), ``k`` (fan-in), ``rows`` (indices of the
    kept neurons in the original layer), ``variant``.
    """

    def __init__(
        self,
        values: torch.Tensor,
        indices: torch.Tensor,
        bias: torch.Tensor | None,
        in_features: int,
        rows: torch.Tensor,
        variant: str = "gather",
        index_dtype: torch.dtype = torch.int64,
        max_chunk_elements: int = _MAX_CHUNK_ELEMENTS,
        kernel_mode: str = "avx2_packed",
    ) -> None:
        super().__init__()
        self.kernel_mode = kernel_mode
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        if values.shape != indices.shape or values.dim() != 2:
            raise ValueError(
                f"values and indices must both be [n, k], got {tuple(values.shape)} and "
                f"{tuple(indices.shape)}"
            )
        if variant == "fused":
            if index_dtype not in (torch.int16, torch.int32):
                index_dtype = torch.int16 if in_features <= 32767 else torch.int32
            if index_dtype == torch.int16 and in_features > 32767:
                raise ValueError(f"int16 indices address at most 32767 inputs, the layer has {in_features}")
        elif index_dtype not in (torch.int32, torch.int64):
            raise ValueError(
                f"index_dtype must be torch.int32 or torch.int64 (int16 only with variant='fused'), "
                f"got {index_dtype}"
            )
        self.in_features = int(in_features)
        self.out_features, self.k = values.shape
        self.variant = variant
        self.max_chunk_elements = int(max_chunk_elements)
        if variant == "embedding_bag" and index_dtype == torch.int32:
            index_dtype = torch.int64  # embedding_bag wants int64 bags without offsets on some builds
        vals, idx = (values.t(), indices.t()) if variant == "gather_kmajor" else (values, indices)
        self.values = nn.Parameter(vals.contiguous().clone())
        self.register_buffer("indices", idx.to(index_dtype).contiguous().clone())
        self.bias = nn.Parameter(bias.detach().clone()) if bias is not None else None
        self.register_buffer("rows", rows.to(torch.int64).clone())

    @classmethod
    @torch.no_grad()
    def from_linear(
        cls,
        linear: nn.Linear,
        mask: torch.Tensor | None = None,
        drop_inactive: bool = True,
        variant: str = "gather",
        index_dtype: torch.dtype = torch.int64,
    ) -> CondensedLinear:
        """Condense a (masked) ``nn.Linear``. ``mask`` (bool, ``linear.weight``'s shape) defaults to
        ``weight != 0``. With ``drop_inactive`` the rows without any connection (ablated neurons) are dropped, so
        the output has ``rows.numel()`` features; otherwise every row is kept (empty rows output their bias)."""
        if not isinstance(linear, nn.Linear):
            raise ValueError(f"from_linear expects an nn.Linear, got {type(linear).__name__}")
        return cls.from_weight(
            linear.weight,
            linear.bias,
            mask,
            drop_inactive=drop_inactive,
            variant=variant,
            index_dtype=index_dtype,
        )

    @classmethod
    @torch.no_grad()
    def from_weight(
        cls,
        weight: torch.Tensor,
        bias: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        *,
        drop_inactive: bool = True,
        rows: torch.Tensor | None = None,
        variant: str = "gather",
        index_dtype: torch.dtype = torch.int64,
    ) -> CondensedLinear:
        """Condense a weight ``[out, in]`` (+ bias ``[out]``). Rows with fewer non-zeros than the widest row are
        padded with zero-valued entries, so any sparse layer converts exactly; constant fan-in needs no padding."""
        weight = weight.detach()
        if weight.dim() != 2:
            raise ValueError(f"weight must be [out, in], got shape {tuple(weight.shape)}")
        if mask is None:
            mask = weight != 0
        mask = mask.to(torch.bool)
        if mask.shape != weight.shape:
            raise ValueError(
                f"mask shape {tuple(mask.shape)} does not match weight shape {tuple(weight.shape)}"
            )
        if rows is None:
            # Active neurons have at least one connection: (mask).any(1). (The official code tests W.sum(1) != 0,
            # which drops rows whose weights happen to cancel.)
            rows = mask.any(dim=1).nonzero().flatten() if drop_inactive else torch.arange(weight.shape[0])
        rows = rows.to(weight.device)
        m = mask[rows]
        w = (weight * mask)[rows]
        k = max(1, int(m.sum(dim=1).max())) if m.numel() else 1
        # The k active columns of each row first (stable, ascending column order), padding after them.
        order = (~m).to(torch.uint8).argsort(dim=1, stable=True)[:, :k]
        values = w.gather(1, order)  # padding positions hold masked-out (zero) weights
        b = bias.detach()[rows] if bias is not None else None
        return cls(values, order, b, weight.shape[1], rows, variant=variant, index_dtype=index_dtype)

    def to_dense_weight(self) -> torch.Tensor:
        """The equivalent dense weight ``[out_features, in_features]``."""
        vals, idx = (
            (self.values.t(), self.indices.t())
            if self.variant == "gather_kmajor"
            else (self.values, self.indices)
        )
        w = torch.zeros(self.out_features, self.in_features, dtype=vals.dtype, device=vals.device)
        return w.scatter_add(1, idx.long(), vals.detach())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.in_features:
            raise ValueError(f"expected input with last dim {self.in_features}, got shape {tuple(x.shape)}")
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features)
        chunk = max(1, self.max_chunk_elements // max(1, self.out_features * self.k))
        if x2.shape[0] <= chunk:
            y = condensed_linear(x2, self.values, self.indices, self.bias, self.variant, self.kernel_mode)
        else:  # bounded memory: the gather materialises [B, n, k]
            y = torch.cat(
                [
                    condensed_linear(c, self.values, self.indices, self.bias, self.variant, self.kernel_mode)
                    for c in x2.split(chunk)
                ]
            )
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, k={self.k}, "
            f"bias={self.bias is not None}, variant={self.variant!r}"
        )


def _masks_of(source) -> dict[str, torch.Tensor]:
    if source is None:
        return {}
    if hasattr(source, "masks") and not isinstance(source, Mapping):
        return dict(source.masks)
    if isinstance(source, Mapping):
        return dict(source)
    raise ValueError(f"masks must be a Sparsifier, a dict name -> mask, or None; got {type(source).__name__}")


@torch.no_grad()
def condense(
    model: nn.Module,
    masks=None,
    *,
    drop_ablated: bool = True,
    variant: str = "gather",
    index_dtype: torch.dtype = torch.int64,
) -> nn.Module:
    """A condensed copy of ``model`` for inference (``eval`` mode); ``model`` is not changed.

    Every ``nn.Linear`` (except attention out-projections, which ``nn.MultiheadAttention`` reads directly) becomes
    a :class:`CondensedLinear`. Inside an ``nn.Sequential``, a Linear followed (through elementwise activations
    only) by another Linear drops its ablated neurons; the next Linear drops the matching input columns and adds
    ``W_next[:, ablated] @ act(bias[ablated])`` to its bias, so outputs are unchanged. Other Linears keep all rows.

    masks: a sparsifier, or ``{parameter name: bool mask}``; default ``weight != 0``.
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be an nn.Module, got {type(model).__name__}")
    mask_by_name = _masks_of(masks)
    out = copy.deepcopy(model).eval()
    names = {id(m): n for n, m in out.named_modules()}

    def mask_for(lin: nn.Linear) -> torch.Tensor:
        n = names[id(lin)]
        key = f"{n}.weight" if n else "weight"
        m = mask_by_name.get(key)
        if m is None:
            return lin.weight != 0
        if m.shape != lin.weight.shape:
            raise ValueError(
                f"mask for {key} has shape {tuple(m.shape)}, the model's weight "
                f"{tuple(lin.weight.shape)}: masks come from a different architecture"
            )
        return m.to(lin.weight.device, torch.bool)

    done: set[int] = set()
    for seq in [m for m in out.modules() if isinstance(m, nn.Sequential)]:
        kids = list(seq.named_children())
        # carried[i] = (weight, bias, mask) of the i-th child after folding from its predecessor
        carried: dict[int, tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]] = {}
        for i, (cname, child) in enumerate(kids):
            if not isinstance(child, nn.Linear) or id(child) in done:
                continue
            w, b, m = carried.get(i, (child.weight.detach(), child.bias, mask_for(child)))
            j = i + 1
            while j < len(kids) and isinstance(kids[j][1], ELEMENTWISE_MODULES):
                j += 1
            nxt = kids[j][1] if j < len(kids) and isinstance(kids[j][1], nn.Linear) else None
            active = m.any(dim=1)
            if drop_ablated and nxt is not None and not bool(active.all()):
                rows = active.nonzero().flatten()
                abl = (~active).nonzero().flatten()
                # Ablated neurons output act(bias) (or act(0)): a constant folded into the next layer's bias.
                const = b.detach()[abl] if b is not None else torch.zeros(len(abl), dtype=w.dtype)
                for _, mod in kids[i + 1 : j]:
                    const = mod(const)
                nw, nb, nm = carried.get(j, (nxt.weight.detach(), nxt.bias, mask_for(nxt)))
                extra = (nw * nm)[:, abl] @ const
                if nb is not None:
                    nb = nb.detach() + extra
                elif bool((extra != 0).any()):
                    nb = extra
                carried[j] = (nw[:, rows], nb, nm[:, rows])
            else:
                rows = torch.arange(w.shape[0])
            new = CondensedLinear.from_weight(w, b, m, rows=rows, variant=variant, index_dtype=index_dtype)
            setattr(seq, cname, new)
            done.add(id(child))
    # Remaining Linears (outside Sequential chains): keep every row so shapes are unchanged.
    for parent in list(out.modules()):
        if isinstance(parent, nn.MultiheadAttention | CondensedLinear):
            continue
        for cname, child in list(parent.named_children()):
            if isinstance(child, nn.Linear) and id(child) not in done:
                new = CondensedLinear.from_weight(
                    child.weight,
                    child.bias,
                    mask_for(child),
                    drop_inactive=False,
                    variant=variant,
                    index_dtype=index_dtype,
                )
                setattr(parent, cname, new)
                done.add(id(child))
    return out
