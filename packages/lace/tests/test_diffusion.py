"""The denoiser, the training loss and DDIM sampling (acceptance checks 1, 5, 6), on a tiny network."""

import pytest
import torch

from iclr24.lace.data import synthetic_aligned_layouts
from iclr24.lace.diffusion import condition_mask
from iclr24.lace.diffusion import ddim_sample
from iclr24.lace.diffusion import ddim_step
from iclr24.lace.diffusion import generate
from iclr24.lace.diffusion import guide_x0
from iclr24.lace.diffusion import load_checkpoint
from iclr24.lace.diffusion import save_checkpoint
from iclr24.lace.diffusion import train
from iclr24.lace.diffusion import training_loss
from iclr24.lace.layout import encode_layout
from iclr24.lace.layout import finalize
from iclr24.lace.model import LaceConfig
from iclr24.lace.schedule import alphas_cumprod
from iclr24.lace.schedule import cosine_betas

TINY = dict(dim=16, heads=2, layers=1, ff=32, batch_size=8, ddim_steps=5)


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    cfg = LaceConfig(**TINY)
    bbox, labels, mask = synthetic_aligned_layouts(16, seed=0)
    tok = encode_layout(bbox, labels, mask, cfg.num_classes, cfg.max_elements)
    model, hist = train(cfg, tok, seed=0, steps=3)
    return cfg, model, hist, (bbox, labels, mask), tok


