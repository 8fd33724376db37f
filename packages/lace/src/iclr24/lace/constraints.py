"""The aesthetic constraints of LACE: alignment and overlap, as metrics and as differentiable losses.

Notation: boxes b (B, L, 4) centre format in [0, 1], mask m (B, L) of real elements. For element i the six
coordinates X_i = (xl, xc, xr, yt, yc, yb). PIoU_ij is the pairwise IoU (0 on the diagonal and for padding).
"""

from __future__ import annotations

import warnings

import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import describe

from .layout import xywh_to_ltrb

__all__ = [
    "alignment_matrix",
    "alignment_score",
    "pairwise_iou",
    "overlap_score",
    "overlap_loss",
    "alignment_loss",
    "global_alignment_loss",
]


def _check_layouts(
    bbox: object, mask: object, what: str, *, nonempty: bool, finite: bool, padding_partners: bool = False
) -> torch.Tensor:
    """``mask`` as a bool tensor once ``bbox`` is a floating (B, L, 4) tensor and ``mask`` a (B, L) one of booleans
    (or 0/1 numbers); with ``finite`` the scored boxes hold no NaN/inf, with ``nonempty`` at least one element is
    real. One InputError naming ``what`` otherwise."""
    if not isinstance(bbox, torch.Tensor) or bbox.ndim != 3 or bbox.shape[-1] != 4:
        raise InputError(f"{what}: bbox must be a (B, L, 4) tensor, got {describe(bbox)}")
    if not bbox.is_floating_point():
        raise InputError(
            f"{what}: bbox must be floating point (centre-format boxes in [0, 1]), got {describe(bbox)}"
        )
    if not isinstance(mask, torch.Tensor) or tuple(mask.shape) != tuple(bbox.shape[:2]):
        raise InputError(
            f"{what}: mask must be a (B, L) = {tuple(bbox.shape[:2])} tensor, got {describe(mask)}"
        )
    if mask.dtype != torch.bool:
        if mask.is_complex() or not ((mask == 0) | (mask == 1)).all():
            raise InputError(
                f"{what}: mask must hold booleans (True for a real element) or 0/1, got {describe(mask)} with "
                "other values"
            )
        mask = mask != 0
    if nonempty and not bool(mask.any()):
        raise InputError(f"{what}: the mask has no real element (all False): there is nothing to score")
    if finite:
        scored = bbox if padding_partners else bbox[mask]
        if not bool(torch.isfinite(scored).all()):
            raise InputError(
                f"{what}: bbox holds NaN or inf at {'a slot' if padding_partners else 'a real element'}"
            )
    return mask


def _coords6(bbox: torch.Tensor) -> torch.Tensor:
    xc, yc, w, h = bbox.unbind(-1)
    return torch.stack([xc - w / 2, xc, xc + w / 2, yc - h / 2, yc, yc + h / 2], dim=-1)  # (B, L, 6)


def alignment_matrix(bbox: torch.Tensor, mask: torch.Tensor, padding_partners: bool = False) -> torch.Tensor:
    """A[b, i, k, j] = |X_ik - X_jk| for real i and j != i, else 1; shape (B, L, 6, L).

    ``padding_partners=False`` (this package): padding elements j are no partners either. ``True``: the official
    ``util/metric.py: compute_alignment`` (line 114, ``X[~mask] = 1.0``) masks only the rows, so a padding slot's
    box (whatever the sampler left there) still counts as a partner of every real element."""
    X = _coords6(bbox).transpose(1, 2)  # (B, 6, L)
    A = (X.unsqueeze(-1) - X.unsqueeze(-2)).abs().permute(0, 2, 1, 3)  # (B, L_i, 6, L_j)
    L = bbox.shape[1]
    m = mask.bool()
    off = ~torch.eye(L, dtype=torch.bool, device=bbox.device)
    cols = torch.ones_like(m) if padding_partners else m
    valid = m[:, :, None, None] & cols[:, None, None, :] & off[None, :, None, :]
    return torch.where(valid, A, torch.ones_like(A))


