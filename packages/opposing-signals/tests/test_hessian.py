import pytest
import torch
from torch import nn

from iclr24.opposing_signals.hessian import lanczos
from iclr24.opposing_signals.hessian import make_hvp
from iclr24.opposing_signals.hessian import power_iteration
from iclr24.opposing_signals.hessian import sharpness
from iclr24.opposing_signals.hessian import stability_threshold
from iclr24.opposing_signals.hessian import top_eigenvalue
from iclr24.opposing_signals.tracking import mean_loss


def _quadratic(eigs, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(len(eigs), len(eigs), generator=g, dtype=torch.float64))
    return q @ torch.diag(torch.tensor(eigs, dtype=torch.float64)) @ q.T


@pytest.mark.parametrize("method", ["power", "lanczos"])
def test_quadratic_top_eigenvalue(method):
    # f(w) = 1/2 w^T A w has Hessian A: power iteration / Lanczos return lambda_max(A) within 1e-4
    a = _quadratic([5.0, 1.0, 0.5, -0.3, 0.1])
    lam = top_eigenvalue(lambda v: a @ v, 5, iters=20, method=method, dtype=torch.float64)
    assert lam == pytest.approx(5.0, abs=1e-4)


def test_lanczos_finds_largest_algebraic_where_power_finds_largest_magnitude():
    a = _quadratic([2.0, -6.0, 0.5, 0.1])
    assert power_iteration(lambda v: a @ v, 4, iters=60, dtype=torch.float64)[0] == pytest.approx(
        -6.0, abs=1e-4
    )
    assert lanczos(lambda v: a @ v, 4, iters=4, dtype=torch.float64)[0] == pytest.approx(2.0, abs=1e-8)


class _Linear(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(2, dtype=torch.float64))

    def forward(self, x):
        return (x @ self.w)[:, None]


