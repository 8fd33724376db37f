import warnings

import pytest
import timm
import torch

import iclr24.fastervit as fv
from iclr24.fastervit import HAT
from iclr24.fastervit import FasterViTLayer
from iclr24.fastervit import TokenInitializer


# --- acceptance check 1: exact parameter counts and the official state-dict layout --------------------------------
# the layout fixture was generated from the authors' fastervit 1.0.0 (tests/fixtures/make_official_layout.py)
def _check_layout(name, ref):
    with torch.device("meta"):  # no memory, no init: even FasterViT-6 builds in about a second
        m = timm.create_model(name)
    ours = {k: list(v.shape) for k, v in m.state_dict().items()}
    assert ours == ref["state_dict"], name
    n = sum(p.numel() for p in m.parameters())
    assert n == ref["params"] == fv.OFFICIAL_PARAMS[name]
    return n


@pytest.mark.parametrize(
    "name,count",
    [
        ("faster_vit_0_224", 31_404_840),
        ("faster_vit_1_224", 53_366_696),
        ("faster_vit_2_224", 75_923_816),
        ("faster_vit_3_224", 159_547_944),
    ],
)
def test_parameter_counts_and_state_dict_layout_equal_the_official_ones(name, count, official_layout):
    assert _check_layout(name, official_layout[name]) == count


@pytest.mark.slow
def test_large_and_21k_variants_match_the_official_layout(official_layout):
    rest = [
        n
        for n in official_layout
        if not n.endswith("any_res") and n[:12] + n[-4:] not in {f"faster_vit_{i}_224" for i in range(4)}
    ]
    assert len(rest) == 7
    for name in rest:
        _check_layout(name, official_layout[name])


def test_every_variant_is_registered_with_timm():
    names = set(timm.list_models("faster_vit_*"))
    assert set(fv.list_variants()) <= names
    assert {"faster_vit_0_224", "faster_vit_6_224", "faster_vit_4_21k_768", "faster_vit_0_any_res"} <= names


# --- acceptance check 2: FasterViT-0 at 224 ----------------------------------------------------------------------
def test_fastervit0_stage_shapes_carrier_tokens_and_sequence_length():
    torch.manual_seed(0)
    m = timm.create_model("faster_vit_0_224").eval()
    x = torch.randn(1, 3, 224, 224)
    seen = {}
    lvl3 = m.levels[2]
    lvl3.global_tokenizer.register_forward_hook(lambda mod, i, o: seen.setdefault("ct", o.shape) and None)
    lvl3.blocks[0].attn.register_forward_hook(lambda mod, i, o: seen.setdefault("seq", i[0].shape) and None)
    lvl3.blocks[0].hat_attn.register_forward_hook(
        lambda mod, i, o: seen.setdefault("ct_seq", i[0].shape) and None
    )
    with torch.no_grad():
        feats = m.forward_intermediates(x, intermediates_only=True)
        logits = m(x)
    assert [tuple(f.shape[1:]) for f in feats] == [(64, 56, 56), (128, 28, 28), (256, 14, 14), (512, 7, 7)]
    assert logits.shape == (1, 1000) and m.forward_features(x).shape == (1, 512, 7, 7)
    assert seen["ct"] == (1, 16, 256)  # 16 carrier tokens per image
    assert seen["seq"] == (4, 53, 256)  # 4 windows x (49 local + 4 carrier tokens)
    assert seen["ct_seq"] == (1, 16, 256)  # carrier tokens attend globally within an image
    pool = lvl3.global_tokenizer.to_global_feature.pool
    assert pool.kernel_size == (5, 5) and pool.stride == (3, 3)
    assert not hasattr(m.levels[3], "global_tokenizer") and not any(b.hat for b in m.levels[3].blocks)
    assert all(lvl.downsample is not None for lvl in m.levels[:3]) and m.levels[3].downsample is None


