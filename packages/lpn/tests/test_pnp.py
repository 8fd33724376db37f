import pytest
import torch

from iclr24.lpn import conjugate_gradient
from iclr24.lpn import denoising_operator
from iclr24.lpn import gaussian_blur_operator
from iclr24.lpn import inpainting_operator
from iclr24.lpn import pnp_admm
from iclr24.lpn import pnp_pgd


@pytest.mark.parametrize(
    "op", [inpainting_operator((1, 6, 7), 0.4, seed=1), gaussian_blur_operator(1.2), denoising_operator()]
)
def test_operators_are_adjoint(op):
    x, y = torch.randn(2, 1, 6, 7, dtype=torch.float64), torch.randn(2, 1, 6, 7, dtype=torch.float64)
    assert (op.A(x) * y).sum().item() == pytest.approx((x * op.At(y)).sum().item(), rel=1e-10)


def test_inpainting_mask_fraction_and_blur_preserves_constants_inside():
    op = inpainting_operator((1, 100, 100), 0.4, seed=0)
    assert abs(1 - op.mask.mean().item() - 0.4) < 0.02
    b = gaussian_blur_operator(1.0)
    out = b.A(torch.ones(1, 1, 20, 20))
    assert torch.allclose(out[..., 5:15, 5:15], torch.ones(10, 10), atol=1e-6)


def test_conjugate_gradient_solves_spd_system():
    torch.manual_seed(0)
    m = torch.randn(5, 5, dtype=torch.float64)
    a = m @ m.T + 5 * torch.eye(5, dtype=torch.float64)
    b = torch.randn(3, 5, dtype=torch.float64)
    x = conjugate_gradient(lambda v: v @ a.T, b, max_iter=50, tol=1e-12)
    torch.testing.assert_close(x @ a.T, b, atol=1e-8, rtol=0)


def test_pnp_pgd_converges_to_the_regularised_solution():
    """f = prox of c/2||x||^2 (v / (1 + c)); PGD with step eta solves min 1/2||x - y||^2 + c/(2 eta)||x||^2."""
    c, eta = 1.0, 0.5
    y = torch.randn(3, 4, dtype=torch.float64)
    op = denoising_operator()
    res = pnp_pgd(y, op.A, op.At, lambda v: v / (1 + c), step=eta, num_iter=200, clip=None)
    torch.testing.assert_close(res.x, y / (1 + c / eta), atol=1e-10, rtol=0)
    assert res.step_norms[-1] < 1e-10 and res.step_norms[0] > res.step_norms[-1]


def test_pnp_admm_converges_to_the_regularised_solution():
    """z <- prox_R(x + u) is the prox of h = rho R: fixed point minimises scale||y - x||^2 + rho c/2 ||x||^2."""
    c, rho, scale = 1.0, 0.5, 0.5
    y = torch.randn(2, 1, 4, 4, dtype=torch.float64)
    op = inpainting_operator((1, 4, 4), 0.0)  # A = I through the inpainting code path
    res = pnp_admm(y, op.A, op.At, lambda v: v / (1 + c), rho=rho, scale=scale, num_iter=300, cg_tol=1e-12)
    torch.testing.assert_close(res.x, 2 * scale * y / (2 * scale + rho * c), atol=1e-6, rtol=0)


def test_pnp_bad_input():
    op = denoising_operator()
    with pytest.raises(ValueError, match="NaN"):
        pnp_pgd(torch.full((1, 3), float("nan")), op.A, op.At, lambda v: v)
    with pytest.raises(ValueError, match="rho"):
        pnp_admm(torch.zeros(1, 3), op.A, op.At, lambda v: v, rho=0.0)
    with pytest.raises(ValueError, match="missing"):
        inpainting_operator((3,), missing=1.5)


def test_haar_soft_threshold_is_the_wavelet_l1_prox():
    from iclr24.lpn.experiments import _haar
    from iclr24.lpn.experiments import _ihaar
    from iclr24.lpn.experiments import haar_soft_threshold

    torch.manual_seed(0)
    x = torch.rand(5, 8, 8, dtype=torch.float64)
    c = _haar(x)
    assert torch.allclose(_ihaar(c), x) and torch.allclose(c.pow(2).sum(), x.pow(2).sum())  # orthonormal
    flat = x.reshape(5, 64)
    assert torch.allclose(haar_soft_threshold(0.0)(flat), flat)
    flat_out = haar_soft_threshold(100.0)(flat)  # every detail removed: the image mean is left
    assert torch.allclose(flat_out, flat.mean(1, keepdim=True).expand_as(flat))
    # prox property: the output minimises 1/2 ||u - x||^2 + tau ||W u||_1 (detail part) against perturbations
    tau = 0.1
    u = haar_soft_threshold(tau)(flat)

    def obj(v):
        d = _haar(v.reshape(5, 8, 8))
        d[:, 0, 0] = 0
        return 0.5 * (v - flat).pow(2).sum(1) + tau * d.abs().flatten(1).sum(1)

    for _ in range(5):
        assert (obj(u) <= obj(u + 1e-3 * torch.randn_like(u)) + 1e-12).all()
