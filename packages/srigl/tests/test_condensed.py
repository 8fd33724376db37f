import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from iclr24.srigl import CondensedConv2d
from iclr24.srigl import CondensedLinear
from iclr24.srigl import SRigL
from iclr24.srigl import condense
from iclr24.srigl import kernels
from iclr24.srigl import random_constant_fan_in_mask
from iclr24.srigl.condensed import AUTO_MAX_ROWS
from iclr24.srigl.condensed import AUTO_ONLINE_ROWS
from iclr24.srigl.condensed import auto_variant
from iclr24.srigl.kernels import build_directory


def _cfi_linear(out=48, inp=40, k=6, bias=True, ablate=(3, 17), seed=0):
    g = torch.Generator().manual_seed(seed)
    lin = nn.Linear(inp, out, bias=bias)
    mask = random_constant_fan_in_mask(out, inp, k, g)
    mask[list(ablate)] = False
    with torch.no_grad():
        lin.weight.copy_(torch.randn(out, inp, generator=g) * mask)
        if bias:
            lin.bias.copy_(torch.randn(out, generator=g))
    return lin, mask


@pytest.mark.parametrize("variant", ["gather", "gather_kmajor", "embedding_bag"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch", [1, 7, 256])
def test_condensed_equals_masked_dense_on_active_rows(variant, bias, batch):
    lin, mask = _cfi_linear(bias=bias)
    c = CondensedLinear.from_linear(lin, mask, variant=variant)
    active = mask.any(1)
    assert c.out_features == int(active.sum()) == 46 and c.k == 6
    x = torch.randn(batch, 40)
    ref = F.linear(x, lin.weight, lin.bias)[:, active].detach()
    y = c(x)
    assert y.shape == (batch, 46)
    assert torch.allclose(y, ref, rtol=1e-5, atol=1e-5 * float(ref.abs().max()))
    assert torch.equal(c.to_dense_weight(), lin.weight.detach()[active])


def test_rows_with_cancelling_weights_stay_active():
    # the official code tests W.sum(1) != 0, which drops this row; we use the mask / any non-zero
    lin = nn.Linear(4, 2, bias=False)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[1.0, -1.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0]]))
    c = CondensedLinear.from_linear(lin)
    assert c.out_features == 2
    x = torch.tensor([[3.0, 1.0, 1.0, 0.0]])
    assert torch.allclose(c(x), lin(x))


def test_keep_all_rows_and_leading_dims_and_chunking():
    lin, mask = _cfi_linear()
    c = CondensedLinear.from_linear(lin, mask, drop_inactive=False)
    c.max_chunk_elements = 50  # forces many chunks
    x = torch.randn(3, 5, 40)
    assert torch.allclose(c(x), lin(x), atol=1e-5)
    with pytest.raises(ValueError, match="last dim 40"):
        c(torch.randn(2, 39))
    with pytest.raises(ValueError, match="variant must be one of"):
        CondensedLinear.from_linear(lin, mask, variant="nope")


def _mlp_with_ablation(bias=True):
    torch.manual_seed(0)
    m = nn.Sequential(
        nn.Linear(20, 32, bias=bias),
        nn.ReLU(),
        nn.Linear(32, 32, bias=bias),
        nn.GELU(),
        nn.Linear(32, 5, bias=bias),
    )
    masks = {}
    g = torch.Generator().manual_seed(1)
    for name, k, abl in (("0", 4, [1, 2, 9]), ("2", 5, [0, 31]), ("4", 6, [])):
        lin = getattr(m, name)
        mk = random_constant_fan_in_mask(lin.out_features, lin.in_features, k, g)
        mk[abl] = False
        with torch.no_grad():
            lin.weight.mul_(mk)
            if bias:
                lin.bias.add_(0.5)  # ablated neurons output act(bias) != 0: must be folded
        masks[f"{name}.weight"] = mk
    return m.eval(), masks