def test_least_squares_sharpness_and_stability():
    # L(w) = (1/2n)||Xw - y||^2, X = [[3, 0], [0, 1]], n = 2: sharpness = lambda_max(X^T X / n) = 4.5
    x = torch.tensor([[3.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    y = torch.tensor([1.0, 1.0], dtype=torch.float64)
    model = _Linear()

    def loss_fn(out, t):
        return 0.5 * (out[:, 0] - t).pow(2).mean()

    for method in ("power", "lanczos"):
        assert sharpness(model, loss_fn, (x, y), method=method) == pytest.approx(4.5, abs=1e-6)
    w_star = torch.linalg.solve(x, y)
    for lr, grows in ((0.40, False), (0.50, True)):
        w = torch.zeros(2, dtype=torch.float64)
        errs = []
        for _ in range(60):
            w = w - lr * x.T @ (x @ w - y) / 2
            errs.append(abs(float(w[0] - w_star[0])))
        if grows:
            # diverges along e_1: |w_1 - w_1*| grows by |1 - 0.5 * 4.5| = 1.25 per step
            assert errs[-1] / errs[-2] == pytest.approx(1.25, rel=1e-9)
        else:
            assert errs[-1] < 1e-6
    assert 2 / 4.5 == pytest.approx(0.4444, abs=1e-4)


def test_hvp_matches_explicit_hessian_of_tiny_network():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    x = torch.randn(7, 3, dtype=torch.float64)
    y = torch.randint(0, 2, (7,))
    loss_fn = mean_loss("mse")
    params = list(model.parameters())
    shapes = [p.shape for p in params]
    sizes = [p.numel() for p in params]
    flat0 = torch.cat([p.detach().reshape(-1) for p in params])

    def loss_of_flat(flat):
        chunks = torch.split(flat, sizes)
        ps = {n: c.view(s) for (n, _), c, s in zip(model.named_parameters(), chunks, shapes)}
        return loss_fn(torch.func.functional_call(model, ps, (x,)), y)

    h = torch.autograd.functional.hessian(loss_of_flat, flat0)
    v = torch.randn(flat0.numel(), dtype=torch.float64)
    for method in ("func", "double_backward"):
        hvp, dim = make_hvp(model, loss_fn, (x, y), method=method)
        assert dim == flat0.numel()
        torch.testing.assert_close(hvp(v), h @ v, rtol=1e-10, atol=1e-10)
    top = float(torch.linalg.eigvalsh(h)[-1])
    assert sharpness(model, loss_fn, (x, y), method="lanczos", iters=40) == pytest.approx(top, rel=1e-6)


def test_scalar_two_layer_net_sharpness():
    # f(x) = v w x, x = y = 1: at (1, 1) sharpness 2, at (2, 0.5) (same product) 4.25
    class Scalar(nn.Module):
        def __init__(self, v, w):
            super().__init__()
            self.v = nn.Parameter(torch.tensor(v, dtype=torch.float64))
            self.w = nn.Parameter(torch.tensor(w, dtype=torch.float64))

        def forward(self, x):
            return (self.v * self.w * x)[:, None]

    def loss_fn(out, t):
        return 0.5 * (out[:, 0] - t).pow(2).mean()

    one = torch.ones(1, dtype=torch.float64)
    assert sharpness(Scalar(1.0, 1.0), loss_fn, (one, one), method="lanczos") == pytest.approx(2.0, abs=1e-9)
    assert sharpness(Scalar(2.0, 0.5), loss_fn, (one, one), method="lanczos") == pytest.approx(4.25, abs=1e-9)


def test_stability_threshold():
    assert stability_threshold(0.3) == pytest.approx(2 / 0.3)
    assert stability_threshold(0.1, momentum=0.9) == pytest.approx(38.0)


def test_bad_inputs():
    frozen = nn.Linear(2, 1).requires_grad_(False)
    x, y = torch.zeros(3, 2), torch.zeros(3, dtype=torch.long)
    with pytest.raises(ValueError, match="no parameters that require grad"):
        sharpness(frozen, mean_loss(), (x, y))
    with pytest.raises(ValueError, match="method must be one of"):
        sharpness(nn.Linear(2, 2), mean_loss(), (x, y), method="arnoldi")
    with pytest.raises(ValueError, match="same non-zero length"):
        sharpness(nn.Linear(2, 2), mean_loss(), (x, y[:2]))
    with pytest.raises(ValueError, match="lr must be a positive"):
        stability_threshold(0.0)
    with pytest.raises(ValueError, match="momentum must be in"):
        stability_threshold(0.1, momentum=1.0)
    with pytest.raises(ValueError, match="iters must be"):
        power_iteration(lambda v: v, 3, iters=0)


@pytest.mark.parametrize("method", ["func", "double_backward"])
@pytest.mark.parametrize("loss", ["mse", "ce"])
def test_physical_batch_hvp_equals_one_pass(method, loss):
    # Cohen et al.'s compute_hvp: H v = sum_c (n_c / N) H_c v over physical batches (the last one smaller)
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 4)).double()
    x = torch.randn(11, 3, dtype=torch.float64)
    y = torch.randint(0, 4, (11,))
    v = torch.randn(sum(p.numel() for p in model.parameters()), dtype=torch.float64)
    one, _ = make_hvp(model, mean_loss(loss), (x, y), method=method)
    ref = one(v)
    for pb in (1, 4, 11, 50):
        hvp, _ = make_hvp(model, mean_loss(loss), (x, y), method=method, physical_batch_size=pb)
        torch.testing.assert_close(hvp(v), ref, rtol=1e-12, atol=1e-12)
    s1 = sharpness(model, mean_loss(loss), (x, y), iters=10)
    s4 = sharpness(model, mean_loss(loss), (x, y), iters=10, physical_batch_size=4)
    assert s4 == pytest.approx(s1, rel=1e-10)
    with pytest.raises(ValueError, match="physical_batch_size must be"):
        make_hvp(model, mean_loss(loss), (x, y), physical_batch_size=0)


def test_lanczos_is_the_default_and_beats_power_iteration_at_equal_cost():
    # eigenvalues 10, 9.5, ...: power iteration converges like (9.5/10)^k and reads low after 20 products
    eigs = [10.0, 9.5, 9.0] + [1.0] * 30
    a = _quadratic(eigs)
    power = top_eigenvalue(lambda v: a @ v, len(eigs), iters=20, method="power", dtype=torch.float64)
    lz = top_eigenvalue(lambda v: a @ v, len(eigs), iters=20, dtype=torch.float64)
    assert lz == pytest.approx(10.0, abs=1e-6)
    assert power < 10.0 - 1e-3
