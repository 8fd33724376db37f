"""Layouts as token sequences, the representation of the official ``Diffusion`` model.

Notation: a layout has up to L elements; element i has a category c_i in 0..C-1 and a box b_i = (xc, yc, w, h) in
[0, 1]^4 (centre format). Its token is ``[one-hot over C+1 classes (index C = PAD) | 2 (b_i - 0.5)]``, so tokens are
(L, C + 5); padding tokens are class PAD with box -1.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

__all__ = [
    "DEFAULT_CATEGORIES",
    "validate_layout",
    "encode_layout",
    "finalize",
    "xywh_to_ltrb",
    "labels_from_names",
]

DEFAULT_CATEGORIES: tuple[str, ...] = ("title", "text", "figure", "table")


def labels_from_names(names, categories=DEFAULT_CATEGORIES) -> torch.Tensor:
    """Category names (a list, or a comma-separated string) -> int64 labels; unknown names are a ValueError."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    names = list(names) if isinstance(names, Iterable) else names
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputError(
            f"names must be category names (strings, or one comma-separated string), got {describe(names)}"
        )
    if not names:
        raise InputError("expected at least one category name, got none")
    unknown = [n for n in names if n not in categories]
    if unknown:
        raise InputError(f"unknown category name(s) {unknown}; expected some of {list(categories)}")
    return torch.tensor([categories.index(n) for n in names], dtype=torch.long)


def validate_layout(
    bbox: torch.Tensor,
    labels: torch.Tensor,
    mask: torch.Tensor,
    num_classes: int | None,
    max_elements: int | None,
    *,
    unit_boxes: bool = True,
    what: str = "layouts",
) -> torch.Tensor:
    """Check a batch of layouts: bbox (B, N, 4) floating, finite where valid (in [0, 1] with w, h >= 0 when
    ``unit_boxes``); labels (B, N) integers in 0..C-1 where valid; mask (B, N) bool (or 0/1); B, N >= 1;
    N <= max_elements. Returns the mask as bool; raises InputError saying what was expected and what came."""
    if num_classes is not None:
        check_int(num_classes, "num_classes", minimum=1, maximum=10**6)
    if (
        not isinstance(bbox, torch.Tensor)
        or bbox.ndim != 3
        or bbox.shape[-1] != 4
        or not bbox.is_floating_point()
    ):
        raise InputError(f"{what}: bbox must be a (B, N, 4) floating-point tensor, got {describe(bbox)}")
    if bbox.shape[0] == 0 or bbox.shape[1] == 0:
        raise InputError(
            f"{what}: expected at least one layout of at least one slot, got bbox {describe(bbox)}"
        )
    for name, t in (("labels", labels), ("mask", mask)):
        if not isinstance(t, torch.Tensor) or tuple(t.shape) != tuple(bbox.shape[:2]):
            raise InputError(
                f"{what}: {name} must be a (B, N) = {tuple(bbox.shape[:2])} tensor, got {describe(t)}"
            )
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise InputError(f"{what}: labels must be integer category indices, got {describe(labels)}")
    if mask.dtype != torch.bool:
        if mask.is_complex() or not ((mask == 0) | (mask == 1)).all():
            raise InputError(
                f"{what}: mask must hold booleans (or 0/1), got {describe(mask)} with other values"
            )
        mask = mask != 0
    if max_elements is not None and bbox.shape[1] > max_elements:
        raise InputError(f"{what}: a layout has at most {max_elements} elements, got {bbox.shape[1]}")
    m = mask
    b = bbox[m]
    if not torch.isfinite(b).all():
        raise InputError(f"{what}: bbox has non-finite values (NaN or inf) at real elements")
    if unit_boxes and b.numel() and (b.min() < 0 or b.max() > 1):
        raise InputError(
            f"{what}: boxes must lie in [0, 1] (xc, yc, w, h), got values in [{b.min():.3g}, {b.max():.3g}]"
        )
    if unit_boxes and b.numel() and (b[:, 2:] < 0).any():
        raise InputError(f"{what}: box widths and heights must be >= 0, got a negative size")
    lab = labels[m]
    if lab.numel() and (lab.min() < 0 or (num_classes is not None and lab.max() >= num_classes)):
        raise InputError(
            f"{what}: labels must be in 0..{'C-1' if num_classes is None else num_classes - 1}, got values in "
            f"[{int(lab.min())}, {int(lab.max())}]"
        )
    return mask


def as_layouts(
    layouts: object, what: str, num_classes: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``layouts`` as a checked ``(bbox, labels, mask)`` triple (mask as bool) of finite boxes; labels in range
    when ``num_classes`` is given. InputError naming ``what`` otherwise."""
    if not isinstance(layouts, tuple | list) or len(layouts) != 3:
        raise InputError(f"{what} must be a (bbox, labels, mask) triple, got {describe(layouts)}")
    bbox, labels, mask = layouts
    mask = validate_layout(bbox, labels, mask, num_classes, None, unit_boxes=False, what=what)
    return bbox, labels, mask


def encode_layout(
    bbox: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, num_classes: int, max_elements: int
) -> torch.Tensor:
    """(B, N, 4) boxes, (B, N) labels and mask -> (B, L, C+5) tokens, padded to L = max_elements."""
    check_int(max_elements, "max_elements", minimum=1, maximum=10**4)
    mask = validate_layout(bbox, labels, mask, num_classes, max_elements)
    B, N, _ = bbox.shape
    m = mask.bool()
    lab = torch.where(m, labels.long(), torch.full_like(labels.long(), num_classes))
    onehot = torch.nn.functional.one_hot(lab, num_classes + 1).to(bbox.dtype)
    box = torch.where(m[..., None], 2 * (bbox - 0.5), torch.full_like(bbox, -1.0))
    tok = torch.cat([onehot, box], dim=-1)
    if N < max_elements:
        pad = torch.zeros(B, max_elements - N, num_classes + 5, dtype=bbox.dtype)
        pad[..., num_classes] = 1.0
        pad[..., num_classes + 1 :] = -1.0
        tok = torch.cat([tok, pad], dim=1)
    return tok


def finalize(tokens: torch.Tensor, num_classes: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Tokens -> (bbox in [0, 1], label = argmax of the one-hot in 0..C, mask = label != PAD)."""
    check_int(num_classes, "num_classes", minimum=1, maximum=10**6)
    if not isinstance(tokens, torch.Tensor) or tokens.ndim != 3 or tokens.shape[-1] != num_classes + 5:
        raise InputError(f"tokens must be (B, L, {num_classes + 5}), got {describe(tokens)}")
    if not tokens.is_floating_point():
        raise InputError(f"tokens must be floating point, got {describe(tokens)}")
    bbox = tokens[..., num_classes + 1 :].clamp(-1, 1) / 2 + 0.5
    label = tokens[..., : num_classes + 1].argmax(-1)
    return bbox, label, label != num_classes


def xywh_to_ltrb(bbox: torch.Tensor) -> torch.Tensor:
    """(..., 4) centre-format boxes -> (x1, y1, x2, y2)."""
    xy, wh = bbox[..., :2], bbox[..., 2:]
    return torch.cat([xy - wh / 2, xy + wh / 2], dim=-1)
