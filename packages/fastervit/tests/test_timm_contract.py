"""The contract a timm model keeps (what timm's own tests/test_models.py checks of every model), on FasterViT-0
topologies at 1/4 width: complete default_cfgs, FX tracing with timm's tracer settings, TorchScript, timm's feature
API. The README gives the command that runs timm's own file against the registered family."""

import pytest
import timm
import torch
from timm import set_scriptable
from timm.layers import get_notrace_functions
from timm.layers import get_notrace_modules
from torch import nn
from torchvision.models.feature_extraction import create_feature_extractor
from torchvision.models.feature_extraction import get_graph_node_names

import iclr24.fastervit  # noqa: F401  (registers the variants)
from iclr24.fastervit.blocks import FasterViTLayer
from iclr24.fastervit.blocks import check_images
from iclr24.fastervit.model import FasterViT
from iclr24.fastervit.registry import VARIANTS
from iclr24.fastervit.registry import default_cfgs
from iclr24.fastervit.registry import feature_map_size

TINY = dict(dim=16, in_dim=8)
TRACER = dict(
    leaf_modules=get_notrace_modules(), autowrap_functions=get_notrace_functions(), param_shapes_constant=True
)


def make(name="faster_vit_0_224", **kw):
    torch.manual_seed(0)
    with set_scriptable(True):
        return timm.create_model(name, **{**TINY, "num_classes": 10, **kw}).eval()


def fx_model(model, train=False):
    """A GraphModule of the whole forward through torchvision's feature extraction, as timm's tests build it."""
    train_nodes, eval_nodes = get_graph_node_names(model, tracer_kwargs=TRACER)
    return create_feature_extractor(
        model,
        train_return_nodes=[train_nodes[-1]],
        eval_return_nodes=[eval_nodes[-1]],
        tracer_kwargs=TRACER,
    )


def test_feature_map_size_is_five_stride_two_convolutions():
    assert feature_map_size(224, 224) == (7, 7)
    assert feature_map_size(541, 960) == (17, 30)  # 541 -> 271 -> 136 -> 68 -> 34 -> 17
    assert feature_map_size(33, 32) == (2, 1)
    m = make("faster_vit_0_any_res")
    with torch.no_grad():
        assert m.forward_features(torch.randn(1, 3, 97, 65)).shape[-2:] == feature_map_size(97, 65) == (4, 3)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_default_cfg_is_complete(name):
    cfg = default_cfgs[name].default.to_dict()
    for key in (
        "input_size",
        "pool_size",
        "crop_pct",
        "interpolation",
        "mean",
        "std",
        "first_conv",
        "classifier",
    ):
        assert cfg.get(key) is not None, key
    assert cfg["pool_size"] == feature_map_size(*cfg["input_size"][1:])
    assert cfg["num_classes"] == 1000 and cfg["fixed_input_size"] is False


@pytest.mark.parametrize("name", ["faster_vit_0_224", "faster_vit_4_21k_224"])
def test_default_cfg_describes_the_model(name):
    """pool_size is the map forward_features returns at input_size; first_conv and classifier name parameters;
    the classifier can be removed (pooled features) and the pooling too (the unpooled map)."""
    m = make(name, num_classes=1000)
    cfg = m.pretrained_cfg
    x = torch.randn(1, *cfg["input_size"])
    sd = m.state_dict()
    assert cfg["first_conv"] + ".weight" in sd and cfg["classifier"] + ".weight" in sd
    with torch.no_grad():
        feats = m.forward_features(x)
        assert tuple(feats.shape) == (1, m.num_features, *cfg["pool_size"])
        pre = m.forward_head(feats, pre_logits=True)
        assert pre.shape == (1, m.head_hidden_size)
        m.reset_classifier(0)
        assert m.num_classes == 0 and m(x).shape == pre.shape
        m.reset_classifier(0, "")
        assert tuple(m(x).shape) == tuple(feats.shape)
        unpooled = make(name, num_classes=0, global_pool="")
        assert tuple(unpooled(x).shape) == tuple(feats.shape)


def test_check_images_leaves_plain_fx_tracing_alone_and_is_a_node_with_timm_settings():
    class Stem(nn.Module):
        def forward(self, x):
            return check_images(x, 3, False) * 2

    plain = torch.fx.symbolic_trace(Stem())  # a Proxy is not checked (it has no shape yet)
    assert not any(n.op == "call_function" and n.target is check_images for n in plain.graph.nodes)
    gm = torch.fx.GraphModule(
        Stem(), torch.fx.Tracer(autowrap_functions=get_notrace_functions()).trace(Stem())
    )
    assert any(n.op == "call_function" and n.target is check_images for n in gm.graph.nodes)
    with pytest.raises(ValueError, match="expected 3 input channels, got 1"):
        gm(torch.randn(1, 1, 32, 32))
    with pytest.raises(ValueError, match="expected images"):
        check_images([1, 2], 3, False)