# --- acceptance check 4: gradient locality -----------------------------------------------------------------------
def _small_layer(**kw):
    """A seeded FasterViT layer (eval mode) on 8x8 maps: two heads, four 4x4 windows, no downsampling."""
    torch.manual_seed(0)
    return FasterViTLayer(input_resolution=8, num_heads=2, window_size=4, downsample=False, **kw).eval()


@pytest.mark.parametrize("only_local", [True, False])
def test_gradient_locality(only_local):
    layer = _small_layer(dim=32, depth=2, ct_size=1, conv=False, only_local=only_local)
    x = torch.randn(2, 32, 8, 8, requires_grad=True)
    layer(x)[0, :, 4:, 4:].sum().backward()  # image 0, bottom-right window
    g = x.grad
    top_left = g[0, :, :4, :4].abs().max().item()
    assert g[1].abs().max().item() == 0.0  # never any cross-sample gradient
    assert g[0, :, 4:, 4:].abs().max().item() > 0
    if only_local:
        assert top_left == 0.0  # plain window attention: no path between windows
    else:
        assert top_left > 1e-6  # HAT: carrier tokens connect the windows


# --- acceptance check 5: propagation only in the last block -------------------------------------------------------
def test_propagation_only_in_last_block_and_switch_removes_it():
    layer = _small_layer(dim=16, depth=3, ct_size=2, do_propagation=True, layer_scale=0.5)
    assert [b.last for b in layer.blocks] == [False, False, True]
    calls = []
    orig = torch.nn.functional.interpolate

    def spy(*a, **k):
        calls.append(1)
        return orig(*a, **k)

    x = torch.randn(2, 16, 8, 8)
    torch.nn.functional.interpolate = spy
    try:
        with torch.no_grad():
            layer(x)
    finally:
        torch.nn.functional.interpolate = orig
    assert len(calls) == 1  # one upsampling, in the last block

    blk = layer.blocks[-1]
    ct = layer.global_tokenizer(x)
    xw = fv.window_partition(x, 4)
    with torch.no_grad():
        with_prop, ct_out = blk(xw, ct, (2, 2))
        blk.do_propagation = False
        without, ct_out2 = blk(xw, ct, (2, 2))
    assert torch.equal(ct_out, ct_out2)
    per_window = ct_out.reshape(8, 4, 16).transpose(1, 2).reshape(8, 16, 2, 2)
    up = orig(per_window, size=(4, 4), mode="nearest").flatten(2).transpose(1, 2)
    torch.testing.assert_close(with_prop - without, blk.gamma1 * up, rtol=0, atol=1e-6)


# --- acceptance check 6: deploy mode and inference caches ---------------------------------------------------------
def test_switch_to_deploy_keeps_logits(tiny_model):
    m = tiny_model("faster_vit_3_224").eval()  # layer scale + propagation
    x = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        before = m(x)
        m.switch_to_deploy()
        after = m(x)
    torch.testing.assert_close(after, before, rtol=0, atol=1e-5)
    sd = m.state_dict()
    assert sd["levels.2.blocks.0.attn.pos_emb_funct.relative_bias"].abs().sum() > 0  # the cache is filled


def test_inference_cache_follows_weight_updates(tiny_model):
    m = tiny_model().eval()
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        a = m(x)
        for name, p in m.named_parameters():
            if "cpb_mlp" in name:
                p.add_(0.05)  # an in-place update (optimizer step, load_state_dict) bumps the tensor version
        b = m(x)
    with torch.enable_grad():
        c = m(x).detach()
    assert not torch.allclose(a, b)
    torch.testing.assert_close(b, c, rtol=1e-5, atol=1e-5)


