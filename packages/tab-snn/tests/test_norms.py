"""TAB and the baselines against closed forms and the official formulation (a BatchNorm per prefix of steps)."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from iclr24.tab_snn.norms import BNTT
from iclr24.tab_snn.norms import TAB
from iclr24.tab_snn.norms import TDBN
from iclr24.tab_snn.norms import TEBN
from iclr24.tab_snn.norms import SeqBN
from iclr24.tab_snn.norms import cumulative_moments
from iclr24.tab_snn.norms import make_norm
from iclr24.tab_snn.norms import tab_normalize_loop

torch.set_num_threads(1)


def _x(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    # per-step drift so that the statistics of different prefixes really differ
    x = torch.randn(*shape, generator=g, dtype=torch.float64)
    drift = torch.arange(shape[1], dtype=torch.float64).reshape(1, -1, *([1] * (len(shape) - 2)))
    return x * (1 + 0.3 * drift) + drift


def _randomise(mod: nn.Module, seed: int = 1) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in mod.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))


@pytest.mark.parametrize("shape", [(7, 5, 3), (4, 4, 3, 2, 3)])
def test_cumulative_moments_match_brute_force(shape):
    x = _x(*shape)
    mu, s2, count = cumulative_moments(x)
    dims = (0, 1, *range(3, x.dim()))
    for t in range(shape[1]):
        seg = x[:, : t + 1]
        assert torch.allclose(mu[t], seg.mean(dim=dims), atol=1e-12)
        assert torch.allclose(s2[t], seg.var(dim=dims, correction=0), atol=1e-12)
        assert int(count[t]) == seg.numel() // shape[2]


@pytest.mark.parametrize("shape", [(8, 6, 5), (4, 4, 3, 5, 5)])
def test_cumsum_tab_equals_the_official_loop_float32(shape):
    """Cumulative sums give the loop of T BatchNorms on prefixes (official TAB_Layer) to 1e-5, running stats too."""
    x = _x(*shape).float()
    tab = TAB(shape[2], shape[1])
    _randomise(tab)
    rm, rv = tab.running_mean.clone(), tab.running_var.clone()
    ref = tab_normalize_loop(x, tab.weight, tab.bias, tab.p, tab.eps, rm, rv, tab.momentum)
    y = tab(x)
    assert torch.allclose(y, ref, atol=1e-5, rtol=1e-5)
    assert torch.allclose(tab.running_mean, rm, atol=1e-5)
    assert torch.allclose(tab.running_var, rv, atol=1e-5, rtol=1e-5)
    # gradients agree too
    g = torch.randn_like(y)
    xa = x.clone().requires_grad_()
    xb = x.clone().requires_grad_()
    ga = torch.autograd.grad((tab(xa) * g).sum(), xa)[0]
    gb = torch.autograd.grad((tab_normalize_loop(xb, tab.weight, tab.bias, tab.p, tab.eps) * g).sum(), xb)[0]
    assert torch.allclose(ga, gb, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("spatial", [(), (3, 4)])
def test_T1_reduces_to_batchnorm_train_and_eval(spatial):
    """Acceptance 1: TAB(C, T=1), p = 1, equals nn.BatchNorm in train and eval mode, same running statistics."""
    C = 4
    x = _x(6, 1, C, *spatial).float()
    tab = TAB(C, 1)
    bn = (nn.BatchNorm1d if not spatial else nn.BatchNorm2d)(C)
    with torch.no_grad():
        w, b = torch.randn(C), torch.randn(C)
        tab.weight.copy_(w[None])
        tab.bias.copy_(b[None])
        bn.weight.copy_(w)
        bn.bias.copy_(b)
    for step in range(3):
        xs = x * (step + 1) + step
        assert torch.allclose(tab(xs)[:, 0], bn(xs[:, 0]), atol=1e-6)
    assert torch.allclose(tab.running_mean[0], bn.running_mean, atol=1e-6)
    assert torch.allclose(tab.running_var[0], bn.running_var, atol=1e-6)
    tab.eval(), bn.eval()
    assert torch.allclose(tab(x)[:, 0], bn(x[:, 0]), atol=1e-6)


def test_endpoints_step1_is_per_step_bn_and_stepT_is_joint_bn():
    """Acceptance 2: at init, TAB's step 1 = BN of x[:, 0] alone; its step T = tdBN/TEBN's step T."""
    N, T, C = 9, 5, 3
    x = _x(N, T, C, 2, 2).float()
    y = TAB(C, T)(x)
    bn = nn.BatchNorm2d(C)
    assert torch.allclose(y[:, 0], bn(x[:, 0]), atol=1e-5)
    assert torch.allclose(y[:, -1], TDBN(C, T)(x)[:, -1], atol=1e-5)
    assert torch.allclose(y[:, -1], TEBN(C, T)(x)[:, -1], atol=1e-5)
    # and BNTT is per-step BN at every step (with its own eps)
    yb = BNTT(C, T)(x)
    for t in range(T):
        assert torch.allclose(yb[:, t], nn.BatchNorm2d(C, eps=1e-4, affine=False)(x[:, t]), atol=1e-5)


def test_tab_is_causal_and_tdbn_is_not():
    """Acceptance 3: in train mode changing x[:, t+1:] leaves y[:, :t+1] of TAB unchanged; tdBN mixes the future."""
    N, T, C, t = 8, 6, 4, 2
    x = _x(N, T, C).float()
    x2 = x.clone()
    x2[:, t + 1 :] = torch.randn_like(x2[:, t + 1 :]) * 5 + 3
    tab, tdbn = TAB(C, T), TDBN(C, T)
    _randomise(tab)
    assert torch.equal(tab(x)[:, : t + 1], tab(x2)[:, : t + 1])
    assert not torch.allclose(tdbn(x)[:, : t + 1], tdbn(x2)[:, : t + 1], atol=1e-3)
    # gradient view of causality: d y[:, :t+1] / d x[:, t+1:] == 0
    xr = x.clone().requires_grad_()
    g = torch.autograd.grad(tab(xr)[:, : t + 1].sum() + (tab(xr)[:, : t + 1] ** 2).sum(), xr)[0]
    assert torch.count_nonzero(g[:, t + 1 :]) == 0


def test_running_statistics_after_one_step_and_eval_uses_them():
    """Acceptance 4: running_mean_t = 0.1 mu_{1:t}; running_var_t = 0.9 + 0.1 unbiased s2_{1:t}; eval per t."""
    N, T, C = 10, 4, 3
    x = _x(N, T, C, 2).double()
    tab = TAB(C, T).double()
    tab(x)
    for t in range(T):
        seg = x[:, : t + 1]
        dims = (0, 1, 3)
        assert torch.allclose(tab.running_mean[t], 0.1 * seg.mean(dim=dims), atol=1e-12)
        assert torch.allclose(tab.running_var[t], 0.9 + 0.1 * seg.var(dim=dims, correction=1), atol=1e-12)
    tab.eval()
    z = _x(3, T, C, 2, seed=5).double()
    y = tab(z)
    for t in range(T):
        rm = tab.running_mean[t].reshape(1, C, 1)
        rv = tab.running_var[t].reshape(1, C, 1)
        assert torch.allclose(y[:, t], (z[:, t] - rm) / torch.sqrt(rv + tab.eps), atol=1e-12)


def test_p_squared_scaling_and_gradient():
    """Acceptance 6: p has T entries, starts at 1, receives a gradient, and the output scales as p_t^2."""
    N, T, C = 6, 3, 2
    x = _x(N, T, C).float()
    tab = TAB(C, T)
    assert tab.p.shape == (T,) and torch.equal(tab.p.detach(), torch.ones(T))
    y1 = tab(x)
    y1.pow(2).sum().backward()
    assert tab.p.grad is not None and torch.all(tab.p.grad.abs() > 0)
    with torch.no_grad():
        tab.p.copy_(torch.tensor([2.0, -0.5, 3.0]))
    y2 = tab(x)
    for t, s in enumerate([4.0, 0.25, 9.0]):
        assert torch.allclose(y2[:, t], s * y1[:, t].detach(), atol=1e-5)


@pytest.mark.parametrize("name", ["bn", "tdbn", "bntt", "tebn", "tab", "none"])
def test_layouts_NT_and_TN_agree(name):
    """Acceptance 7: the TN layout gives the NT result after a transpose, in train and eval mode."""
    x = _x(5, 4, 3, 2, 2).float()
    a = make_norm(name, 3, 4, layout="NT")
    b = make_norm(name, 3, 4, layout="TN")
    _randomise(a)
    b.load_state_dict(a.state_dict())
    assert torch.allclose(a(x), b(x.transpose(0, 1)).transpose(0, 1), atol=1e-6)
    a.eval(), b.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.allclose(a(x), b(x.transpose(0, 1)).transpose(0, 1), atol=1e-6)


def test_baseline_inits_and_parameters():
    tdbn = TDBN(3, 4, alpha=2**-0.5, v_th=1.0)
    assert torch.allclose(tdbn.weight, torch.full((3,), 2**-0.5))
    assert torch.equal(tdbn.bias.detach(), torch.zeros(3))
    bntt = BNTT(3, 4)
    assert not hasattr(bntt, "bias") and bntt.weight.shape == (4, 3) and bntt.eps == 1e-4
    tebn = TEBN(3, 4)
    assert torch.equal(tebn.k.detach(), torch.ones(4))
    # joint statistics of SeqBN equal one BatchNorm over N*T
    x = _x(5, 4, 3).float()
    assert torch.allclose(SeqBN(3, 4)(x).flatten(0, 1), nn.BatchNorm1d(3)(x.flatten(0, 1)), atol=1e-6)


# ---- bad input -------------------------------------------------------------------------------------------------


def test_time_dim_mismatch_names_the_layout():
    with pytest.raises(ValueError, match=r"T=4.*layout='NT'"):
        TAB(3, 4)(torch.randn(2, 5, 3))
    with pytest.raises(ValueError, match=r"layout='TN'"):
        TAB(3, 4, layout="TN")(torch.randn(2, 4, 3))  # [N=2, T=4] given to a TN layer


@pytest.mark.parametrize("T", [0, -1, 2.5, True])
def test_T_below_one_or_not_int(T):
    with pytest.raises(ValueError, match="T"):
        TAB(3, T)


def test_wrong_channels_and_dims():
    with pytest.raises(ValueError, match="3 channels"):
        TAB(3, 2)(torch.randn(4, 2, 5))
    with pytest.raises(ValueError, match="at least 3 dims"):
        TAB(3, 2)(torch.randn(4, 2))


def test_non_finite_input():
    x = torch.randn(4, 2, 3)
    x[0, 1, 2] = float("nan")
    with pytest.raises(ValueError, match="NaN or inf"):
        TAB(3, 2)(x)


def test_unknown_norm_name():
    with pytest.raises(ValueError, match="expected one of none, bn, tdbn, bntt, tebn, tab"):
        make_norm("layernorm", 3, 2)


def test_eval_before_training_warns():
    tab = TAB(3, 2).eval()
    with pytest.warns(UserWarning, match="never seen a training batch"):
        tab(torch.randn(4, 2, 3))
    tab.train()
    tab(torch.randn(4, 2, 3))
    tab.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tab(torch.randn(4, 2, 3))


def test_bad_hyper_parameters():
    with pytest.raises(ValueError, match="momentum"):
        TAB(3, 2, momentum=0.0)
    with pytest.raises(ValueError, match="layout"):
        TAB(3, 2, layout="NCT")
    with pytest.raises(ValueError, match="alpha"):
        TDBN(3, 2, alpha=0.0)
