"""Closed-form checks of the schedule, the token representation and the aesthetic constraints (acceptance checks
1-4, 7 and 8 of the LACE reproduction plan)."""

import math

import numpy as np
import pytest
import torch

from iclr24.lace.beautify import beautify
from iclr24.lace.constraints import alignment_loss
from iclr24.lace.constraints import alignment_score
from iclr24.lace.constraints import global_alignment_loss
from iclr24.lace.constraints import overlap_loss
from iclr24.lace.constraints import overlap_score
from iclr24.lace.constraints import pairwise_iou
from iclr24.lace.data import synthetic_aligned_layouts
from iclr24.lace.diffusion import constraint_term
from iclr24.lace.layout import encode_layout
from iclr24.lace.layout import finalize
from iclr24.lace.layout import labels_from_names
from iclr24.lace.model import LaceConfig
from iclr24.lace.model import make_model
from iclr24.lace.model import sinusoidal_positions
from iclr24.lace.schedule import alphas_cumprod
from iclr24.lace.schedule import constraint_weight
from iclr24.lace.schedule import cosine_betas
from iclr24.lace.schedule import ddim_timesteps
from iclr24.lace.schedule import refinement_timesteps


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


# --- the official metric variants (util/metric.py, test.py), re-implemented here from their description -------------


def _official_compute_alignment(bbox, mask):
    """util/metric.py ``compute_alignment`` (LayoutGAN++ form), step by step: the six coordinates, pairwise
    differences with the diagonal set to 1 *before* abs, only the rows of padding elements set to 1 (padding slots
    stay partners), min over coordinates and partners, 1 -> 0, -log(1 - a), sum / #real, NaN -> 0."""
    xc, yc, w, h = bbox.unbind(-1)
    X = torch.stack([xc - w / 2, xc, xc + w / 2, yc - h / 2, yc, yc + h / 2], dim=1)  # (B, 6, S)
    D = X.unsqueeze(-1) - X.unsqueeze(-2)  # (B, 6, S, S)
    S = bbox.shape[1]
    D[:, :, torch.arange(S), torch.arange(S)] = 1.0
    D = D.abs().permute(0, 2, 1, 3)  # (B, S, 6, S)
    D[~mask] = 1.0
    a = D.min(-1).values.min(-1).values
    a = a.masked_fill(a.eq(1.0), 0.0)
    score = (-torch.log(1 - a)).sum(-1) / mask.sum(-1)
    score[torch.isnan(score)] = 0.0
    return score


def _official_compute_overlap(bbox, mask):
    """util/metric.py ``compute_overlap`` (LayoutGAN++ form): padding boxes zeroed, strict intersection, pairs with
    a padding element or i = j zeroed, intersection / area of the row's box (NaN -> 0), sum / #real, NaN -> 0."""
    bbox = bbox.masked_fill(~mask.unsqueeze(-1), 0)
    xc, yc, w, h = bbox.unbind(-1)
    l1, r1, t1, b1 = [v.unsqueeze(-1) for v in (xc - w / 2, xc + w / 2, yc - h / 2, yc + h / 2)]
    l2, r2, t2, b2 = [v.unsqueeze(-2) for v in (xc - w / 2, xc + w / 2, yc - h / 2, yc + h / 2)]
    a1 = (r1 - l1) * (b1 - t1)
    lm, rm, tm, bm = (
        torch.maximum(l1, l2),
        torch.minimum(r1, r2),
        torch.maximum(t1, t2),
        torch.minimum(b1, b2),
    )
    ai = torch.where((lm < rm) & (tm < bm), (rm - lm) * (bm - tm), torch.zeros_like(lm * rm))
    S = mask.shape[1]
    drop = (~mask).unsqueeze(1) | (~mask).unsqueeze(2)
    drop[:, torch.arange(S), torch.arange(S)] = True
    ar = torch.nan_to_num(ai.masked_fill(drop, 0) / a1)
    score = ar.sum((1, 2)) / mask.sum(-1)
    score[torch.isnan(score)] = 0.0
    return score


