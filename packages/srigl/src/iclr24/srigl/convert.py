"""Condense a whole model (:func:`condense`): every constant fan-in ``nn.Linear`` / ``nn.Conv2d`` of a masked
model becomes a :class:`~.condensed.CondensedLinear` / :class:`~.condensed.CondensedConv2d` (the layers and the
kernel choice are in :mod:`.condensed`), ablated neurons dropped and folded into the next layer's bias; and what
was chosen, layer by layer (:func:`describe`, :func:`plan_table`, :func:`auto_kernel_report`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import torch
from torch import nn

from iclr24.paperkit.errors import InputError

from .condensed import _AUTO_THRESHOLDS
from .condensed import AUTO_ONLINE_ROWS
from .condensed import ELEMENTWISE_MODULES
from .condensed import VARIANTS
from .condensed import CondensedConv2d
from .condensed import CondensedLinear

__all__ = ["auto_kernel_report", "condense", "describe", "plan_table"]


def _masks_of(source) -> dict[str, torch.Tensor]:
    if source is None:
        return {}
    if hasattr(source, "masks") and not isinstance(source, Mapping):
        return dict(source.masks)
    if isinstance(source, Mapping):
        return dict(source)
    raise InputError(f"masks must be a Sparsifier, a dict name -> mask, or None; got {type(source).__name__}")


# Modules that read their child Linears' weights directly (PyTorch's fused transformer fast path, attention's
# out-projection): condensing those children would break them, so they stay masked dense.
_READS_CHILD_WEIGHTS = (nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)


@torch.no_grad()
def condense(
    model: nn.Module,
    masks=None,
    *,
    drop_ablated: bool = True,
    variant: str = "auto",
    index_dtype: torch.dtype = torch.int64,
    convs: bool = True,
) -> nn.Module:
    """A condensed copy of ``model`` for inference (``eval`` mode); ``model`` is not changed.

    Every ``nn.Linear`` becomes a :class:`CondensedLinear` and (``convs=True``) every ``groups=1`` ``nn.Conv2d`` a
    :class:`CondensedConv2d`. Inside an ``nn.Sequential``, a Linear followed (through elementwise activations
    only) by another Linear drops its ablated neurons; the next Linear drops the matching input columns and adds
    ``W_next[:, ablated] @ act(bias[ablated])`` to its bias, so outputs are unchanged. Other layers keep all rows.
    Linears inside ``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer``
    stay masked ``nn.Linear`` (PyTorch reads their weights directly), as do grouped convolutions.

    model: any ``nn.Module``, or a :class:`~iclr24.srigl.SparseModel` (then its network, with its masks).
    masks: a sparsifier, or ``{parameter name: bool mask}``; default ``weight != 0`` (a SparseModel's masks).
    variant: ``"auto"`` (per layer and call, :func:`auto_variant`: the fused kernel where it is already built,
    the gather, or the masked dense product where condensing would be slower), or one of ``gather``,
    ``gather_kmajor``, ``embedding_bag``, ``fused``, ``dense`` for every layer.

    The returned model has ``condense_plan``: one dict per layer (name, kind, shape, k, density, variant, and what
    ``auto`` runs for 1 row and for many rows, or why the layer was kept).
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be an nn.Module, got {type(model).__name__}")
    if variant not in VARIANTS:
        raise InputError(f"variant must be one of {VARIANTS}, got {variant!r}")
    from .model import SparseModel

    if isinstance(model, SparseModel):  # a model folder's network with its own masks
        masks = model.mask_dict() if masks is None else masks
        model = model.net
    mask_by_name = _masks_of(masks)
    out = copy.deepcopy(model).eval()
    names = {id(m): n for n, m in out.named_modules()}
    plan: list[dict] = []

    def mask_for(mod: nn.Module) -> torch.Tensor:
        n = names[id(mod)]
        key = f"{n}.weight" if n else "weight"
        m = mask_by_name.get(key)
        if m is None:
            return mod.weight != 0
        if m.shape != mod.weight.shape:
            raise InputError(
                f"mask for {key} has shape {tuple(m.shape)}, the model's weight "
                f"{tuple(mod.weight.shape)}: masks come from a different architecture"
            )
        return m.to(mod.weight.device, torch.bool)

    def record(name: str, old: nn.Module, new: nn.Module | None, reason: str = "") -> None:
        row = {"name": name, "kind": type(old).__name__, "shape": list(old.weight.shape)}
        lin = new.linear if isinstance(new, CondensedConv2d) else new
        if lin is None:
            row.update(variant="kept", reason=reason)
        else:
            row.update(k=lin.k, density=round(lin.density, 6), variant=lin.variant)
            if lin.variant == "auto":
                row.update(one_row=lin.choose(1), many_rows=lin.choose(AUTO_ONLINE_ROWS))
        plan.append(row)

    protected: dict[int, str] = {}
    for parent in out.modules():
        if isinstance(parent, _READS_CHILD_WEIGHTS):
            for child in parent.modules():
                if child is not parent and isinstance(child, nn.Linear):
                    protected[id(child)] = f"inside {type(parent).__name__}, which reads the weight directly"

    done: set[int] = set()
    for seq in [m for m in out.modules() if isinstance(m, nn.Sequential)]:
        kids = list(seq.named_children())
        # carried[i] = (weight, bias, mask) of the i-th child after folding from its predecessor
        carried: dict[int, tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]] = {}
        for i, (cname, child) in enumerate(kids):
            if not isinstance(child, nn.Linear) or id(child) in done or id(child) in protected:
                continue
            w, b, m = carried.get(i, (child.weight.detach(), child.bias, mask_for(child)))
            j = i + 1
            while j < len(kids) and isinstance(kids[j][1], ELEMENTWISE_MODULES):
                j += 1
            nxt = kids[j][1] if j < len(kids) and isinstance(kids[j][1], nn.Linear) else None
            if nxt is not None and id(nxt) in protected:
                nxt = None
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
            record(names[id(child)], child, new)
            done.add(id(child))
    # Remaining Linears and Conv2ds (outside Sequential chains): keep every row so shapes are unchanged.
    for parent in list(out.modules()):
        if isinstance(parent, CondensedLinear | CondensedConv2d):
            continue
        for cname, child in list(parent.named_children()):
            if id(child) in done:
                continue
            if isinstance(child, nn.Linear):
                if id(child) in protected:
                    record(names[id(child)], child, None, protected[id(child)])
                    done.add(id(child))
                    continue
                new = CondensedLinear.from_weight(
                    child.weight,
                    child.bias,
                    mask_for(child),
                    drop_inactive=False,
                    variant=variant,
                    index_dtype=index_dtype,
                )
            elif isinstance(child, nn.Conv2d) and convs:
                if child.groups != 1 or child.padding_mode != "zeros" or isinstance(child.padding, str):
                    record(names[id(child)], child, None, "grouped or non-zero-padded convolution")
                    done.add(id(child))
                    continue
                new = CondensedConv2d.from_conv(child, mask_for(child), variant=variant)
            else:
                continue
            setattr(parent, cname, new)
            record(names[id(child)], child, new)
            done.add(id(child))
    out.condense_plan = plan
    if variant == "auto":
        _log_auto_once(plan)
    return out


