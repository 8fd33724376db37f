"""Closed-form checks of the schedule, the token representation and the aesthetic constraints (acceptance checks
1-4, 7 and 8 of the LACE reproduction plan)."""

import math

import numpy as np
import pytest
import torch

from iclr24.lace.beautify import beautify
from iclr24.lace.constraints import (
    alignment_loss,
    alignment_score,
    global_alignment_loss,
    overlap_loss,
    overlap_score,
    pairwise_iou,
)
from iclr24.lace.data import synthetic_aligned_layouts
from iclr24.lace.diffusion import LaceConfig, constraint_term, make_model
from iclr24.lace.layout import encode_layout, finalize, labels_from_names
from iclr24.lace.model import sinusoidal_positions
from iclr24.lace.schedule import (
    alphas_cumprod,
    constraint_weight,
    cosine_betas,
    ddim_timesteps,
    refinement_timesteps,
)


def test_cosine_schedule_values():
    b = cosine_betas(1000)
    ab = alphas_cumprod(b)
    assert b[0] == pytest.approx(4.1284e-5, rel=1e-4)
    assert b[999] == pytest.approx(0.999)
    assert ab[499] == pytest.approx(0.49384, abs=1e-5)
    assert ab[999] == pytest.approx(2.4288e-9, rel=1e-4)
    assert np.all(np.diff(ab) < 0)


def test_ddim_and_refinement_timesteps():
    ts = ddim_timesteps(100)
    assert ts.tolist() == list(range(1, 1000, 10))
    assert ddim_timesteps(50).tolist() == list(range(1, 1000, 20))
    r = refinement_timesteps(100)
    assert len(r) == 21 and r.max() == 201


def test_constraint_weight():
    assert constraint_weight(0) == pytest.approx(0.96)
    assert constraint_weight(49) == pytest.approx(0.1299, abs=1e-4)
    assert constraint_weight(99) == pytest.approx(0.01687, abs=1e-5)
    assert constraint_weight(199) == pytest.approx(2.85e-4, rel=1e-2)


def _two(b1, b2, dtype=torch.float64):
    return torch.tensor([[b1, b2]], dtype=dtype), torch.ones(1, 2, dtype=torch.bool)


def test_alignment_known_answers():
    b, m = _two((0.3, 0.2, 0.2, 0.1), (0.3, 0.6, 0.2, 0.2))
    assert float(alignment_score(b, m)) == pytest.approx(0.0, abs=1e-12)
    b, m = _two((0.25, 0.25, 0.1, 0.1), (0.6, 0.7, 0.2, 0.2))
    assert float(alignment_score(b, m)) == pytest.approx(-math.log(0.7), abs=1e-6)
    # a lone element has nothing to align with: 0
    assert float(alignment_score(b[:, :1], m[:, :1])) == 0.0
    # padding is ignored
    bp = torch.cat([b, torch.full((1, 1, 4), 0.9, dtype=b.dtype)], 1)
    mp = torch.tensor([[True, True, False]])
    assert float(alignment_score(bp, mp)) == pytest.approx(-math.log(0.7), abs=1e-6)


def test_overlap_known_answers():
    b, m = _two((0.3, 0.3, 0.4, 0.4), (0.5, 0.5, 0.4, 0.4))
    assert float(overlap_score(b, m)) == pytest.approx(0.25, abs=1e-9)
    piou = pairwise_iou(b, m)
    assert float(piou[0, 0, 1]) == pytest.approx(1 / 7, abs=1e-9) and float(piou[0, 0, 0]) == 0.0
    b2, m2 = _two((0.2, 0.2, 0.2, 0.2), (0.7, 0.7, 0.2, 0.2))
    assert float(overlap_score(b2, m2)) == 0.0 and float(overlap_loss(b2, m2)) == 0.0


def test_constraint_gradients_nonzero_and_gradcheck():
    b = torch.tensor(
        [[[0.25, 0.25, 0.1, 0.1], [0.33, 0.35, 0.2, 0.2], [0.6, 0.71, 0.22, 0.3]]], dtype=torch.float64
    )
    m = torch.ones(1, 3, dtype=torch.bool)

    def align(x):
        return alignment_loss(x, m).sum()

    def overlap(x):
        return overlap_loss(x, m).sum()

    for f in (align, overlap):
        x = b.clone().requires_grad_(True)
        f(x).backward()
        assert x.grad.abs().sum() > 0
        assert torch.autograd.gradcheck(
            f, (b.clone().requires_grad_(True),), eps=1e-7, atol=1e-5, fast_mode=True
        )