@pytest.mark.parametrize("bias", [True, False])
def test_condense_model_drops_ablated_neurons_and_keeps_outputs(bias):
    m, masks = _mlp_with_ablation(bias)
    c = condense(m, masks)
    assert isinstance(c[0], CondensedLinear) and c[0].out_features == 29
    assert c[2].in_features == 29 and c[2].out_features == 30 and c[4].in_features == 30
    assert c[4].out_features == 5  # the output layer keeps every row
    for batch in (1, 7, 256):
        x = torch.randn(batch, 20)
        with torch.no_grad():
            ref, y = m(x), c(x)
        assert torch.allclose(y, ref, rtol=1e-5, atol=1e-5 * float(ref.abs().max()))
    assert isinstance(m[0], nn.Linear)  # the original is untouched


def test_condense_with_a_trained_sparsifier(digits, helpers):
    model = helpers.make_mlp(hidden=(128, 128))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sp = SRigL(model, opt, 0.95, 200, delta_t=10, gamma_sal=0.9, distribution="uniform", seed=0)
    helpers.train_steps(model, opt, sp, digits, 120)
    assert sum(sp.n_ablated().values()) > 0
    c = condense(model, sp)
    x = digits.x_test
    model.eval()
    assert torch.allclose(c(x), model(x), atol=1e-4)
    assert sum(p.numel() for p in c.parameters()) < 0.2 * sum(p.numel() for p in model.parameters())


def test_condensed_under_torch_compile():
    lin, mask = _cfi_linear(bias=True)
    c = CondensedLinear.from_linear(lin, mask, index_dtype=torch.int32).eval()
    torch._dynamo.reset()
    f = torch.compile(c, dynamic=False)
    x = torch.randn(7, 40)
    with torch.no_grad():
        assert torch.allclose(f(x), F.linear(x, lin.weight, lin.bias)[:, mask.any(1)], atol=1e-5)


def test_kernel_build_folder_is_per_environment(monkeypatch):
    here = build_directory()
    assert here == build_directory() and f"{kernels._NAME}-" in here
    monkeypatch.setattr(sys, "prefix", sys.prefix + "-another-venv")
    assert (
        build_directory() != here
    )  # another venv sharing the cache gets its own folder: no rebuild ping-pong


def test_fused_kernel_matches_when_available(fused_kernel):
    # k = 37: two 16-wide vector blocks plus a scalar tail
    lin, mask = _cfi_linear(out=50, inp=300, k=37, bias=True)
    for dt in (torch.int16, torch.int32):
        for mode in ("plain", "avx2", "avx2_packed", "avx512_gather", "tokens", "auto"):
            c = CondensedLinear.from_linear(lin, mask, variant="fused", index_dtype=dt)
            c.kernel_mode = mode
            # tokens: 64-row tiles of 1, 3 and 4 vectors, a partial last tile, several tiles
            for batch in (1, 4, 7, 64, 197, 256):
                x = torch.randn(batch, 300)
                ref = F.linear(x, lin.weight, lin.bias)[:, mask.any(1)].detach()
                assert torch.allclose(c(x).detach(), ref, atol=1e-5), (dt, mode, batch)
    lin2, mask2 = _cfi_linear(bias=False)
    c = CondensedLinear.from_linear(lin2, mask2, variant="fused")
    x = torch.randn(3, 40)
    assert torch.allclose(c(x).detach(), F.linear(x, lin2.weight)[:, mask2.any(1)].detach(), atol=1e-5)
    with pytest.raises(ValueError, match="mode must be one of"):
        c.kernel_mode = "nope"
        c(x)
    from iclr24.srigl.kernels import fused_condensed_linear

    # a bias of the wrong length is refused, not read past its end
    with pytest.raises(RuntimeError, match="bias must be a CPU tensor of out_features"):
        fused_condensed_linear(x, c.values.detach(), c.indices, torch.zeros(c.out_features + 1))


@pytest.mark.parametrize("pixels", [1, 49, 64, 130])
def test_fused_cols_entry_on_unfolded_input(fused_kernel, pixels):
    # a convolution's unfold layout [B, in, L] -> [B, n, L] with no transposes; partial 64-pixel tiles included
    from iclr24.srigl.kernels import fused_condensed_cols

    g = torch.Generator().manual_seed(pixels)
    for dt in (torch.int16, torch.int32):
        idx = torch.stack([torch.randperm(90, generator=g)[:13].sort().values for _ in range(11)]).to(dt)
        v, b = torch.randn(11, 13, generator=g), torch.randn(11, generator=g)
        x = torch.randn(3, 90, pixels, generator=g)
        ref = torch.einsum("nk,bnkl->bnl", v, x[:, idx.long()])
        assert torch.allclose(fused_condensed_cols(x, v, idx, b), ref + b[:, None], atol=1e-5), dt
        assert torch.allclose(fused_condensed_cols(x, v, idx, None), ref, atol=1e-5), dt
    with pytest.raises(RuntimeError, match=r"\[B, in, L\]"):
        fused_condensed_cols(x[0], v, idx, b)


