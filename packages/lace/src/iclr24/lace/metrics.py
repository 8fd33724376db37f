"""Layout metrics beyond alignment/overlap: MaxIoU (LayoutGAN++) and a Frechet distance of hand-made layout features
(a stand-in for FID: FIDNet weights are not available offline)."""

from __future__ import annotations

import warnings
from collections import defaultdict

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_choice
from iclr24.paperkit.errors import check_int

from .constraints import alignment_score
from .constraints import overlap_score
from .diffusion import TASKS
from .fid import _fd
from .layout import as_layouts
from .layout import xywh_to_ltrb

__all__ = [
    "METRIC_VARIANTS",
    "layout_features",
    "feature_fd",
    "max_iou",
    "box_iou",
    "alignment_overlap",
    "layout_metrics",
]

METRIC_VARIANTS = ("official", "package")
COND_TASKS = ("c", "cwh", "complete", "refine")  # the tasks that condition on a real layout
MAXIOU_TASKS = ("c", "cwh", "refine")  # tasks whose output keeps the condition's categories


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU matrix of centre-format boxes a (n, 4) and b (m, 4)."""
    A = xywh_to_ltrb(torch.as_tensor(a, dtype=torch.float64)).numpy()
    B = xywh_to_ltrb(torch.as_tensor(b, dtype=torch.float64)).numpy()
    lt = np.maximum(A[:, None, :2], B[None, :, :2])
    rb = np.minimum(A[:, None, 2:], B[None, :, 2:])
    wh = np.clip(rb - lt, 0, None)
    inter = wh[..., 0] * wh[..., 1]
    area_a = (A[:, 2] - A[:, 0]) * (A[:, 3] - A[:, 1])
    area_b = (B[:, 2] - B[:, 0]) * (B[:, 3] - B[:, 1])
    return inter / np.maximum(area_a[:, None] + area_b[None, :] - inter, 1e-12)


def _pair_score(b1, l1, b2, l2) -> float:
    """Mean IoU of the best class-consistent one-to-one matching of two layouts with the same label multiset."""
    total = 0.0
    for c in np.unique(l1):
        i, j = np.where(l1 == c)[0], np.where(l2 == c)[0]
        iou = box_iou(b1[i], b2[j])
        r, k = linear_sum_assignment(-iou)
        total += float(iou[r, k].sum())
    return total / len(l1)


def max_iou(gen, real) -> float:
    """LayoutGAN++ MaxIoU: layouts grouped by their label multiset; within a group, generated and real layouts are
    matched one-to-one (Hungarian) by the class-consistent mean IoU; the mean over all matched pairs."""
    gb, gl, gm = as_layouts(gen, "generated layouts")
    rb, rl, rm = as_layouts(real, "real layouts")

    def groups(b, lab, m):
        out = defaultdict(list)
        for k in range(b.shape[0]):
            mk = m[k].bool().numpy()
            lk = lab[k].numpy()[mk]
            order = np.argsort(lk, kind="stable")
            out[tuple(lk[order])].append((b[k].numpy()[mk][order], lk[order]))
        return out

    G, R = groups(gb, gl, gm), groups(rb, rl, rm)
    scores = []
    for key, gs in G.items():
        rs = R.get(key)
        if not rs or not key:
            continue
        S = np.array([[_pair_score(g[0], g[1], r[0], r[1]) for r in rs] for g in gs])
        i, j = linear_sum_assignment(-S)
        scores.extend(S[i, j].tolist())
    return float(np.mean(scores)) if scores else 0.0


def layout_features(
    bbox: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, num_classes: int
) -> np.ndarray:
    """Per layout: per-class counts, per-class mean and std of (x, y, w, h), the top-8 boxes sorted by y (zero
    padded); (B, C + 8C + 32)."""
    _, _, mask = as_layouts((bbox, labels, mask), "layouts", num_classes=num_classes)
    feats = []
    for k in range(bbox.shape[0]):
        m = mask[k].bool()
        b, lab = bbox[k][m].double().numpy(), labels[k][m].numpy()
        f = [np.bincount(lab, minlength=num_classes)[:num_classes].astype(np.float64)]
        for c in range(num_classes):
            bc = b[lab == c]
            f.append(bc.mean(0) if len(bc) else np.zeros(4))
            f.append(bc.std(0) if len(bc) else np.zeros(4))
        top = b[np.argsort(b[:, 1], kind="stable")][:8] if len(b) else np.zeros((0, 4))
        f.append(np.concatenate([top.reshape(-1), np.zeros(32 - top.size)]))
        feats.append(np.concatenate(f))
    return np.stack(feats)


def feature_fd(gen, real, num_classes: int) -> float:
    """Frechet distance between the layout features of generated and real layouts."""
    gen = as_layouts(gen, "generated layouts", num_classes)
    real = as_layouts(real, "real layouts", num_classes)
    return _fd(layout_features(*gen, num_classes), layout_features(*real, num_classes))


def alignment_overlap(gen, real, task: str, variant: str = "official") -> dict:
    """Alignment x100 and Overlap x100 of generated layouts ``gen = (bbox, labels, mask)``, scored as ``variant``
    says (see :func:`layout_metrics`), with ``empty_layouts`` (generated layouts without elements)."""
    check_choice(variant, "variant", METRIC_VARIANTS)
    check_choice(task, "task", TASKS)
    b, _, m = as_layouts(gen, "generated layouts")
    score_mask = m
    if variant == "official" and task in COND_TASKS:
        rm = as_layouts(real, "real layouts")[2]
        if rm.shape[0] != m.shape[0] or rm.shape[1] > m.shape[1]:
            raise InputError(
                f"real layouts {tuple(rm.shape)} do not match the generated ones {tuple(m.shape)} slot by slot"
            )
        score_mask = torch.nn.functional.pad(rm, (0, m.shape[1] - rm.shape[1]), value=False)
    partners = variant == "official"
    if score_mask.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # layouts without elements are counted and reported below
            align = alignment_score(b.double(), score_mask, padding_partners=partners)
        overlap = overlap_score(b.double(), score_mask)
    else:  # no element anywhere: nothing to score (alignment_score refuses an empty mask)
        align = torch.full((b.shape[0],), float("nan"), dtype=torch.float64)
        overlap = torch.zeros(b.shape[0], dtype=torch.float64)
    # official: score_normalized[isnan] = 0 (util/metric.py line 124); package: the mean over scored layouts
    a = float(torch.nan_to_num(align, nan=0.0).mean()) if partners else float(torch.nanmean(align))
    return {
        "align_x100": 100 * a if np.isfinite(a) else None,  # None: every layout empty (package variant)
        "overlap_x100": 100 * float(overlap.mean()),
        "empty_layouts": int((~m).all(-1).sum()),
    }


def layout_metrics(gen, real, num_classes: int, task: str, variant: str = "official") -> dict:
    """Alignment x100, Overlap x100, feature FD, mean elements, empty layouts (and MaxIoU for ``c``, ``cwh``,
    ``refine``) of generated layouts ``gen = (bbox, labels, mask)`` against the real layouts ``real``.

    ``variant="official"`` scores alignment and overlap as the official evaluation does (``test.py`` with
    ``util/metric.py``): padding slots are alignment partners (``compute_alignment``), a layout without elements
    counts as Alignment 0 in the mean, and for the conditional tasks (``c``, ``cwh``, ``complete``, ``refine``) the
    generated boxes are scored under the *real* layout's mask (``test.py`` lines 169-172, 270-272), so an element the
    sampler or beautify dropped is still scored. ``variant="package"``: the generated mask, no padding partners, and
    layouts without elements left out of the alignment mean (``align_x100`` is None when every layout is empty).
    Both report ``empty_layouts``, the number of generated layouts without elements. MaxIoU and FD always use the
    generated mask, as the official code does."""
    check_int(num_classes, "num_classes", minimum=1, maximum=10**6)
    res = alignment_overlap(gen, real, task, variant)
    res["fd"] = feature_fd(gen, real, num_classes)
    res["elements"] = float(as_layouts(gen, "generated layouts")[2].sum(1).float().mean())
    if task in MAXIOU_TASKS:
        res["max_iou"] = max_iou(gen, real)
    return res
