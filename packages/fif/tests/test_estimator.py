"""The surrogate and the exact likelihood against brute-force Jacobians (torch.autograd.functional.jacobian)."""

import math

import pytest
import torch
from torch import nn

from iclr24.fif.estimator import exact_log_prob
from iclr24.fif.estimator import log_det_gram
from iclr24.fif.estimator import sample_v
from iclr24.fif.estimator import standard_normal_log_prob
from iclr24.fif.estimator import volume_change_surrogate
from iclr24.fif.estimator import z_marginal_w1

D, d = 5, 2


def _mlp(i, o, seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(i, 16), nn.SiLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, o)).double()


@pytest.fixture
def pair():
    return _mlp(D, d, 0), _mlp(d, D, 1)


def _jac(fn, x):
    """Per-sample Jacobians by brute force: (B, out, in)."""
    return torch.stack([torch.autograd.functional.jacobian(lambda r: fn(r[None])[0], row) for row in x])


def test_sample_v_properties():
    z = torch.zeros(7, 4, dtype=torch.float64)
    v = sample_v(z, 3, torch.Generator().manual_seed(0))
    assert v.shape == (7, 4, 3)
    gram = v.transpose(1, 2) @ v
    assert torch.allclose(gram, 4 * torch.eye(3, dtype=torch.float64).expand(7, 3, 3), atol=1e-10)
    v1 = sample_v(z, 1, torch.Generator().manual_seed(1))
    assert torch.allclose((v1**2).sum(1), torch.full((7, 1), 4.0, dtype=torch.float64))
    with pytest.raises(ValueError, match="<= the latent dimension"):
        sample_v(z, 5)
    with pytest.raises(ValueError, match="int >= 1"):
        sample_v(z, 0)


def test_sample_v_is_isotropic():
    z = torch.zeros(40000, 3, dtype=torch.float64)
    v = sample_v(z, 1, torch.Generator().manual_seed(2))[..., 0]
    cov = v.T @ v / v.shape[0]
    assert torch.allclose(cov, torch.eye(3, dtype=torch.float64), atol=0.05)