def test_training_overlap_loss_reaches_sizes_and_beautify_variant_does_not():
    # the official train.py calls PIoU_xywh(..., xy_only=False): the overlap gradient reaches w and h (shrinking
    # overlapping boxes); only the post-processing (xy_only=True) detaches them
    b, m = _two((0.3, 0.3, 0.4, 0.4), (0.5, 0.5, 0.4, 0.4))
    x = b.clone().requires_grad_(True)
    overlap_loss(x, m).sum().backward()
    assert (x.grad[..., 2:] > 0).all()  # larger boxes overlap more
    y = b.clone().requires_grad_(True)
    overlap_loss(y, m, detach_wh=True).sum().backward()
    assert torch.equal(y.grad[..., 2:], torch.zeros_like(y.grad[..., 2:])) and y.grad[..., :2].abs().sum() > 0


def test_global_alignment_known_answer_and_config():
    # real: two boxes sharing their left edge (x_l = 0.2) and nothing else; prediction: box 2 moved right by d
    real, m = _two((0.3, 0.2, 0.2, 0.1), (0.35, 0.6, 0.3, 0.2))
    d = 0.01
    pred = real.clone()
    pred[0, 1, 0] += d
    assert float(global_alignment_loss(real, real, m)) == pytest.approx(0.0, abs=1e-12)
    assert float(global_alignment_loss(pred, real, m)) == pytest.approx(
        2 * d, abs=1e-9
    )  # pairs (1, 2), (2, 1)
    # padding partners never count
    pad = torch.cat([pred, torch.full((1, 1, 4), 0.0, dtype=pred.dtype)], 1)
    realp = torch.cat([real, torch.full((1, 1, 4), 0.0, dtype=real.dtype)], 1)
    mp = torch.tensor([[True, True, False]])
    assert float(global_alignment_loss(pad, realp, mp)) == pytest.approx(2 * d, abs=1e-9)
    cfg = LaceConfig(align_type="global", overlap_weight=0.0)
    t = torch.tensor([0])
    assert float(constraint_term(pred, m, t, cfg, real)) == pytest.approx(0.96 * 2 * d, abs=1e-9)
    with pytest.raises(ValueError, match="needs bbox_real"):
        constraint_term(pred, m, t, cfg)
    with pytest.raises(ValueError, match="align_type"):
        LaceConfig(align_type="mean")


def test_sinusoidal_embedding_is_the_official_layout():
    pe = sinusoidal_positions(25, 8, 4000 / 25)
    half = 4
    f = [10000 ** (-k / (half - 1)) for k in range(half)]
    for p in (0, 1, 7, 24):
        for k in range(half):
            assert float(pe[p, k]) == pytest.approx(math.sin(160 * p * f[k]), abs=1e-5)
            assert float(pe[p, half + k]) == pytest.approx(math.cos(160 * p * f[k]), abs=1e-5)
    cfg = LaceConfig(dim=8, heads=2, layers=2, ff=16, time_embedding="sinusoidal")
    model = make_model(cfg)
    table = sinusoidal_positions(1000, 8, 4.0)
    for blk in model.blocks:
        assert torch.equal(blk.ada.emb.weight, table) and not blk.ada.emb.weight.requires_grad
    assert make_model(LaceConfig(dim=8, heads=2, layers=1, ff=16)).blocks[0].ada.emb.weight.requires_grad
    with pytest.raises(ValueError, match="time_embedding"):
        LaceConfig(time_embedding="rope")


def test_weighted_constraint_ratio():
    b = torch.tensor([[[0.25, 0.25, 0.1, 0.1], [0.33, 0.4, 0.2, 0.2]]], dtype=torch.float64).repeat(2, 1, 1)
    m = torch.ones(2, 2, dtype=torch.bool)
    cfg = LaceConfig()
    w = constraint_term(b, m, torch.tensor([0, 100]), cfg)
    raw = cfg.align_weight * alignment_loss(b, m) + cfg.overlap_weight * overlap_loss(b, m)
    assert torch.allclose(w, constraint_weight(torch.tensor([0.0, 100.0], dtype=torch.float64)) * raw)
    assert float(w[0] / w[1]) == pytest.approx(0.96**-100, rel=1e-9)
    assert float(w[0] / w[1]) == pytest.approx(59.28, abs=0.01)


