"""Layouts as token sequences, the representation of the official ``Diffusion`` model.

Notation: a layout has up to L elements; element i has a category c_i in 0..C-1 and a box b_i = (xc, yc, w, h) in
[0, 1]^4 (centre format). Its token is ``[one-hot over C+1 classes (index C = PAD) | 2 (b_i - 0.5)]``, so tokens are
(L, C + 5); padding tokens are class PAD with box -1.
"""

from __future__ import annotations

import torch

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
    names = list(names)
    if not names:
        raise ValueError("expected at least one category name, got none")
    unknown = [n for n in names if n not in categories]
    if unknown:
        raise ValueError(f"unknown category name(s) {unknown}; expected some of {list(categories)}")
    return torch.tensor([categories.index(n) for n in names], dtype=torch.long)


def validate_layout(
    bbox: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, num_classes: int, max_elements: int
):
    """Check a batch of layouts: bbox (B, N, 4) in [0, 1] with w, h >= 0; labels (B, N) in 0..C-1 where valid; mask
    (B, N) bool; N <= max_elements. Raises ValueError saying what was expected and what came."""
    if not isinstance(bbox, torch.Tensor) or bbox.ndim != 3 or bbox.shape[-1] != 4:
        raise ValueError(
            f"bbox must be a (B, N, 4) tensor, got {getattr(bbox, 'shape', type(bbox).__name__)}"
        )
    if labels.shape != bbox.shape[:2] or mask.shape != bbox.shape[:2]:
        raise ValueError(
            f"labels and mask must be (B, N) = {tuple(bbox.shape[:2])}, got {tuple(labels.shape)}, {tuple(mask.shape)}"
        )
    if bbox.shape[1] > max_elements:
        raise ValueError(f"a layout has at most {max_elements} elements, got {bbox.shape[1]}")
    m = mask.bool()
    b = bbox[m]
    if not torch.isfinite(b).all():
        raise ValueError("bbox has non-finite values")
    if b.numel() and (b.min() < 0 or b.max() > 1):
        raise ValueError(
            f"boxes must lie in [0, 1] (xc, yc, w, h), got values in [{b.min():.3g}, {b.max():.3g}]"
        )
    if b.numel() and (b[:, 2:] < 0).any():
        raise ValueError("box widths and heights must be >= 0, got a negative size")
    lab = labels[m]
    if lab.numel() and (lab.min() < 0 or lab.max() >= num_classes):
        raise ValueError(f"labels must be in 0..{num_classes - 1}, got values in [{lab.min()}, {lab.max()}]")


def encode_layout(
    bbox: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, num_classes: int, max_elements: int
) -> torch.Tensor:
    """(B, N, 4) boxes, (B, N) labels and mask -> (B, L, C+5) tokens, padded to L = max_elements."""
    validate_layout(bbox, labels, mask, num_classes, max_elements)
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
    if tokens.ndim != 3 or tokens.shape[-1] != num_classes + 5:
        raise ValueError(f"tokens must be (B, L, {num_classes + 5}), got {tuple(tokens.shape)}")
    bbox = tokens[..., num_classes + 1 :].clamp(-1, 1) / 2 + 0.5
    label = tokens[..., : num_classes + 1].argmax(-1)
    return bbox, label, label != num_classes


def xywh_to_ltrb(bbox: torch.Tensor) -> torch.Tensor:
    """(..., 4) centre-format boxes -> (x1, y1, x2, y2)."""
    xy, wh = bbox[..., :2], bbox[..., 2:]
    return torch.cat([xy - wh / 2, xy + wh / 2], dim=-1)