def _alignment(
    bbox: torch.Tensor, mask: torch.Tensor, eps: float, padding_partners: bool, empty: float
) -> torch.Tensor:
    m = mask.bool()
    a = alignment_matrix(bbox, m, padding_partners).amin(dim=(-1, -2))  # (B, L)
    a = torch.where(a == 1.0, torch.zeros_like(a), a)
    a = torch.where(m, a, torch.zeros_like(a))
    one_minus = (1 - a).clamp_min(eps) if eps > 0 else 1 - a
    # Eq. (Align): sum_i -log(1 - a_i) / |valid|
    s = (-torch.log(one_minus)).sum(-1)
    n = m.sum(-1)
    return torch.where(n > 0, s / n.clamp_min(1), torch.full_like(s, empty))


def alignment_score(bbox: torch.Tensor, mask: torch.Tensor, padding_partners: bool = False) -> torch.Tensor:
    """LayoutGAN++ alignment per layout (B,): a_i = min_{k, j != i} |X_ik - X_jk| (1 -> 0),
    Align = sum_i -log(1 - a_i) / #real.

    ``padding_partners=True`` is the official metric (``util/metric.py: compute_alignment``): padding slots stay
    partners. A layout with no real element has nothing to score: its entry is NaN and a warning says how many
    there were (the official metric returns 0.0 for it, as if it were perfectly aligned); average with
    ``torch.nanmean`` and report the count, or use :func:`iclr24.lace.metrics.layout_metrics`. A mask without any
    real element, a mask that is not boolean (or 0/1), and NaN/inf boxes are InputErrors."""
    mask = _check_layouts(
        bbox, mask, "alignment_score", nonempty=True, finite=True, padding_partners=padding_partners
    )
    out = _alignment(bbox, mask, 0.0, padding_partners, float("nan"))
    empty = int((~mask.bool()).all(-1).sum())
    if empty:
        warnings.warn(
            f"alignment_score: {empty} of {bbox.shape[0]} layouts have no real element; their alignment is "
            "undefined and returned as NaN (not 0.0, which would score them as perfectly aligned)",
            stacklevel=2,
        )
    return out


def alignment_loss(
    bbox: torch.Tensor, mask: torch.Tensor, scale: float = 20.0, padding_partners: bool = False
) -> torch.Tensor:
    """The 'local' alignment loss, 20 * Align(b_hat, mask), per layout (B,); 0 for a layout without real elements
    (nothing to align), 1 - a_i clamped at 1e-6 so that it stays finite.

    ``padding_partners=False`` (the default): only real elements are partners, Align as the paper defines it.
    ``True`` is the official ``util/constraint.py: layout_alignment``, which masks only the rows (``X[~mask] =
    1.0``), so every padding slot's predicted box is a partner of every real element too (and gets gradient
    toward the real elements' coordinates)."""
    mask = _check_layouts(bbox, mask, "alignment_loss", nonempty=False, finite=False)
    return scale * _alignment(bbox, mask, 1e-6, bool(padding_partners), 0.0)


def global_alignment_loss(
    bbox: torch.Tensor,
    bbox_real: torch.Tensor,
    mask: torch.Tensor,
    threshold: float = 1e-5,
    padding_partners: bool = False,
) -> torch.Tensor:
    """The official 'global' alignment loss (``mean_alignment_error``), per layout (B,): the sum of the predicted
    |X_ik - X_jk| over every (i, k, j) whose coordinate pair is aligned (|diff| < ``threshold``) in the real layout.
    ``padding_partners=True``: padding slots j count as partners, as the official ``layout_alignment_matrix``."""
    mask = _check_layouts(bbox, mask, "global_alignment_loss", nonempty=False, finite=False)
    _check_layouts(bbox_real, mask, "global_alignment_loss (bbox_real)", nonempty=False, finite=False)
    if not isinstance(bbox_real, torch.Tensor) or bbox_real.shape != bbox.shape:
        raise InputError(
            f"bbox_real must have the shape of bbox {tuple(bbox.shape)}, got {describe(bbox_real)}"
        )
    pp = bool(padding_partners)
    aligned = (alignment_matrix(bbox_real, mask, pp) < threshold).detach()
    # Eq. (L_align, global): sum_{i, k, j: |X*_ik - X*_jk| < th} |X_ik - X_jk|
    return (alignment_matrix(bbox, mask, pp) * aligned).sum((1, 2, 3))


