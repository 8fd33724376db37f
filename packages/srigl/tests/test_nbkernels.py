"""The numba kernels (the fast path without a C++ compiler), the variant's visibility, and the fallback."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import iclr24.srigl.condensed as cd
from iclr24.srigl import CondensedConv2d
from iclr24.srigl import CondensedLinear
from iclr24.srigl import condense
from iclr24.srigl import random_constant_fan_in_mask
from iclr24.srigl.convert import describe
from iclr24.srigl.nbkernels import numba_available

needs_numba = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


def _cfi(out=48, inp=40, k=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    lin = nn.Linear(inp, out)
    mask = random_constant_fan_in_mask(out, inp, k, g)
    mask[[3, 17]] = False
    with torch.no_grad():
        lin.weight.copy_(torch.randn(out, inp, generator=g) * mask)
    return lin, mask


@needs_numba
@pytest.mark.parametrize("dt", [torch.int16, torch.int32])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch", [1, 7, 8, 197])  # both loop orders (rows below 8, cols from 8)
def test_numba_equals_masked_dense(dt, bias, batch):
    lin, mask = _cfi()
    if not bias:
        lin.bias = None
    c = CondensedLinear.from_linear(lin, mask, variant="numba", index_dtype=dt)
    assert c.indices.dtype == dt
    x = torch.randn(batch, 40)
    ref = F.linear(x, lin.weight, lin.bias)[:, mask.any(1)].detach()
    y = c(x)
    assert y.is_contiguous() and y.shape == ref.shape
    assert torch.allclose(y, ref, rtol=1e-5, atol=1e-5 * float(ref.abs().max()))


@needs_numba
def test_numba_layer_follows_changed_weights_and_survives_copies():
    """The layer keeps checked numpy views of its tensors between calls; an in-place change, a new tensor, a deep
    copy and a pickle must each give the current weights' output, never a stale one."""
    import copy
    import pickle

    lin, mask = _cfi()
    c = CondensedLinear.from_linear(lin, mask, variant="numba")
    x = torch.randn(3, 40)
    y0 = c(x)
    with torch.no_grad():
        c.values.mul_(2.0)  # in place: same memory, new version
    assert torch.allclose(c(x) - c.bias, 2 * (y0 - c.bias), atol=1e-5)
    with torch.no_grad():
        c.values = nn.Parameter(c.values / 2)  # a new tensor
        c.bias.add_(1.0)
    assert torch.allclose(c(x), y0 + 1, atol=1e-5)
    for other in (copy.deepcopy(c), pickle.loads(pickle.dumps(c))):
        with torch.no_grad():
            other.values.zero_()
        assert torch.allclose(other(x), other.bias.expand(3, -1))
        assert torch.allclose(c(x), y0 + 1, atol=1e-5)  # the original is untouched


@needs_numba
def test_numba_conv_and_auto_model_equal_masked_dense(monkeypatch):
    monkeypatch.setenv(
        "SRIGL_NO_KERNEL", "1"
    )  # numba is auto's first choice only where no C++ kernel is built
    torch.manual_seed(0)
    conv = nn.Conv2d(4, 8, 3, padding=1, stride=2)
    w = conv.weight.detach().view(8, -1)
    mask = random_constant_fan_in_mask(8, 36, 3, torch.Generator().manual_seed(1)).view_as(conv.weight)
    with torch.no_grad():
        conv.weight.mul_(mask)
    c = CondensedConv2d.from_conv(conv, mask, variant="numba")
    x = torch.randn(2, 4, 9, 9)
    assert torch.allclose(c(x), conv(x), atol=1e-5)
    assert w.shape == (8, 36)
    model = nn.Sequential(conv, nn.ReLU(), nn.Flatten(), nn.Linear(8 * 5 * 5, 10))
    auto = condense(model)
    runs = [r["runs"] for r in describe(auto)]
    assert runs[0].startswith("auto (1 row: numba") and runs[1].startswith(
        "auto (1 row: dense"
    )  # 10 % / dense
    with torch.no_grad():
        for b in (1, 16):
            x = torch.randn(b, 4, 9, 9)
            assert torch.allclose(auto(x), model(x), atol=1e-5)


def test_repr_and_describe_name_the_variant():
    lin, mask = _cfi()
    model = nn.Sequential(nn.Linear(40, 48), nn.ReLU(), nn.Linear(48, 5))
    with torch.no_grad():
        model[0].weight.copy_(lin.weight)
    c = condense(model, {"0.weight": mask}, variant="gather")
    assert "variant='gather'" in repr(c)
    rows = describe(c)
    assert [r["name"] for r in rows] == ["0", "2"] and {r["runs"] for r in rows} == {"gather"}
    assert rows[0]["k"] == 6 and rows[0]["out"] == 46  # two ablated neurons dropped
    a = condense(model, {"0.weight": mask})
    assert "variant=auto (1 row: " in repr(a) and all(
        r["runs"].startswith("auto (1 row: ") for r in describe(a)
    )
    with pytest.raises(ValueError, match="nn.Module"):
        describe("not a model")


def test_without_any_compiler_auto_warns_and_names_the_variant(monkeypatch):
    # no numba and no C++ compiler (so no built kernel): auto runs the torch gather or dense and says so, once
    monkeypatch.setenv("SRIGL_NO_NUMBA", "1")
    monkeypatch.setenv("SRIGL_NO_KERNEL", "1")
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    monkeypatch.setattr(cd, "_warned_slow", False)
    lin, mask = _cfi(out=64, inp=400, k=8)  # density 0.02: a kernel would run at every row count
    c = CondensedLinear.from_linear(lin, mask, variant="auto")
    assert not c.numba_ok and not c.fused_ok
    x = torch.randn(1, 400)
    with pytest.warns(UserWarning, match="pure-torch variant 'gather'"):
        y = c(x)
    ref = F.linear(x, lin.weight, lin.bias)[:, mask.any(1)].detach()
    assert torch.allclose(y, ref, atol=1e-5)
    assert c.runs() == "auto (1 row: gather, 4+ rows: dense, 4096+ rows: dense)"


@needs_numba
def test_without_a_cpp_compiler_the_numba_fast_path_is_there(monkeypatch):
    monkeypatch.setenv("SRIGL_NO_KERNEL", "1")  # the C++ kernel cannot be built or loaded
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    lin, mask = _cfi(out=64, inp=400, k=8)
    c = CondensedLinear.from_linear(lin, mask, variant="auto")
    assert c.numba_ok and c.choose(1) == "numba"
    assert "1 row: numba" in repr(c)