def test_fx_graph_equals_eager_and_still_checks_its_input():
    m = make("faster_vit_0_any_res")
    x = torch.randn(2, 3, 70, 100)
    gm = fx_model(m)
    names = get_graph_node_names(m, tracer_kwargs=TRACER)[1]
    assert "check_images" in names and "levels.2" in names  # the HAT stage is one leaf node
    with torch.inference_mode():
        assert torch.equal(next(iter(gm(x).values())), m(x))
    with pytest.raises(ValueError, match="expected 3 input channels, got 1"):
        gm(torch.randn(1, 1, 64, 64))
    with pytest.raises(ValueError, match="at least 32x32"):
        gm(torch.randn(1, 3, 16, 64))


def test_fx_backward_reaches_every_parameter():
    m = make(num_classes=42).train()
    n_params = sum(p.numel() for p in m.parameters())
    gm = fx_model(m, train=True)
    out = next(iter(gm(torch.randn(2, 3, 64, 64)).values()))
    out.mean().backward()
    assert out.shape == (2, 42)
    assert all(p.grad is not None for p in gm.parameters())
    assert sum(p.grad.numel() for p in gm.parameters()) == n_params


@pytest.mark.slow
def test_torchscript_equals_eager_and_keeps_the_input_check():
    m = make()
    x = torch.randn(2, 3, 64, 96)  # 2 x 3 windows in the HAT stage: carrier tokens on a non-square grid
    s = torch.jit.script(m)
    with torch.no_grad():
        torch.testing.assert_close(s(x), m(x), rtol=0, atol=1e-6)
    with pytest.raises(torch.jit.Error, match="expected 3 input channels, got 1"):
        s(torch.randn(1, 1, 64, 64))
    with pytest.raises(torch.jit.Error, match="not divisible by the network stride 32"):
        s(torch.randn(1, 3, 64, 70))


@pytest.mark.slow
def test_fx_graph_scripts():
    m = make("faster_vit_0_any_res")
    s = torch.jit.script(fx_model(m))
    x = torch.randn(1, 3, 70, 100)
    with torch.inference_mode():
        torch.testing.assert_close(next(iter(s(x).values())), m(x), rtol=0, atol=1e-6)
    with pytest.raises(torch.jit.Error, match="expected 3 input channels"):
        s(torch.randn(1, 1, 64, 64))


def test_forward_intermediates_is_timms_feature_api():
    m = make()
    x = torch.randn(1, 3, 96, 96)
    info = timm.models.FeatureInfo(m.feature_info, len(m.feature_info))
    with torch.no_grad():
        final, feats = m.forward_intermediates(x)
        assert torch.equal(final, m.forward_features(x))
        assert [tuple(f.shape[1:]) for f in feats] == [
            (c, 96 // r, 96 // r) for c, r in zip(info.channels(), info.reduction(), strict=True)
        ]
        only = m.forward_intermediates(x, indices=(1, 2), intermediates_only=True)
        assert [torch.equal(a, b) for a, b in zip(only, feats[1:3], strict=True)] == [True, True]
        m.set_grad_checkpointing()
        final3, _ = m.forward_intermediates(x)
        assert torch.equal(final, final3)
    with pytest.raises(ValueError, match="NCHW"):
        m.forward_intermediates(x, output_fmt="NHWC")
    with pytest.raises(ValueError, match="expected 3 input channels"):
        m.forward_intermediates(torch.randn(1, 2, 96, 96))


def test_features_only_is_the_getter_and_other_wrappers_are_refused():
    f = make(features_only=True, feature_cls="getter", out_indices=(0, 1, 2, 3))
    assert (
        [t.shape[1] for t in f(torch.randn(1, 3, 64, 64))] == f.feature_info.channels() == [16, 32, 64, 128]
    )
    for cls in ("hook", "fx", "list"):
        with pytest.raises(ValueError, match="feature_cls='getter'"):
            make(features_only=True, feature_cls=cls)


def test_fastervit_layer_is_an_fx_leaf_and_the_stage_has_no_python_only_branches():
    assert FasterViTLayer in get_notrace_modules() and check_images in get_notrace_functions()
    assert isinstance(make(), FasterViT)