@pytest.mark.parametrize("k", [1, 5, 15, 16, 17, 31, 32, 33, 47, 64, 307])
def test_gather_and_avx2_row_kernels_are_bit_identical(fused_kernel, k):
    # the auto rule picks between them by speed (kernels.row_mode), so the choice must not change a single bit
    from iclr24.srigl.kernels import fused_condensed_linear
    from iclr24.srigl.kernels import row_mode

    g = torch.Generator().manual_seed(k)
    inp = max(400, k)
    for dt, twin in ((torch.int16, "avx2_packed"), (torch.int32, "avx2")):
        idx = torch.stack([torch.randperm(inp, generator=g)[:k].sort().values for _ in range(37)]).to(dt)
        v, b = torch.randn(37, k, generator=g), torch.randn(37, generator=g)
        for rows in (1, 2, 3):
            x = torch.randn(rows, inp, generator=g)
            y = fused_condensed_linear(x, v, idx, b, "avx512_gather")
            assert torch.equal(y, fused_condensed_linear(x, v, idx, b, twin)), (dt, rows)
            assert torch.equal(y, fused_condensed_linear(x, v, idx, b, "auto")), (dt, rows)
            assert torch.allclose(y, (x[:, idx.long()] * v).sum(-1) + b, atol=1e-4)
    assert row_mode() in ("avx512_gather", "avx2_packed")
    lin, mask = _cfi_linear(out=20, inp=200, k=10, bias=True)
    c = CondensedLinear.from_linear(lin, mask, variant="fused", index_dtype=torch.int16)
    assert f"variant=fused/{row_mode()}" in repr(c)  # the layer names the loop a batch-1 call runs
    assert fused_kernel.has_avx512() or row_mode() == "avx2_packed"


def test_auto_choice_is_remembered_per_threshold_and_follows_the_kernels(monkeypatch):
    import iclr24.srigl.condensed as cd

    monkeypatch.setattr(cd, "_warned_slow", False)
    lin, mask = _cfi_linear(out=20, inp=200, k=10, bias=True)
    c = CondensedLinear.from_linear(lin, mask, variant="auto")
    c.fused_ok, c.numba_ok = False, False
    with pytest.warns(UserWarning):
        assert c.choose(1) == "gather"
    assert c.choose(2) == "gather" and c.choose(AUTO_ONLINE_ROWS) == "dense"  # density 0.05 > 0.01 batched
    c.fused_ok = True  # a kernel that became available is used on the next call
    assert (
        c.choose(1) == "fused"
        and c.choose(AUTO_ONLINE_ROWS) == "fused"
        and c.choose(AUTO_MAX_ROWS) == "fused"
    )


def _cfi_conv(cin=6, cout=10, k=7, seed=0, **kw):
    g = torch.Generator().manual_seed(seed)
    conv = nn.Conv2d(cin, cout, 3, **kw)
    mask = random_constant_fan_in_mask(cout, cin * 9, k, g).view(conv.weight.shape)
    mask[2] = False  # an ablated output channel outputs its bias
    with torch.no_grad():
        conv.weight.mul_(mask)
    return conv, mask


@pytest.mark.parametrize("variant", ["gather", "dense", "auto"])
@pytest.mark.parametrize(
    "geom", [{}, {"stride": 2, "padding": 1}, {"padding": 2, "dilation": 2, "bias": False}]
)
def test_condensed_conv2d_equals_masked_conv(variant, geom):
    conv, mask = _cfi_conv(**geom)
    c = CondensedConv2d.from_conv(conv, mask, variant=variant)
    assert c.k == 7 and c.out_channels == 10
    for batch in (1, 3):
        x = torch.randn(batch, 6, 11, 9)
        with torch.no_grad():
            ref, y = conv(x), c(x)
        assert y.shape == ref.shape
        assert torch.allclose(y, ref, atol=1e-5 * float(ref.abs().max()) + 1e-6)


