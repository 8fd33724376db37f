"""Layout metrics beyond alignment/overlap: MaxIoU (LayoutGAN++) and a Frechet distance of hand-made layout features
(a stand-in for FID: FIDNet weights are not available offline)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from iclr24.paperkit.metrics import frechet_distance

from .layout import xywh_to_ltrb

__all__ = ["layout_features", "feature_fd", "max_iou", "box_iou"]


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
    (gb, gl, gm), (rb, rl, rm) = gen, real

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
    return frechet_distance(layout_features(*gen, num_classes), layout_features(*real, num_classes))