def _padded_case():
    # two real elements (a_i = 0.3 for both without partners) and one padding slot holding the box a clean padding
    # token decodes to, (0, 0, 0, 0): as a partner it is 0.2 from element 0's left/top edges, so a_0 = 0.2
    b = torch.tensor(
        [[[0.25, 0.25, 0.1, 0.1], [0.6, 0.7, 0.2, 0.2], [0.0, 0.0, 0.0, 0.0]]], dtype=torch.float64
    )
    return b, torch.tensor([[True, True, False]])


def test_official_alignment_variant_matches_the_official_formula_on_a_padded_case():
    b, m = _padded_case()
    ours_pkg = float(alignment_score(b, m))
    ours_off = float(alignment_score(b, m, padding_partners=True))
    official = float(_official_compute_alignment(b, m))
    assert ours_pkg == pytest.approx(-math.log(0.7), abs=1e-9)  # 0.3567: padding ignored
    assert ours_off == pytest.approx(official, abs=1e-12)
    # (-ln 0.8 - ln 0.7) / 2 = 0.2899
    assert official == pytest.approx((-math.log(0.8) - math.log(0.7)) / 2, abs=1e-12)
    assert abs(ours_off - ours_pkg) > 0.05
    # random padded batches, including a layout with one element and one with none
    g = torch.Generator().manual_seed(3)
    wh = 0.05 + 0.3 * torch.rand(6, 7, 2, generator=g, dtype=torch.float64)
    xy = wh / 2 + (1 - wh) * torch.rand(6, 7, 2, generator=g, dtype=torch.float64)
    bb = torch.cat([xy, wh], -1)
    mm = torch.rand(6, 7, generator=g) < 0.6
    mm[0] = False
    mm[1] = torch.arange(7) == 2
    with pytest.warns(UserWarning, match="1 of 6 layouts have no real element"):
        got = alignment_score(bb, mm, padding_partners=True)
    want = _official_compute_alignment(bb, mm)
    assert torch.isnan(got[0]) and float(want[0]) == 0.0  # official: an empty layout scores 0.0
    assert torch.allclose(got[1:], want[1:], atol=1e-12)
    assert torch.allclose(overlap_score(bb, mm), _official_compute_overlap(bb, mm), atol=1e-12)


def test_empty_layouts_are_not_scored_as_aligned():
    b = torch.rand(2, 4, 4, dtype=torch.float64) * 0.5 + 0.25
    m = torch.tensor([[False] * 4, [True, True, False, False]])
    with pytest.warns(UserWarning, match="no real element.*NaN"):
        s = alignment_score(b, m)
    assert torch.isnan(s[0]) and torch.isfinite(s[1])
    # the training loss has nothing to align in an empty layout: 0, finite, differentiable
    x = b.clone().requires_grad_(True)
    loss = alignment_loss(x, m)
    assert float(loss[0].detach()) == 0.0 and torch.isfinite(loss).all()
    loss.sum().backward()
    assert torch.isfinite(x.grad).all()
    with pytest.raises(ValueError, match="mask must be a \\(B, L\\)"):
        alignment_score(b, m[:, :3])


