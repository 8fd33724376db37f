import math

import pytest
import torch

from iclr24.ncde_bounds.bounds import approximation_bias_bound
from iclr24.ncde_bounds.bounds import empirical_lipschitz
from iclr24.ncde_bounds.bounds import generalization_bound
from iclr24.ncde_bounds.bounds import gronwall_factor
from iclr24.ncde_bounds.bounds import lipschitz_upper
from iclr24.ncde_bounds.bounds import risk_decomposition
from iclr24.ncde_bounds.bounds import sampling_bias_bound
from iclr24.ncde_bounds.bounds import state_bound
from iclr24.ncde_bounds.bounds import vector_field_sup
from iclr24.ncde_bounds.model import NCDE
from iclr24.ncde_bounds.model import VectorField
from iclr24.ncde_bounds.paths import add_time_channel
from iclr24.ncde_bounds.paths import total_variation


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_lipschitz_upper_bounds_the_empirical_constant(depth):
    torch.manual_seed(depth)
    vf = VectorField(5, 3, width=16, depth=depth)
    z = torch.randn(256, 5) * 2
    emp = empirical_lipschitz(vf, z)
    up = lipschitz_upper(vf)
    assert 0 < emp <= up
    # and it is the product of spectral norms: a single linear layer without tanh saturation is nearly tight
    if depth == 0:
        assert emp > 0.3 * up


def test_state_bound_holds_for_an_untrained_ncde():
    torch.manual_seed(0)
    model = NCDE(1, hidden=4).double()
    t = torch.linspace(0, 1, 9, dtype=torch.float64)
    v = torch.randn(16, 9, 1, dtype=torch.float64).cumsum(1)
    with torch.no_grad():
        z1 = model.hidden_state(t, v)
        z0 = model.embed(add_time_channel(t, v)[:, 0])
    tv = total_variation(add_time_channel(t, v))
    m = vector_field_sup(model.vector_field)
    for i in range(16):
        assert float(z1[i].norm()) <= state_bound(float(z0[i].norm()), m, float(tv[i])) + 1e-12


def test_generalization_bound_terms_grow_with_total_variation_and_shrink_with_n():
    base = dict(lipschitz=0.5, readout_norm=1.0, vector_field_sup=1.0, loss_bound=1.0, delta=0.05)
    b1 = generalization_bound(max_total_variation=2.0, n=100, **base)
    b2 = generalization_bound(max_total_variation=9.0, n=100, **base)
    b3 = generalization_bound(max_total_variation=2.0, n=400, **base)
    assert b2.complexity > b1.complexity and b2.k2 == pytest.approx(4.5)
    assert b3.complexity == pytest.approx(b1.complexity / 2)
    assert b1.concentration == pytest.approx(math.sqrt(math.log(20) / 200))
    assert b1.form_only and b1.total == pytest.approx(b1.complexity + b1.concentration)
    assert b1.log10_complexity == pytest.approx(math.log10(b1.complexity))


def test_generalization_bound_past_float_range_is_vacuous_not_an_error():
    b = generalization_bound(lipschitz=50.0, max_total_variation=40.0, n=40, readout_norm=2.0)  # K_2 = 2000
    assert b.complexity == math.inf and b.total == math.inf
    assert b.log10_complexity == pytest.approx(
        math.log10(2.0 * 41.0) + 2000 / math.log(10) - 0.5 * math.log10(40)
    )


def test_gronwall_risk_and_bias_forms():
    assert gronwall_factor(0.5, 2.0) == pytest.approx(math.e)
    r = risk_decomposition(0.1, 0.2)
    assert r.excess_risk_bound == pytest.approx(0.6)
    assert (
        sampling_bias_bound(vector_field_sup=1, lipschitz=0, tv_path=3, tv_interpolation=2, sup_distance=0.1)
        == 0.1
    )
    assert approximation_bias_bound(total_variation=2, lipschitz=0, field_error=0.1, readout_error=0.5) == 0.7


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: gronwall_factor(-1.0, 1.0), "lipschitz"),
        (lambda: gronwall_factor(1.0, math.nan), "total_variation"),
        (lambda: generalization_bound(lipschitz=1, max_total_variation=1, n=0, readout_norm=1), "n must"),
        (
            lambda: generalization_bound(lipschitz=1, max_total_variation=1, n=5, readout_norm=1, delta=1.5),
            "delta",
        ),
        (lambda: lipschitz_upper(torch.nn.Linear(2, 2)), "VectorField"),
        (lambda: empirical_lipschitz(VectorField(3, 2), torch.zeros(4, 2)), "shape"),
    ],
)
def test_bad_bound_inputs_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()
