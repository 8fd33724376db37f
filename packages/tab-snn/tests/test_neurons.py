"""The LIF neuron and its triangle surrogate against hand-computed values (official LIFNeuron / TriangleSG)."""

from __future__ import annotations

import pytest
import torch

from iclr24.tab_snn.neurons import LIF
from iclr24.tab_snn.neurons import ReadoutIntegrator
from iclr24.tab_snn.neurons import direct_encoding
from iclr24.tab_snn.neurons import firing_rates
from iclr24.tab_snn.neurons import lif_forward


def test_constant_input_spike_train():
    """Acceptance 5: tau = 0.9, V_th = 1, constant 0.6 over T = 3 -> spikes [0, 1, 0], m = 0.6, 1.14, 0.6."""
    x = torch.full((1, 3, 1), 0.6, dtype=torch.float64)
    s, m = lif_forward(x, tau=0.9, v_th=1.0)
    assert s.flatten().tolist() == [0.0, 1.0, 0.0]
    assert torch.allclose(m.flatten(), torch.tensor([0.6, 1.14, 0.6], dtype=torch.float64))


def test_threshold_is_strict_and_reset_is_hard():
    s, m = lif_forward(torch.tensor([[[1.0], [0.5]]]), tau=0.5, v_th=1.0)
    assert s.flatten().tolist() == [0.0, 0.0]  # m = V_th does not fire
    assert torch.allclose(m.flatten(), torch.tensor([1.0, 1.0]))  # 0.5 * 1.0 + 0.5: no reset without a spike
    s, m = lif_forward(torch.tensor([[[2.0], [0.5]]]), tau=0.9, v_th=1.0)
    assert s.flatten().tolist() == [1.0, 0.0]
    assert torch.allclose(m.flatten(), torch.tensor([2.0, 0.5]))  # reset to 0 after the spike


@pytest.mark.parametrize(
    ("m", "grad"), [(1.0, 1.0), (1.5, 0.5), (0.25, 0.25), (2.0, 0.0), (0.0, 0.0), (3.0, 0.0), (-1.0, 0.0)]
)
def test_triangle_surrogate_values(m, grad):
    """ds/dm = max(0, gamma - |m - V_th|) / gamma^2: 1 at V_th, 0 where |m - V_th| >= gamma (gamma = 1)."""
    x = torch.tensor([[[m]]], requires_grad=True)
    s, _ = lif_forward(x, tau=0.9, v_th=1.0, gamma=1.0)
    s.sum().backward()
    assert x.grad.item() == pytest.approx(grad)


def test_surrogate_width_gamma():
    x = torch.tensor([[[1.25]]], requires_grad=True)
    lif_forward(x, v_th=1.0, gamma=0.5)[0].sum().backward()
    assert x.grad.item() == pytest.approx((0.5 - 0.25) / 0.25)


def test_layouts_readout_encoding_and_rates():
    x = torch.rand(4, 5, 3) * 2
    a, b = LIF(), LIF(layout="TN")
    assert torch.equal(a(x), b(x.transpose(0, 1)).transpose(0, 1))
    assert torch.allclose(ReadoutIntegrator()(x)[:, -1], x.sum(1))
    e = direct_encoding(torch.rand(2, 3, 4, 4), 6)
    assert e.shape == (2, 6, 3, 4, 4) and torch.equal(e[:, 0], e[:, 5])
    net = torch.nn.Sequential(LIF())
    s = net(x)
    rates = firing_rates(net)
    assert rates["0"] == pytest.approx(float(s.mean()))
    assert len(firing_rates(net, per_step=True)["0"]) == 5


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tau": 1.5}, "tau"),
        ({"v_th": 0.0}, "v_th"),
        ({"gamma": -1.0}, "gamma"),
        ({"surrogate": "atan"}, "surrogate"),
    ],
)
def test_bad_lif_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LIF(**kwargs)