def test_layout_metrics_variants_on_a_conditional_task():
    from iclr24.lace.metrics import layout_metrics

    # generated: one layout lost its second element (mask False) and one came out empty; real: all three kept
    real_b = torch.tensor(
        [[[0.3, 0.2, 0.2, 0.1], [0.3, 0.6, 0.2, 0.2], [0.7, 0.5, 0.2, 0.2]]] * 3, dtype=torch.float32
    )
    real_l = torch.tensor([[0, 1, 2]] * 3)
    real_m = torch.ones(3, 3, dtype=torch.bool)
    gen_b = real_b.clone()
    gen_b[:, 1] = torch.tensor([0.45, 0.62, 0.3, 0.2])  # overlaps element 0 and misaligned
    gen_m = torch.tensor([[True, True, True], [True, False, True], [False, False, False]])
    gen = (gen_b, real_l, gen_m)
    real = (real_b, real_l, real_m)
    off = layout_metrics(gen, real, 4, "c", variant="official")
    pkg = layout_metrics(gen, real, 4, "c", variant="package")
    # official test.py: generated boxes under the real mask, so every layout is scored as layout 0
    want_a = 100 * float(_official_compute_alignment(gen_b.double(), real_m).mean())
    want_o = 100 * float(_official_compute_overlap(gen_b.double(), real_m).mean())
    assert off["align_x100"] == pytest.approx(want_a, rel=1e-9)
    assert off["overlap_x100"] == pytest.approx(want_o, rel=1e-9)
    # package: the generated mask, the empty layout left out of the alignment mean
    with pytest.warns(UserWarning):
        per = alignment_score(gen_b.double(), gen_m)
    assert pkg["align_x100"] == pytest.approx(100 * float(per[:2].mean()), rel=1e-9)
    assert pkg["overlap_x100"] == pytest.approx(100 * float(overlap_score(gen_b.double(), gen_m).mean()))
    assert off["empty_layouts"] == pkg["empty_layouts"] == 1
    assert off["overlap_x100"] != pytest.approx(pkg["overlap_x100"])
    # unconditional: the official variant scores the generated mask; an empty layout counts as 0 in the mean
    u = layout_metrics(gen, real, 4, "uncond", variant="official")
    assert u["align_x100"] == pytest.approx(
        100 * float(_official_compute_alignment(gen_b.double(), gen_m).mean()), rel=1e-9
    )
    with pytest.raises(ValueError, match="variant must be one of"):
        layout_metrics(gen, real, 4, "c", variant="paper")


def _official_layout_alignment(bbox, mask):
    """util/constraint.py ``layout_alignment`` (the official 'local' training loss before its x20): the same rows-only
    mask as the metric, so padding slots are partners; score / #real, NaN -> 0."""
    return _official_compute_alignment(bbox, mask)


def test_alignment_loss_padding_partners_is_the_official_training_loss():
    """``alignment_loss(padding_partners=True)`` (``LaceConfig(align_padding_partners=True)``) equals the official
    ``layout_alignment`` x20 on padded layouts; the default leaves padding out (the paper's Align)."""
    from iclr24.lace.constraints import alignment_loss

    b, m = _padded_case()
    assert float(alignment_loss(b, m, padding_partners=True)) == pytest.approx(
        20 * float(_official_layout_alignment(b, m)), abs=1e-9
    )
    assert float(alignment_loss(b, m)) == pytest.approx(-20 * math.log(0.7), abs=1e-6)
    g = torch.Generator().manual_seed(5)
    wh = 0.05 + 0.3 * torch.rand(5, 6, 2, generator=g, dtype=torch.float64)
    xy = wh / 2 + (1 - wh) * torch.rand(5, 6, 2, generator=g, dtype=torch.float64)
    bb = torch.cat([xy, wh], -1)
    mm = torch.rand(5, 6, generator=g) < 0.6
    mm[:, 0] = True
    assert torch.allclose(
        alignment_loss(bb, mm, padding_partners=True), 20 * _official_layout_alignment(bb, mm)
    )
    # through the config: the padding slots' boxes get gradient only with the official option
    box = bb.clone().requires_grad_(True)
    t = torch.zeros(5, dtype=torch.long)
    for partners in (False, True):
        cfg = LaceConfig(overlap_weight=0.0, align_padding_partners=partners)
        (g_box,) = torch.autograd.grad(constraint_term(box, mm, t, cfg).sum(), box)
        assert bool((g_box[~mm] != 0).any()) is partners
