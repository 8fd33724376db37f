import math

import pytest
import torch
from torch import nn

from iclr24.ncde_bounds.model import NCDE
from iclr24.ncde_bounds.model import VectorField
from iclr24.ncde_bounds.model import solve_cde
from iclr24.ncde_bounds.paths import build_control
from iclr24.ncde_bounds.paths import pad_series


class LinearField(nn.Module):
    """G(z) = [A_1 z, ..., A_d z]: (B, p) -> (B, p, d)."""

    def __init__(self, mats: torch.Tensor) -> None:
        super().__init__()
        self.mats = mats  # (d, p, p)

    def forward(self, z):
        return torch.einsum("dpq,bq->bpd", self.mats, z)


def _irregular(b, length, channels, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.sort(torch.rand(b, length, generator=g, dtype=torch.float64), dim=1).values
    v = torch.randn(b, length, channels, generator=g, dtype=torch.float64).cumsum(1) * 0.3
    return t, v


@pytest.mark.parametrize(("solver", "substeps"), [("rk4", 8), ("dopri5", 1)])
def test_scalar_linear_cde_closed_form_on_any_grid(solver, substeps):
    # dz = a z dx with a 1-D control: z_1 = z_0 exp(a (x_1 - x_0)) whatever the grid
    a = 0.7
    t, v = _irregular(4, 9, 1, seed=0)
    field = LinearField(torch.full((1, 1, 1), a, dtype=torch.float64))
    z0 = torch.tensor([[1.0], [2.0], [-0.5], [0.3]], dtype=torch.float64)
    z1 = solve_cde(field, z0, build_control(t, v), solver=solver, substeps=substeps, rtol=1e-8, atol=1e-10)
    expected = z0 * torch.exp(a * (v[:, -1] - v[:, 0]))
    assert torch.allclose(z1, expected, rtol=1e-6, atol=0)


def test_dopri5_agrees_with_closed_form_on_commuting_linear_fields():
    # commuting A_1, A_2 (polynomials of one matrix): z_1 = expm(A_1 dx^1 + A_2 dx^2) z_0, dx the total increment
    g = torch.Generator().manual_seed(1)
    m = torch.randn(3, 3, generator=g, dtype=torch.float64) * 0.4
    mats = torch.stack([m, m @ m - 0.5 * m])
    t, v = _irregular(3, 8, 2, seed=2)
    z0 = torch.randn(3, 3, generator=g, dtype=torch.float64)
    inc = v[:, -1] - v[:, 0]
    expected = torch.stack(
        [torch.linalg.matrix_exp(mats[0] * inc[i, 0] + mats[1] * inc[i, 1]) @ z0[i] for i in range(3)]
    )
    for solver, sub in (("dopri5", 1), ("rk4", 8)):
        z1 = solve_cde(
            LinearField(mats), z0, build_control(t, v), solver=solver, substeps=sub, rtol=1e-10, atol=1e-12
        )
        assert torch.allclose(z1, expected, rtol=1e-6, atol=1e-9), solver


def test_euler_with_one_substep_is_the_resnet_recursion():
    torch.manual_seed(0)
    vf = VectorField(4, 3, width=8, depth=2).double()
    t, v = _irregular(5, 6, 3, seed=3)
    z0 = torch.randn(5, 4, dtype=torch.float64)
    z1 = solve_cde(vf, z0, build_control(t, v), solver="euler", substeps=1)
    z = z0
    for j in range(5):
        z = z + torch.einsum("bpd,bd->bp", vf(z), v[:, j + 1] - v[:, j])  # z_{j+1} = z_j + G(z_j) dx_j
    assert torch.equal(z1, z)


def test_fixed_step_solvers_converge_to_dopri5():
    torch.manual_seed(0)
    vf = VectorField(3, 2, width=16, depth=1).double().requires_grad_(False)
    t, v = _irregular(4, 5, 2, seed=4)
    z0 = torch.randn(4, 3, dtype=torch.float64)
    ctrl = build_control(t, v, interpolation="cubic")
    ref = solve_cde(vf, z0, ctrl, solver="dopri5", rtol=1e-10, atol=1e-12)
    err = [float((solve_cde(vf, z0, ctrl, solver="rk4", substeps=s) - ref).abs().max()) for s in (1, 2, 4)]
    assert err[2] < err[1] < err[0] and err[2] < 1e-5
    e_euler = float((solve_cde(vf, z0, ctrl, solver="euler", substeps=64) - ref).abs().max())
    assert e_euler < float((solve_cde(vf, z0, ctrl, solver="euler", substeps=8) - ref).abs().max())


@pytest.mark.parametrize("interpolation", ["linear", "cubic"])
@pytest.mark.parametrize("solver", ["euler", "rk4", "dopri5"])
def test_padding_with_repeats_changes_nothing(solver, interpolation):
    torch.manual_seed(0)
    tol = {"rtol": 1e-7, "atol": 1e-9}
    model = NCDE(
        2, hidden=4, vector_field_width=8, solver=solver, interpolation=interpolation, **tol
    ).double()
    t1, v1 = _irregular(1, 4, 2, seed=5)
    t2, v2 = _irregular(1, 7, 2, seed=6)
    times, values, lengths = pad_series([t1[0], t2[0]], [v1[0], v2[0]])
    with torch.no_grad():
        alone = torch.cat([model(t1, v1), model(t2, v2)])
        padded = model(times, values)  # repeated stamps and values: zero increments
        with_lengths = model(times, values, lengths)
    # fixed steps: exactly the same arithmetic on the real intervals; dopri5: the same up to its tolerance
    atol = 1e-5 if solver == "dopri5" else 1e-12
    assert torch.allclose(padded, alone, atol=atol)
    assert torch.allclose(with_lengths, alone, atol=atol)


def test_ncde_batched_output_and_gradients():
    model = NCDE(1, hidden=8, vector_field_width=32, depth=1)
    t = torch.linspace(0, 1, 6)
    v = torch.randn(10, 6, 1)
    out = model(t, v)
    assert out.shape == (10, 1)
    out.sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    # the embedding sees the first observation: the output depends on x_0
    v2 = v.clone()
    v2[:, 0] += 1.0
    assert not torch.allclose(model(t, v2), out)


def test_time_channel_makes_the_output_depend_on_sampling_times():
    torch.manual_seed(0)
    model = NCDE(1, hidden=4).double()
    v = torch.randn(2, 5, 1, dtype=torch.float64)
    a = model(torch.linspace(0, 1, 5, dtype=torch.float64), v)
    b = model(torch.tensor([0.0, 0.1, 0.2, 0.3, 1.0], dtype=torch.float64), v)
    assert not torch.allclose(a, b)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"solver": "midpoint"}, "solver must be one of"),
        ({"interpolation": "natural"}, "interpolation must be one of"),
        ({"substeps": 0}, "substeps"),
        ({"hidden": 0}, "hidden"),
        ({"depth": -1}, "depth"),
    ],
)
def test_bad_model_settings_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NCDE(2, **kwargs)


def test_channel_mismatch_and_nan_are_refused_at_forward():
    model = NCDE(2)
    t = torch.linspace(0, 1, 4)
    with pytest.raises(ValueError, match="expects 2 channels"):
        model(t, torch.zeros(3, 4, 3))
    v = torch.zeros(3, 4, 2)
    v[0, 1, 0] = math.nan
    with pytest.raises(ValueError, match="mask"):
        model(t, v)
    out = model(t, v, mask=~torch.isnan(v))
    assert torch.isfinite(out).all()
