"""The ``beautify`` post-processing step (official ``util/constraint.py: post_process``): optimise the boxes directly
so that nearly aligned coordinates snap together and overlaps shrink, staying close to the generated boxes.

Loss = MSE(b, b_init) + w_a mean(A 1[A < 1/64]) + w_o mean PIoU(b) (w, h detached in PIoU), b = relu(param), with
x scaled by 10/4 and y by 10/6 during the optimisation; Adam lr 1e-4, gradient-norm clip 1, 1000 iterations.
"""

from __future__ import annotations

import torch

from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int

from .constraints import _check_layouts
from .constraints import alignment_matrix
from .constraints import pairwise_iou

__all__ = ["beautify"]


def beautify(
    bbox: torch.Tensor,
    mask: torch.Tensor,
    w_align: float = 1.0,
    w_overlap: float = 1.0,
    iterations: int = 1000,
    lr: float = 1e-4,
    min_size: float = 0.01,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns (bbox, mask); elements whose scaled min(w, h) falls below ``min_size`` are dropped from the mask
    (checked after every iteration, as the official ``post_process``)."""
    mask = _check_layouts(bbox, mask, "beautify", nonempty=False, finite=True)
    check_int(iterations, "iterations", minimum=0, maximum=10**7)
    check_float(lr, "lr", minimum=0, maximum=1e3, open_min=True)
    for name, v in (("w_align", w_align), ("w_overlap", w_overlap), ("min_size", min_size)):
        check_float(v, name, minimum=0)
    scale = torch.tensor([10 / 4, 10 / 6, 10 / 4, 10 / 6], dtype=bbox.dtype)
    init = (bbox.detach() * scale).clone()
    param = torch.nn.Parameter(init.clone())
    opt = torch.optim.Adam([param], lr=lr, betas=(0.9, 0.999))
    mask = mask.bool().clone()
    with torch.enable_grad():
        for _ in range(iterations):
            b = torch.relu(param)
            A = alignment_matrix(b, mask)
            align = (A * (A < 1 / 64).detach()).mean()
            piou = pairwise_iou(b, mask, detach_wh=True).mean()
            loss = torch.nn.functional.mse_loss(b, init) + w_align * align + w_overlap * piou
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_([param], 1.0)
            opt.step()
            # as the official loop: an element whose (scaled) min(w, h) is below min_size leaves the mask at once,
            # so it no longer pulls the others in the following iterations
            mask = mask & (b.detach()[..., 2:].amin(-1) > min_size)
    b = torch.relu(param.detach())
    mask = mask & (b[..., 2:].amin(-1) > min_size)
    out = b / scale
    return out.clamp(0, 1), mask
