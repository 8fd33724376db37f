"""Built-in offline data: seeded synthetic aligned layouts (title / text / figure / table in one or two columns).

Every element stacks top-down in a column with a 0.02 gap and spans the column's width, so real layouts are
(almost) perfectly aligned and never overlap.
"""

from __future__ import annotations

import numpy as np
import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int

__all__ = ["synthetic_aligned_layouts"]

_HEIGHTS = {1: (0.05, 0.2), 2: (0.15, 0.3), 3: (0.1, 0.25)}  # text, figure, table
_TITLE_H = (0.04, 0.06)


def _one(rng: np.random.Generator) -> list[tuple[int, float, float, float, float]]:
    while True:
        m = float(rng.choice([0.08, 0.1]))
        ncol = int(rng.integers(1, 3))
        gutter = 0.04
        colw = (1 - 2 * m - (ncol - 1) * gutter) / ncol
        target = int(rng.integers(3, 11))
        els: list[tuple[int, float, float, float, float]] = []  # (label, x1, y1, w, h)
        top = m
        if rng.random() < 0.7:
            h = float(rng.uniform(*_TITLE_H))
            els.append((0, m, m, 1 - 2 * m, h))
            top = m + h + 0.02
        col, y = 0, top
        while len(els) < target:
            lab = int(rng.choice([1, 2, 3], p=[0.55, 0.25, 0.2]))
            h = float(rng.uniform(*_HEIGHTS[lab]))
            if y + h > 1 - m:
                col += 1
                y = top
                if col >= ncol or y + h > 1 - m:
                    break
            els.append((lab, m + col * (colw + gutter), y, colw, h))
            y += h + 0.02
        if len(els) >= 3:
            return els


def synthetic_aligned_layouts(
    n: int, seed: int = 0, max_elements: int = 12
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``n`` seeded layouts padded to ``max_elements``: (bbox (n, L, 4) centre format, labels (n, L), mask (n, L)).
    Labels index ``DEFAULT_CATEGORIES`` (title, text, figure, table); 3-10 elements each."""
    check_int(n, "n", minimum=1, maximum=10**7)
    check_int(seed, "seed", minimum=0, maximum=2**32 - 1)
    if isinstance(max_elements, bool) or not isinstance(max_elements, int) or not 10 <= max_elements <= 10**4:
        raise InputError(
            f"max_elements must be an int in [10, 10**4] (layouts have up to 10 elements), got {max_elements!r}"
        )
    rng = np.random.default_rng(seed)
    bbox = np.zeros((n, max_elements, 4), dtype=np.float32)
    labels = np.zeros((n, max_elements), dtype=np.int64)
    mask = np.zeros((n, max_elements), dtype=bool)
    for k in range(n):
        for i, (lab, x1, y1, w, h) in enumerate(_one(rng)):
            bbox[k, i] = (x1 + w / 2, y1 + h / 2, w, h)
            labels[k, i] = lab
            mask[k, i] = True
    return torch.from_numpy(bbox), torch.from_numpy(labels), torch.from_numpy(mask)