# --- any resolution, features, HAT as a plug-in -------------------------------------------------------------------
def test_any_resolution_inputs(tiny_model):
    """Plain variants take any multiple of 32 (stage maps padded to whole windows); the *_any_res variants take
    any size, e.g. 200x300, and warn where their non-square carrier-token grid departs from the official code."""
    from iclr24.fastervit.blocks import NonSquareCarrierGridWarning

    m = tiny_model().eval()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", NonSquareCarrierGridWarning)
        assert m(torch.randn(1, 3, 256, 320)).shape == (1, 10)  # stage 3: 16x20 padded to 3x3 windows
        any_res = tiny_model("faster_vit_0_any_res").eval()
        assert any_res(torch.randn(1, 3, 224, 224)).shape == (1, 10)
    with torch.no_grad():
        with pytest.warns(NonSquareCarrierGridWarning, match="swaps the grid axes"):
            assert any_res(torch.randn(1, 3, 200, 300)).shape == (1, 10)  # stage 3: 2x3 windows
        with warnings.catch_warnings():
            warnings.simplefilter("error", NonSquareCarrierGridWarning)  # once per stage, not every call
            assert any_res(torch.randn(1, 3, 250, 333)).shape == (1, 10)
    with pytest.raises(ValueError, match="not divisible by the network stride 32"):
        m(torch.randn(1, 3, 200, 300))


def test_features_only_returns_the_four_stage_maps():
    torch.manual_seed(0)
    f = timm.create_model("faster_vit_0_224", features_only=True, dim=16, in_dim=8)
    feats = f(torch.randn(2, 3, 224, 224))
    assert [tuple(t.shape) for t in feats] == [
        (2, 16, 56, 56),
        (2, 32, 28, 28),
        (2, 64, 14, 14),
        (2, 128, 7, 7),
    ]
    assert f.feature_info.channels() == [16, 32, 64, 128] and f.feature_info.reduction() == [4, 8, 16, 32]
    g = timm.create_model("faster_vit_0_224", features_only=True, out_indices=(1, 2), dim=16, in_dim=8)
    assert [t.shape[1] for t in g(torch.randn(1, 3, 64, 64))] == [32, 64]


def test_hat_stage_as_a_plug_in_block_in_another_network():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 24, 4, stride=4),
        FasterViTLayer(
            dim=24, depth=2, input_resolution=14, num_heads=3, window_size=7, ct_size=2, downsample=False
        ),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(24, 5),
    )
    x = torch.randn(2, 3, 52, 68)  # 13 x 17 tokens: padded to whole windows inside the stage, cropped back
    y = net(x)
    assert y.shape == (2, 5)
    y.sum().backward()
    assert all(p.grad is not None for p in net.parameters() if p.requires_grad)


def test_hat_block_validates_its_inputs():
    blk = HAT(dim=16, num_heads=2, sr_ratio=2, window_size=4, ct_size=2)
    with pytest.raises(ValueError, match="carrier_tokens"):
        blk(torch.randn(8, 16, 16))
    with pytest.raises(ValueError, match="window tokens"):
        blk(torch.randn(8, 15, 16), torch.randn(2, 16, 16))
    tok = TokenInitializer(16, 8, 4, ct_size=2)
    assert tok(torch.randn(2, 16, 8, 8)).shape == (2, 16, 16)


def test_bad_model_input_and_names(tiny_model):
    m = tiny_model()
    with pytest.raises(ValueError, match="expected 3 input channels, got 1"):
        m(torch.randn(1, 1, 64, 64))
    with pytest.raises(ValueError, match="expected images"):
        m(torch.randn(3, 64, 64))
    with pytest.raises(ValueError, match="known: faster_vit_0_224"):
        fv.create_model("faster_vit_9_224")
    with pytest.raises(ValueError, match="never downloaded"):
        timm.create_model("faster_vit_0_224", pretrained=True)


def test_grad_checkpointing_gives_the_same_gradients(tiny_model):
    m = tiny_model().train()
    x = torch.randn(2, 3, 64, 64)
    grads = []
    for flag in (False, True):
        m.set_grad_checkpointing(flag)
        m.zero_grad()
        torch.manual_seed(1)  # same drop-path draws
        m(x).sum().backward()
        grads.append(m.patch_embed.conv_down[0].weight.grad.clone())
    torch.testing.assert_close(grads[0], grads[1])