def test_tokens_round_trip_and_finalize():
    bbox, labels, mask = synthetic_aligned_layouts(8, seed=1)
    tok = encode_layout(bbox, labels, mask, 4, 12)
    assert tok.shape == (8, 12, 9)
    b, lab, m = finalize(tok, 4)
    assert torch.equal(m, mask)
    assert torch.equal(lab[mask], labels[mask]) and (lab[~mask] == 4).all()
    assert torch.allclose(b[mask], bbox[mask], atol=1e-6)
    assert b.min() >= 0 and b.max() <= 1


def test_synthetic_layouts_are_aligned_and_disjoint():
    bbox, labels, mask = synthetic_aligned_layouts(64, seed=0)
    n = mask.sum(1)
    assert n.min() >= 3 and n.max() <= 10
    assert float(alignment_score(bbox.double(), mask).max()) < 1e-6
    assert float(overlap_score(bbox.double(), mask).max()) < 1e-6
    a, b2, c = synthetic_aligned_layouts(4, seed=3)
    assert torch.equal(a, synthetic_aligned_layouts(4, seed=3)[0])


def test_beautify_lowers_alignment_and_moves_little():
    bbox, labels, mask = synthetic_aligned_layouts(4, seed=2)
    g = torch.Generator().manual_seed(0)
    noisy = (bbox + 0.004 * torch.randn(bbox.shape, generator=g)).clamp(0, 1)
    out, m2 = beautify(noisy, mask, iterations=150)
    before = alignment_score(noisy.double(), mask).mean()
    after = alignment_score(out.double(), m2).mean()
    assert after < before
    assert float((out - noisy)[mask].abs().max()) < 0.05


@pytest.mark.parametrize(
    "bad, match",
    [
        ("outside", "in \\[0, 1\\]"),
        ("negative", "negative size|in \\[0, 1\\]"),
        ("too_many", "at most 12 elements"),
        ("label", "labels must be in"),
        ("shape", "must be a \\(B, N, 4\\)"),
    ],
)
def test_bad_layouts_are_clear_errors(bad, match):
    bbox, labels, mask = synthetic_aligned_layouts(2, seed=0)
    if bad == "outside":
        bbox = bbox.clone()
        bbox[0, 0, 0] = 1.5
    elif bad == "negative":
        bbox = bbox.clone()
        bbox[0, 0, 2] = -0.1
    elif bad == "too_many":
        bbox, labels, mask = synthetic_aligned_layouts(2, seed=0, max_elements=13)
    elif bad == "label":
        labels = labels.clone()
        labels[0, 0] = 7
    elif bad == "shape":
        bbox = bbox[..., :3]
    with pytest.raises(ValueError, match=match):
        encode_layout(bbox, labels, mask, 4, 12)


def test_unknown_category_names():
    assert labels_from_names("title,text,figure").tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="unknown category"):
        labels_from_names(["title", "chart"])


def test_beautify_drops_thin_elements_inside_the_loop():
    # as the official post_process: a box thinner than 0.01 (scaled) leaves the mask after the first iteration, so
    # it does not pull an element whose centre it nearly shares; kept (min_size = 0) it would
    A, B, T = [0.3, 0.3, 0.2, 0.2], [0.7, 0.7, 0.2, 0.2], [0.302, 0.6, 0.3, 0.002]
    b = torch.tensor([[A, B, T]], dtype=torch.float64)
    m = torch.ones(1, 3, dtype=torch.bool)
    out, mo = beautify(b, m, iterations=300, lr=1e-3)
    alone, _ = beautify(b[:, :2], m[:, :2], iterations=300, lr=1e-3)
    kept, _ = beautify(b, m, iterations=300, lr=1e-3, min_size=0.0)
    assert mo.tolist() == [[True, True, False]]
    assert torch.allclose(out[:, :2], alone, atol=1e-6)
    assert (kept[:, :2] - alone).abs().max() > 5e-4