_auto_logged = False


def auto_kernel_report() -> tuple[str, str]:
    """What ``variant="auto"`` runs in this process and why: ``(kernel, reason)``, e.g. ``("numba", "the C++ kernel
    is not built yet: `srigl build-kernel` builds it")``. Never builds anything."""
    from .kernels import kernel_status
    from .nbkernels import numba_available

    status = kernel_status()
    if status == "built":
        return "fused", "the C++ kernel is built"
    cxx = (
        "the C++ kernel is not built yet; `srigl build-kernel` builds it in 1-2 minutes, once"
        if status == "not built yet"
        else f"the C++ kernel is off: {status}"
    )
    if numba_available():
        return "numba", cxx
    from . import nbkernels

    why = nbkernels._failed or "disabled by SRIGL_NO_NUMBA"
    return "gather", f"no compiled kernel: numba is unavailable ({why}) and {cxx}"


def _log_auto_once(plan: list[dict]) -> None:
    """One ``logging`` record per process (logger ``iclr24.srigl``, INFO): which kernel ``auto`` runs, why, and how
    the measured crossovers split this model's layers at 1 input row."""
    global _auto_logged
    if _auto_logged:
        return
    _auto_logged = True
    import logging
    from collections import Counter

    kernel, why = auto_kernel_report()
    at_one = Counter(r.get("one_row", r["variant"]) for r in plan)
    split = ", ".join(f"{n} {v}" for v, n in sorted(at_one.items())) or "no layers"
    online, batched = _AUTO_THRESHOLDS[kernel]
    label = {"fused": "C++ kernel (fused)", "numba": "numba kernel", "gather": "pure-torch gather"}[kernel]
    logging.getLogger("iclr24.srigl").info(
        "condense(variant='auto'): the %s runs where it beats the masked dense product; %s. By the crossovers "
        "measured with `srigl bench`, a layer runs it at density <= %s below %d input rows and <= %s from there "
        "on, else the masked dense product; here at 1 row: %s (model.condense_plan lists every layer)",
        label, why, online, AUTO_ONLINE_ROWS, batched, split,
    )  # fmt: skip


def plan_table(plan: list[dict]) -> str:
    """Markdown table of a ``condense_plan``."""
    lines = [
        "| layer | kind | shape | k | density | variant | 1 row | many rows |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in plan:
        if r["variant"] == "kept":
            lines.append(
                f"| {r['name']} | {r['kind']} | {r['shape']} | - | - | kept ({r['reason']}) | - | - |"
            )
        else:
            lines.append(
                f"| {r['name']} | {r['kind']} | {r['shape']} | {r['k']} | {r['density']:.3f} | {r['variant']} | "
                f"{r.get('one_row', r['variant'])} | {r.get('many_rows', r['variant'])} |"
            )
    return "\n".join(lines) + "\n"


def describe(model: nn.Module) -> list[dict]:
    """Every condensed layer of ``model`` and what it runs: ``[{"name", "kind", "in", "out", "k", "density",
    "variant", "runs"}]`` (``runs``: the variant, or auto's choice at 1 / AUTO_ONLINE_ROWS / AUTO_MAX_ROWS rows,
    e.g. ``auto (1 row: numba, 4+ rows: numba, 4096+ rows: dense)``). Layers kept masked dense are not listed
    (``model.condense_plan`` says why)."""
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be an nn.Module, got {type(model).__name__}")
    out = []
    for name, m in model.named_modules():
        if isinstance(m, CondensedConv2d | CondensedLinear):
            if isinstance(m, CondensedLinear) and name.rsplit(".", 1)[-1] == "linear":
                parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
                if isinstance(parent, CondensedConv2d):
                    continue
            lin = m.linear if isinstance(m, CondensedConv2d) else m
            out.append(
                {
                    "name": name,
                    "kind": type(m).__name__,
                    "in": lin.in_features,
                    "out": lin.out_features,
                    "k": lin.k,
                    "density": round(lin.density, 6),
                    "variant": lin.variant,
                    "runs": lin.runs(),
                }
            )
    return out