def _areas_and_intersections(bbox: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The areas (B, L) of the xywh boxes and the areas (B, L, L) of every pair's intersection."""
    box = xywh_to_ltrb(bbox)
    area = (box[..., 2] - box[..., 0]) * (box[..., 3] - box[..., 1])
    lt = torch.maximum(box[:, :, None, :2], box[:, None, :, :2])
    rb = torch.minimum(box[:, :, None, 2:], box[:, None, :, 2:])
    wh = (rb - lt).clamp_min(0)
    return area, wh[..., 0] * wh[..., 1]


def _pairs_of_real_elements(bbox: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, L, L) in ``bbox``'s dtype: 1 for a pair i != j of real elements, else 0."""
    L = bbox.shape[1]
    m = mask.to(bbox.dtype)
    return m[:, :, None] * m[:, None, :] * (1 - torch.eye(L, dtype=bbox.dtype, device=bbox.device))


def pairwise_iou(bbox: torch.Tensor, mask: torch.Tensor, detach_wh: bool = False) -> torch.Tensor:
    """PIoU (B, L, L): IoU of every pair of real elements, 0 on the diagonal. ``detach_wh`` as the official
    ``PIoU_xywh(xy_only=True)``: gradients reach the centres only."""
    mask = _check_layouts(bbox, mask, "pairwise_iou", nonempty=False, finite=False)
    if detach_wh:
        bbox = torch.cat([bbox[..., :2], bbox[..., 2:].detach().abs()], dim=-1)
    area, inter = _areas_and_intersections(bbox)
    union = area[:, :, None] + area[:, None, :] - inter
    iou = inter / (union + 1e-10)
    return iou * _pairs_of_real_elements(bbox, mask)


def overlap_score(bbox: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """LayoutGAN++ overlap per layout: sum_{i != j} |b_i cap b_j| / |b_i|, divided by #real (0 for a layout
    without real elements). A mask without any real element, a non-boolean mask and NaN/inf boxes at real elements
    are InputErrors."""
    mask = _check_layouts(bbox, mask, "overlap_score", nonempty=True, finite=True)
    return _overlap(bbox, mask)


def _overlap(bbox: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    area, inter = _areas_and_intersections(bbox)
    ai = inter / area[:, :, None].clamp_min(1e-10)
    keep = _pairs_of_real_elements(bbox, mask)
    n = mask.sum(-1)
    s = (ai * keep).sum((1, 2))
    return torch.where(n > 0, s / n.clamp_min(1), torch.zeros_like(s))


def overlap_loss(bbox: torch.Tensor, mask: torch.Tensor, detach_wh: bool = False) -> torch.Tensor:
    """The official overlap loss per layout: mean_ij PIoU_ij + mean_ij 1[PIoU_ij != 0] exp(-||c_i - c_j||_2),
    means over all L x L pairs. In training the official ``train.py`` calls ``PIoU_xywh(..., xy_only=False)``, so
    the gradient reaches w, h too (the default here); ``detach_wh=True`` is the post-processing variant."""
    mask = _check_layouts(bbox, mask, "overlap_loss", nonempty=False, finite=False)
    piou = pairwise_iou(bbox, mask, detach_wh=detach_wh)
    d = torch.cdist(bbox[..., :2], bbox[..., :2]) if bbox.shape[1] > 1 else torch.zeros_like(piou)
    # Eq. (L_overlap): mean PIoU + mean 1[PIoU != 0] exp(-dist)
    return piou.mean((1, 2)) + ((piou != 0).to(bbox.dtype) * torch.exp(-d)).mean((1, 2))