def test_auto_rule_is_the_documented_table():
    # a built C++ kernel first: density <= 0.2 below AUTO_ONLINE_ROWS rows, <= 0.1 from there, at any row count
    assert [auto_variant(d, 1, True) for d in (0.3, 0.2, 0.05)] == ["dense", "fused", "fused"]
    assert [auto_variant(d, AUTO_ONLINE_ROWS, True) for d in (0.2, 0.1)] == ["dense", "fused"]
    assert [auto_variant(d, 1, True, True) for d in (0.3, 0.2)] == ["dense", "fused"]
    assert [auto_variant(d, 197, True, True) for d in (0.2, 0.1)] == ["dense", "fused"]
    assert auto_variant(0.1, AUTO_MAX_ROWS, True, True) == "fused"
    # then numba: density <= 0.2 at one row, <= 0.05 from AUTO_ONLINE_ROWS up to AUTO_MAX_ROWS rows, then dense
    assert [auto_variant(d, 1, False, True) for d in (0.3, 0.2)] == ["dense", "numba"]
    assert [auto_variant(d, 197, False, True) for d in (0.1, 0.05)] == ["dense", "numba"]
    assert auto_variant(0.05, AUTO_MAX_ROWS, False, True) == "dense"
    # then the torch gather: 0.05 / 0.01
    assert [auto_variant(d, 1, False) for d in (0.1, 0.05)] == ["dense", "gather"]
    assert [auto_variant(d, 256, False) for d in (0.05, 0.01)] == ["dense", "gather"]


def test_condense_small_cnn_and_plan():
    torch.manual_seed(0)
    m = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2),
        nn.ReLU(),
        nn.Conv2d(16, 16, 3, groups=4),
        nn.Flatten(),
        nn.Linear(16 * 3 * 3, 10),
    )
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    sp = SRigL(m, opt, 0.9, 10, distribution="erk", seed=0)
    c = condense(m, sp, variant="gather")
    assert isinstance(c[2], CondensedConv2d) and isinstance(c[6], CondensedLinear)
    assert isinstance(c[4], nn.Conv2d)  # grouped: kept masked dense, and the plan says so
    kinds = {r["name"]: r["variant"] for r in c.condense_plan}
    assert kinds["4"] == "kept" and kinds["2"] == "gather"
    x = torch.randn(3, 1, 12, 12)
    m.eval()
    with torch.no_grad():
        assert torch.allclose(c(x), m(x), atol=1e-5)
    auto = condense(m, sp)
    assert {r["variant"] for r in auto.condense_plan} == {"auto", "kept"}
    assert all(
        r["many_rows"] in ("numba", "fused", "gather", "dense")
        for r in auto.condense_plan
        if "many_rows" in r
    )
    with torch.no_grad():
        assert torch.allclose(auto(x), m(x), atol=1e-5)


def test_condense_transformer_encoder_keeps_fast_path_layers():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True, dropout=0.0)
    model = nn.Sequential(nn.Linear(8, 16), nn.TransformerEncoder(layer, 2, enable_nested_tensor=False))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sp = SRigL(model, opt, 0.8, 10, distribution="uniform", seed=0)
    c = condense(model, sp)  # used to crash: the eval fast path reads linear1.weight
    kept = {r["name"] for r in c.condense_plan if r["variant"] == "kept"}
    assert "1.layers.0.linear1" in kept and "1.layers.1.self_attn.out_proj" in kept
    assert isinstance(c[0], CondensedLinear)
    model.eval()
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        assert torch.allclose(c(x), model(x), atol=1e-5)


def test_condensed_conv2d_fused_kernel_when_built(fused_kernel):
    conv, mask = _cfi_conv(cin=8, cout=12, k=30, stride=2, padding=1)
    c = CondensedConv2d.from_conv(conv, mask, variant="fused")
    x = torch.randn(2, 8, 9, 9)
    with torch.no_grad():
        assert torch.allclose(c(x), conv(x), atol=1e-5)