class Spy(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner, self.shapes = inner, []

    def forward(self, x, t):
        self.shapes.append(tuple(x.shape))
        return self.inner(x, t)


def test_shapes_in_training_and_sampling(setup):
    cfg, model, hist, layouts, tok = setup
    spy = Spy(model)
    loss, parts = training_loss(spy, tok[:8], cfg)
    assert spy.shapes == [(32, 12, 9)] and torch.isfinite(loss)
    assert set(parts) == {"diff", "rec", "constraint"} and parts["constraint"] >= 0
    spy.shapes.clear()
    bbox, labels, mask = generate(spy, cfg, "uncond", n=3, steps=5)
    assert set(spy.shapes) == {(3, 12, 9)} and len(spy.shapes) == 5
    assert bbox.shape == (3, 12, 4) and bbox.min() >= 0 and bbox.max() <= 1
    assert labels.min() >= 0 and labels.max() <= 4 and torch.equal(mask, labels != 4)
    assert len(hist) == 3 and all(torch.isfinite(torch.tensor(h["loss"])) for h in hist)


def test_baseline_has_no_constraint_term(setup):
    cfg, model, _, _, tok = setup
    _, parts = training_loss(model, tok[:8], LaceConfig(**TINY, align_weight=0, overlap_weight=0))
    assert parts["constraint"] == 0.0


class ZeroEps(torch.nn.Module):
    """A denoiser predicting eps_hat = 0 that records its inputs."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(()))
        self.seen = []

    def forward(self, x, t):
        self.seen.append((x.detach().clone(), t.clone()))
        return torch.zeros_like(x) * self.w


def test_reconstruction_loss_is_the_official_unclamped_term_by_default():
    # official train.py line 165: mse(x0[bbox], x0_hat[bbox]) with x0_hat = (x_t - sqrt(1 - ab) eps_hat) / sqrt(ab),
    # not clamped; re-computed here from the inputs the network saw (eps_hat = 0, so x0_hat = x_t / sqrt(ab))
    tok = encode_layout(*synthetic_aligned_layouts(8, seed=1), 4, 12)
    ab = torch.tensor(alphas_cumprod(cosine_betas()), dtype=torch.float32)
    assert LaceConfig().rec_loss == "unclamped"
    rec = {}
    for kind in ("unclamped", "clamped"):
        cfg = LaceConfig(**TINY, rec_loss=kind, align_weight=0, overlap_weight=0)
        net = ZeroEps()
        _, parts = training_loss(net, tok, cfg, torch.Generator().manual_seed(5))
        X, t = net.seen[0]
        x0_hat = X / ab[t].sqrt()[:, None, None]
        box = x0_hat[..., 5:] if kind == "unclamped" else x0_hat[..., 5:].clamp(-1, 1)
        want = float(((box - tok.repeat(4, 1, 1)[..., 5:]) ** 2).mean())
        assert parts["rec"] == pytest.approx(want, rel=1e-5)
        rec[kind] = parts["rec"]
    assert rec["unclamped"] > 10 * rec["clamped"]  # finite, but weighted by 1 / ab_t at large t
    with pytest.raises(ValueError, match="rec_loss must be one of"):
        LaceConfig(rec_loss="giou")


def test_global_alignment_in_training_and_frozen_time_table():
    # the 'global' variant sees the real boxes; with a prediction equal to the real layout it would be 0
    g = torch.Generator().manual_seed(0)
    tok = encode_layout(*synthetic_aligned_layouts(8, seed=3), 4, 12)
    cfg = LaceConfig(**TINY, align_type="global", overlap_weight=0.0, time_embedding="sinusoidal")
    model, hist = train(cfg, tok, seed=0, steps=2)
    loss, parts = training_loss(model, tok, cfg, g)
    assert torch.isfinite(loss) and parts["constraint"] >= 0
    # the frozen sinusoidal timestep table does not move in training
    from iclr24.lace.model import make_model

    assert torch.equal(model.blocks[0].ada.emb.weight, make_model(cfg).blocks[0].ada.emb.weight)


def test_condition_invariance(setup):
    cfg, model, _, (bbox, labels, mask), _ = setup
    _, lab, m = generate(model, cfg, "c", layouts=(bbox[:4], labels[:4], mask[:4]))
    assert torch.equal(lab, torch.where(mask[:4], labels[:4], torch.full_like(labels[:4], 4)))
    b2, lab2, m2 = generate(model, cfg, "cwh", layouts=(bbox[:4], labels[:4], mask[:4]))
    assert torch.equal(m2, mask[:4])
    assert torch.allclose(b2[mask[:4]][:, 2:], bbox[:4][mask[:4]][:, 2:], atol=1e-6)
    b3, lab3, m3 = generate(model, cfg, "complete", layouts=(bbox[:4], labels[:4], mask[:4]), seed=1)
    first = torch.zeros_like(mask[:4])
    first[:, 0] = True  # the first real element is always kept
    assert torch.allclose(b3[first], bbox[:4][first], atol=1e-6)
    b4, lab4, m4 = generate(model, cfg, "refine", layouts=(bbox[:4], labels[:4], mask[:4]))
    assert torch.equal(m4, mask[:4]) and b4.shape == (4, 12, 4)


def test_oracle_denoiser_and_determinism(setup):
    cfg, model, _, _, tok = setup
    ab = torch.tensor(alphas_cumprod(cosine_betas()), dtype=torch.float64)
    x0 = tok[:4].double()
    eps = torch.randn(x0.shape, dtype=torch.float64)
    for t in (1, 301, 901):
        x_t = ab[t].sqrt() * x0 + (1 - ab[t]).sqrt() * eps
        _, x0_hat = ddim_step(x_t, eps, ab[t], ab[t - 10])
        assert torch.allclose(x0_hat, x0, atol=1e-5)
    x_T = torch.randn(2, 12, 9)
    a, b = ddim_sample(model, x_T, cfg, steps=4), ddim_sample(model, x_T, cfg, steps=4)
    assert torch.equal(a, b)
    assert not torch.equal(a, ddim_sample(model, torch.randn(2, 12, 9), cfg, steps=4))


def test_mask_semantics():
    x0 = encode_layout(*synthetic_aligned_layouts(2, seed=0), num_classes=4, max_elements=12)
    c = condition_mask("c", x0, 4)
    assert c[..., :5].all() and not c[..., 5:].any()
    cwh = condition_mask("cwh", x0, 4)
    assert cwh[..., :5].all() and cwh[..., 7:].all() and not cwh[..., 5:7].any()
    assert not condition_mask("uncond", x0, 4).any()


def test_bad_sampling_inputs(setup, tmp_path):
    cfg, model, _, (bbox, labels, mask), _ = setup
    x_T = torch.randn(2, 12, 9)
    with pytest.raises(ValueError, match="fixes every entry"):
        ddim_sample(model, x_T, cfg, x_cond=x_T, cond_mask=torch.ones_like(x_T, dtype=torch.bool))
    with pytest.raises(ValueError, match="unknown task"):
        generate(model, cfg, "inpaint", n=2)
    with pytest.raises(ValueError, match="needs layouts"):
        generate(model, cfg, "c")
    with pytest.raises(ValueError, match="expected tokens"):
        model(torch.randn(2, 13, 9), torch.zeros(2, dtype=torch.long))
    path = tmp_path / "m.pt"
    save_checkpoint(model, cfg, path)
    m2, cfg2 = load_checkpoint(path, categories=cfg.categories)
    assert cfg2 == cfg and torch.equal(
        finalize(ddim_sample(m2, x_T, cfg, 2), 4)[0], finalize(ddim_sample(model, x_T, cfg, 2), 4)[0]
    )
    with pytest.raises(ValueError, match="trained on categories"):
        load_checkpoint(path, categories=("text", "image"))
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        load_checkpoint(tmp_path / "missing.pt")


def test_guidance_extension_lowers_the_constraints(setup):
    from iclr24.lace.constraints import alignment_loss
    from iclr24.lace.constraints import overlap_loss

    cfg, model, _, (bbox, labels, mask), tok = setup
    g = torch.Generator().manual_seed(0)
    x0 = tok[:4] + 0.05 * torch.randn(tok[:4].shape, generator=g) * (torch.arange(9) >= 5)
    real = x0[..., :5].argmax(-1) != 4

    def cost(x):
        b = x[..., 5:].clamp(-1, 1) / 2 + 0.5
        return float((alignment_loss(b, real) + overlap_loss(b, real)).sum())

    guided = guide_x0(x0, 0, cfg, scale=1e-3)
    assert cost(guided) < cost(x0)
    assert torch.equal(guided[..., :5], x0[..., :5])
    out = generate(model, cfg, "uncond", n=2, steps=3, guidance=1e-3)
    assert out[0].shape == (2, 12, 4)
    with pytest.raises(ValueError, match="guidance must be"):
        ddim_sample(model, torch.randn(2, 12, 9), cfg, steps=2, guidance=-1.0)


def test_ema_weights_follow_the_moving_average():
    tok = encode_layout(*synthetic_aligned_layouts(8, seed=3), 4, 12)
    raw, _ = train(LaceConfig(**TINY), tok, seed=0, steps=3)
    slow, _ = train(LaceConfig(**TINY, ema=0.999999), tok, seed=0, steps=3)
    torch.manual_seed(0)
    from iclr24.lace.model import make_model

    init = make_model(LaceConfig(**TINY))
    for p0, pe in zip(init.parameters(), slow.parameters(), strict=True):
        assert torch.allclose(pe, p0, atol=1e-5)  # mu -> 1: the average stays at the initial weights
    assert any(not torch.allclose(p0, pr, atol=1e-4) for p0, pr in zip(init.parameters(), raw.parameters()))
    with pytest.raises(ValueError, match="ema must be"):
        LaceConfig(ema=1.0)


def test_completion_first_element_keep_is_an_option():
    """Completion keeps the first real element by default; ``complete_keep_first=False`` is the official
    ``rand_fix`` alone, which can keep no element of a layout (here with keep probability 0: none kept)."""
    from iclr24.paperkit.errors import InputError

    x0 = encode_layout(*synthetic_aligned_layouts(16, seed=3), 4, 12)
    real = x0[..., :5].argmax(-1) != 4
    g = torch.Generator().manual_seed(0)
    kept = condition_mask("complete", x0, 4, g, keep_first=True, keep=0.0)[..., 0]
    assert torch.equal(kept, real & (real.long().cumsum(-1) == 1))
    none = condition_mask("complete", x0, 4, g, keep_first=False, keep=0.0)[..., 0]
    assert not bool(none.any())
    official = condition_mask("complete", x0, 4, torch.Generator().manual_seed(1), keep_first=False)[..., 0]
    assert bool((official & ~real).sum() == 0)
    cfg = LaceConfig(complete_keep_first=False)
    assert cfg.complete_keep_first is False
    with pytest.raises(InputError):
        LaceConfig(complete_keep_first="no")