def test_surrogate_with_k_equal_d_is_the_exact_trace(pair):
    enc, dec = pair
    x = torch.randn(6, D, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    out = volume_change_surrogate(x, enc, dec, hutchinson_samples=d)
    z = enc(x).detach()
    jf, jg = _jac(enc, x), _jac(dec, z)
    trace = torch.einsum("bij,bji->b", jf, jg)
    assert torch.allclose(out.surrogate, trace, atol=1e-5)
    assert torch.allclose(out.x1, dec(z), atol=1e-12)


def test_single_probe_is_unbiased_for_the_trace(pair):
    enc, dec = pair
    x = torch.randn(1, D, dtype=torch.float64, generator=torch.Generator().manual_seed(4)).expand(20000, D)
    out = volume_change_surrogate(x, enc, dec, 1, generator=torch.Generator().manual_seed(5))
    jf, jg = _jac(enc, x[:1]), _jac(dec, enc(x[:1]).detach())
    trace = float(torch.einsum("bij,bji->b", jf, jg))
    s = out.surrogate.detach()
    se = float(s.std()) / math.sqrt(s.numel())
    assert abs(float(s.mean()) - trace) < 3 * se
    assert se > 0  # a K=1 estimate is noisy; the K=d one is not


def _tangent_pseudo_inverse(enc, x0, reps=1):
    """A decoder that is affine with Jacobian J_f(x0)^+ at every batch row: J_g = J_f^+ exactly."""
    pinv = torch.linalg.pinv(_jac(enc, x0).detach()).repeat(reps, 1, 1)  # (B, D, d)
    x0 = x0.repeat(reps, 1)
    z0 = enc(x0).detach()

    def decode(z):
        return x0.detach() + torch.einsum("bij,bj->bi", pinv, z - z0)

    return decode


def test_encoder_gradient_is_the_log_det_gradient_for_a_nonlinear_encoder(pair):
    """Sec. 4.1: with J_g = J_f^+, grad_theta S = grad_theta 1/2 log det(J_f J_f^T) (K = d exact; K = 1 unbiased)."""
    enc, _ = pair
    x0 = torch.randn(3, D, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    decode = _tangent_pseudo_inverse(enc, x0)
    params = list(enc.parameters())

    def exact_logdet():
        jf = torch.stack(
            [
                torch.autograd.functional.jacobian(lambda r: enc(r[None])[0], row, create_graph=True)
                for row in x0
            ]
        )
        return log_det_gram(jf).sum()

    def grad(y):
        gs = torch.autograd.grad(y, params, allow_unused=True)
        return [torch.zeros_like(p) if g is None else g for p, g in zip(params, gs, strict=True)]

    g_exact = grad(exact_logdet())
    s = volume_change_surrogate(x0, enc, decode, hutchinson_samples=d).surrogate.sum()
    g_sur = grad(s)
    for a, b in zip(g_exact, g_sur, strict=True):
        assert torch.allclose(a, b, atol=1e-8)
    # K = 1: the mean of many single-probe gradients converges to the same gradient
    reps = 400
    xr = x0.repeat(reps, 1)
    decode_r = _tangent_pseudo_inverse(enc, x0, reps)
    s1 = volume_change_surrogate(xr, enc, decode_r, 1, generator=torch.Generator().manual_seed(7)).surrogate
    g1 = grad(s1.sum() / reps)
    num = sum(float(((a - b) ** 2).sum()) for a, b in zip(g1, g_exact, strict=True))
    den = sum(float((a**2).sum()) for a in g_exact)
    assert num / den < 0.05


def test_linear_gradient_identity():
    """Spec check: f(x) = A x, g(z) = A^+ z; grad_A(-S) = grad_A(-1/2 log det A A^T) = -(A^+)^T."""
    a = torch.randn(d, D, dtype=torch.float64, generator=torch.Generator().manual_seed(8)).requires_grad_(
        True
    )
    b = torch.linalg.pinv(a.detach())
    x = torch.randn(4, D, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    s = volume_change_surrogate(x, lambda t: t @ a.T, lambda z: z @ b.T, hutchinson_samples=d).surrogate
    (g,) = torch.autograd.grad(-s.mean(), a)
    assert torch.allclose(g, -b.T, atol=1e-6)
    (g2,) = torch.autograd.grad(-0.5 * torch.logdet(a @ a.T), a)
    assert torch.allclose(g, g2, atol=1e-6)


def test_encoder_and_decoder_side_agree_for_linear_orthogonal_decoder():
    """Along a path B(t) = B0 + t Delta with A(t) = B(t)^+ and B0 orthonormal, the encoder-side and decoder-side
    surrogates have the same t-derivative, equal to that of 1/2 log det(A A^T) = -1/2 log det(B^T B)."""
    gen = torch.Generator().manual_seed(10)
    b0 = torch.linalg.qr(torch.randn(D, d, dtype=torch.float64, generator=gen)).Q
    delta = torch.randn(D, d, dtype=torch.float64, generator=gen)
    x = torch.randn(3, D, dtype=torch.float64, generator=gen)
    t = torch.zeros((), dtype=torch.float64, requires_grad=True)
    bt = b0 + t * delta
    at = torch.linalg.pinv(bt)
    enc_side = volume_change_surrogate(x, lambda u: u @ at.T, lambda z: z @ bt.T, d, "encoder").surrogate
    dec_side = volume_change_surrogate(x, lambda u: u @ at.T, lambda z: z @ bt.T, d, "decoder").surrogate
    (de,) = torch.autograd.grad(enc_side.mean(), t, retain_graph=True)
    (dd,) = torch.autograd.grad(dec_side.mean(), t, retain_graph=True)
    (dx,) = torch.autograd.grad(-0.5 * torch.logdet(bt.T @ bt), t)
    assert abs(float(de) - float(dx)) < 1e-8
    assert abs(float(dd) - float(dx)) < 1e-8
    assert abs(float(de)) > 1e-3  # the path really changes the volume


def test_gradient_routing(pair):
    """Default (encoder side): no log-det gradient reaches the decoder; the decoder side sends it there."""
    enc, dec = pair
    x = torch.randn(8, D, dtype=torch.float64, generator=torch.Generator().manual_seed(11))
    s = volume_change_surrogate(x, enc, dec, 1, "encoder").surrogate.sum()
    ge = torch.autograd.grad(
        s, list(enc.parameters()) + list(dec.parameters()), allow_unused=True, retain_graph=True
    )
    n_enc = len(list(enc.parameters()))
    assert all(g is None or float(g.abs().max()) == 0 for g in ge[n_enc:])
    assert max(float(g.abs().max()) for g in ge[:n_enc] if g is not None) > 0
    s2 = volume_change_surrogate(x, enc, dec, 1, "decoder").surrogate.sum()
    gd = torch.autograd.grad(s2, list(dec.parameters()), allow_unused=True)
    assert max(float(g.abs().max()) for g in gd if g is not None) > 0
    with pytest.raises(ValueError, match="gradient_side"):
        volume_change_surrogate(x, enc, dec, 1, "both")


@pytest.mark.parametrize("side", ["encoder", "decoder"])
def test_double_vjp_and_forward_mode_jvp_give_the_same_surrogate(pair, side):
    """The default J_g v (VJP of the VJP) equals the official forward-mode dual pass: value and parameter gradients."""
    enc, dec = pair
    x = torch.randn(6, D, dtype=torch.float64, generator=torch.Generator().manual_seed(12))
    v = sample_v(torch.zeros(6, d, dtype=torch.float64), 1, torch.Generator().manual_seed(13))
    params = list(enc.parameters()) + list(dec.parameters())
    outs = []
    for jvp in ("double_vjp", "forward"):
        out = volume_change_surrogate(x, enc, dec, 1, side, v=v, jvp=jvp)
        loss = out.surrogate.sum() + (out.x1**2).sum()
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        outs.append((out.surrogate.detach(), out.x1.detach(), grads))
    (s1, x1a, g1), (s2, x1b, g2) = outs
    assert torch.allclose(s1, s2, atol=1e-12) and torch.allclose(x1a, x1b, atol=1e-12)
    for a, b in zip(g1, g2, strict=True):
        assert (a is None and b is None) or torch.allclose(a, b, atol=1e-10)
    with pytest.raises(ValueError, match="jvp must be one of"):
        volume_change_surrogate(x, enc, dec, 1, side, jvp="reverse")


def test_exact_log_prob_matches_brute_force(pair):
    enc, dec = pair
    x = torch.randn(5, D, dtype=torch.float64, generator=torch.Generator().manual_seed(12))
    out = exact_log_prob(x, enc, dec, "both")
    z = enc(x).detach()
    jg = _jac(dec, z)
    want = -0.5 * (z**2).sum(1) - math.log(2 * math.pi) - 0.5 * torch.logdet(jg.transpose(1, 2) @ jg)
    assert torch.allclose(out["log_prob"], want, atol=1e-5)
    jf = _jac(enc, x)
    want_enc = standard_normal_log_prob(z) + 0.5 * torch.logdet(jf @ jf.transpose(1, 2))
    assert torch.allclose(out["log_prob_encoder"], want_enc, atol=1e-5)


def test_exact_log_prob_sides_agree_for_an_exact_left_inverse():
    gen = torch.Generator().manual_seed(13)
    b = torch.randn(D, d, dtype=torch.float64, generator=gen)
    a = torch.linalg.pinv(b)
    x = torch.randn(4, D, dtype=torch.float64, generator=gen)
    out = exact_log_prob(x, lambda u: u @ a.T, lambda z: z @ b.T, "both")
    assert torch.allclose(out["log_prob_encoder"], out["log_prob_decoder"], atol=1e-10)
    with pytest.raises(ValueError, match="jacobian_target"):
        exact_log_prob(x, lambda u: u @ a.T, lambda z: z @ b.T, "middle")


def test_z_marginal_w1():
    z = torch.randn(20000, 2, generator=torch.Generator().manual_seed(14))
    assert z_marginal_w1(z) < 0.03
    assert z_marginal_w1(3 * z) > 1.0


def test_naive_objective_evaluates_j_f_at_the_fixed_reconstruction(pair):
    """Eq. (E5n): jacobian_at="reconstruction" is the surrogate with J_f taken at x^ = g(f(x)) (brute force), J_g at
    z = f(x) as before; no gradient flows through the evaluation point, so the decoder still gets none."""
    enc, dec = pair
    x = torch.randn(5, D, dtype=torch.float64, generator=torch.Generator().manual_seed(20))
    v = sample_v(torch.zeros(5, d, dtype=torch.float64), d, torch.Generator().manual_seed(21))
    out = volume_change_surrogate(x, enc, dec, d, v=v, jacobian_at="reconstruction")
    z = enc(x).detach()
    x_hat = dec(z).detach()
    jf_hat, jg = _jac(enc, x_hat), _jac(dec, z)
    assert torch.allclose(out.surrogate, torch.einsum("bij,bji->b", jf_hat, jg), atol=1e-8)
    stable = volume_change_surrogate(x, enc, dec, d, v=v)
    assert (
        float((stable.surrogate - out.surrogate).detach().abs().max()) > 1e-3
    )  # off the manifold they differ
    grads = torch.autograd.grad(out.surrogate.sum(), list(dec.parameters()), allow_unused=True)
    assert all(g is None or float(g.abs().max()) == 0 for g in grads)
    with pytest.raises(ValueError, match="jacobian_at"):
        volume_change_surrogate(x, enc, dec, 1, jacobian_at="midpoint")


def test_naive_and_stable_objectives_agree_on_the_manifold():
    """For points on the learned manifold of an exact linear pair (x = g(z), f(g(z)) = z), x^ = x: same value."""
    gen = torch.Generator().manual_seed(22)
    b = torch.linalg.qr(torch.randn(D, d, dtype=torch.float64, generator=gen)).Q
    a = b.T
    x = torch.randn(4, d, dtype=torch.float64, generator=gen) @ b.T
    v = sample_v(torch.zeros(4, d, dtype=torch.float64), 1, torch.Generator().manual_seed(23))
    kw = dict(encode=lambda u: u @ a.T, decode=lambda z: z @ b.T, v=v)
    s1 = volume_change_surrogate(x, **kw).surrogate
    s2 = volume_change_surrogate(x, **kw, jacobian_at="reconstruction").surrogate
    assert torch.allclose(s1, s2, atol=1e-12)


def test_decoder_geometry_of_a_circle_and_a_line():
    from iclr24.fif.estimator import decoder_geometry

    r = 2.5
    z = torch.linspace(-2, 2, 7, dtype=torch.float64)[:, None]
    circle = decoder_geometry(lambda t: torch.cat([r * torch.cos(t), r * torch.sin(t)], 1), z)
    assert torch.allclose(circle["jacobian_norm"], torch.full((7,), r, dtype=torch.float64))
    assert torch.allclose(circle["curvature"], torch.full((7,), 1 / r, dtype=torch.float64))
    line = decoder_geometry(lambda t: torch.cat([3 * t, -t], 1), z)
    assert torch.allclose(line["curvature"], torch.zeros(7, dtype=torch.float64))
    assert torch.allclose(line["jacobian_norm"], torch.full((7,), math.sqrt(10), dtype=torch.float64))
    plane = decoder_geometry(
        lambda t: t @ torch.tensor([[2.0, 0, 0], [0, 1.0, 0]], dtype=torch.float64), z.repeat(1, 2)
    )
    assert "curvature" not in plane and torch.allclose(
        plane["jacobian_norm"], torch.full((7,), 2.0, dtype=torch.float64)
    )
    with pytest.raises(ValueError, match="NaN"):
        decoder_geometry(lambda t: t, torch.tensor([[float("nan")]]))


def test_exact_log_prob_refuses_non_finite_rows(pair):
    enc, dec = pair
    x = torch.randn(4, D, dtype=torch.float64)
    x[2, 1] = float("nan")
    with pytest.raises(ValueError, match=r"NaN or inf in 1 of 4 rows \(first: \[2\]\)"):
        exact_log_prob(x, enc, dec)
