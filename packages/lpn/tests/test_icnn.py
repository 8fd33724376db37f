import pytest
import torch

from iclr24.lpn import MLPLPN
from iclr24.lpn import ConvLPN28
from iclr24.lpn import PatchLPN128
from iclr24.lpn import TrainConfig
from iclr24.lpn import build_model
from iclr24.lpn import denoise_patchwise
from iclr24.lpn import train


def _jacobian(model, y):
    return torch.autograd.functional.jacobian(lambda v: model(v.unsqueeze(0))[0], y)


@pytest.mark.parametrize("kind", ["mlp", "patch"])
def test_jacobian_is_symmetric_psd(kind, mlp64, tiny_patch_model):
    """Acceptance 1: J_f = Hessian of psi is symmetric and PSD with lambda_min >= 2 alpha."""
    model = mlp64(in_dim=16) if kind == "mlp" else tiny_patch_model
    gen = torch.Generator().manual_seed(1)
    for _ in range(3):
        y = torch.randn((1, *model.input_shape), generator=gen, dtype=torch.float64)[0]
        j = _jacobian(model, y).reshape(y.numel(), y.numel())
        assert torch.linalg.norm(j - j.T) <= 1e-5 * torch.linalg.norm(j)
        lam_min = torch.linalg.eigvalsh(0.5 * (j + j.T)).min()
        assert lam_min >= 2 * model.alpha - 1e-6
        assert torch.linalg.norm(j - 2 * model.alpha * torch.eye(len(j), dtype=j.dtype)) > 1e-3  # not trivial


def test_negative_weights_break_convexity_detection(mlp64):
    model = mlp64(in_dim=4)
    assert model.weights_nonnegative()
    with torch.no_grad():
        model.lin[1].weight[0, 0] = -1.0
    assert not model.weights_nonnegative()
    model.clamp_weights()
    assert model.weights_nonnegative() and model.lin[1].weight[0, 0] == 0


@pytest.mark.parametrize(
    "arch,kw,shape",
    [
        ("mlp", {"in_dim": 5, "hidden": 8, "layers": 2}, (5,)),
        ("conv28", {"hidden": 4}, (1, 28, 28)),
        ("patch128", {"in_channels": 1, "hidden": 4, "image_size": 16}, (1, 16, 16)),
    ],
)
def test_forward_equals_finite_difference_gradient(arch, kw, shape):
    """Acceptance 3: f = grad psi by central differences in float64 (relative error < 1e-5)."""
    torch.manual_seed(0)
    model = build_model(arch, **kw).double().eval()
    model.init_weights(-1.0, 0.5)
    y = torch.randn((1, *shape), dtype=torch.float64)
    f = model(y).flatten()
    h = 1e-6
    idx = torch.randperm(y.numel())[:12]
    fd = []
    for i in idx:
        e = torch.zeros(y.numel(), dtype=torch.float64)
        e[i] = h
        e = e.view_as(y)
        fd.append((model.potential(y + e) - model.potential(y - e)).item() / (2 * h))
    fd = torch.tensor(fd, dtype=torch.float64)
    assert torch.linalg.norm(fd - f[idx]) <= 1e-5 * torch.linalg.norm(f[idx])


def test_constraints_after_every_step_and_monotone():
    """Acceptance 2: W >= 0 after every optimiser step; <f(a) - f(b), a - b> >= 0 on 1000 random pairs."""
    torch.manual_seed(0)
    model = MLPLPN(in_dim=4, hidden=16, layers=2, beta=10.0, alpha=0.01)
    data = torch.rand(64, 4)
    seen = []

    def check(step, m, loss):
        seen.append(step)
        assert m.weights_nonnegative(), f"negative W-weight after step {step}"

    train(
        model,
        data,
        TrainConfig(num_steps=30, num_steps_pretrain=10, batch_size=16, pretrain_lr=5e-2, lr=5e-2),
        show_progress=False,
        on_step=check,
    )
    assert seen == list(range(30))
    # without the clamp, the same training does push W-weights negative (so the check above can fail)
    torch.manual_seed(0)
    unclamped = MLPLPN(in_dim=4, hidden=16, layers=2, beta=10.0, alpha=0.01)
    unclamped.clamp_weights = lambda: None
    negative = []
    train(
        unclamped,
        data,
        TrainConfig(num_steps=5, num_steps_pretrain=2, batch_size=16, pretrain_lr=5e-2, lr=5e-2),
        show_progress=False,
        on_step=lambda s, m, loss: negative.append(not m.weights_nonnegative()),
    )
    assert any(negative)
    a, b = torch.randn(1000, 4), torch.randn(1000, 4)
    inner = ((model(a) - model(b)) * (a - b)).sum(1)
    assert (inner >= -1e-6).all()


def test_forward_leaves_input_alone_and_keeps_no_graph_in_eval():
    model = MLPLPN(in_dim=3).eval()
    y = torch.randn(5, 3)
    out = model(y)
    assert not y.requires_grad and y.grad is None
    assert not out.requires_grad
    model.train()
    assert model(y).requires_grad  # training keeps create_graph for double backprop


def test_architectures_shapes_and_config_roundtrip():
    m = ConvLPN28(hidden=4)
    assert m(torch.rand(2, 1, 28, 28)).shape == (2, 1, 28, 28)
    p = PatchLPN128(in_channels=3, hidden=4, image_size=16)
    assert p(torch.rand(2, 3, 16, 16)).shape == (2, 3, 16, 16)
    cfg = p.config()
    assert cfg["arch"] == "patch128"
    q = build_model(cfg.pop("arch"), **cfg)
    assert q.config() == p.config()


def test_bad_inputs_raise_value_error():
    with pytest.raises(ValueError, match="expects input of shape"):
        ConvLPN28(hidden=4)(torch.rand(2, 1, 32, 32))
    with pytest.raises(ValueError, match="unknown architecture"):
        build_model("resnet")
    with pytest.raises(ValueError, match="hidden"):
        MLPLPN(hidden=0)
    with pytest.raises(ValueError, match="multiple of 8"):
        PatchLPN128(image_size=20)


def test_patchwise_matches_direct_on_one_patch_and_covers_image():
    torch.manual_seed(0)
    p = PatchLPN128(in_channels=1, hidden=4, image_size=16).eval()
    x = torch.rand(1, 16, 16)
    torch.testing.assert_close(denoise_patchwise(p, x, patch=16, stride=8), p(x.unsqueeze(0))[0])
    big = torch.rand(1, 40, 24)
    out = denoise_patchwise(p, big, patch=16, stride=8)
    assert out.shape == big.shape and torch.isfinite(out).all()
    with pytest.raises(ValueError, match="smaller than the patch"):
        denoise_patchwise(p, torch.rand(1, 8, 8), patch=16)


def test_mlp_analytic_gradient_equals_autograd_and_trains_the_same():
    torch.manual_seed(0)
    m = MLPLPN(in_dim=6, hidden=16, layers=3, alpha=0.05).double()
    m.init_weights(-1.0, 0.5)
    y = torch.randn(9, 6, dtype=torch.float64)
    fast = m(y)
    m.analytic_gradient = False
    torch.testing.assert_close(fast, m(y), atol=1e-10, rtol=1e-10)
    # second derivatives (training / Jacobians) agree too
    jac = [torch.autograd.functional.jacobian(lambda v: m(v.unsqueeze(0))[0], y[0]) for _ in range(1)]
    m.analytic_gradient = True
    torch.testing.assert_close(
        torch.autograd.functional.jacobian(lambda v: m(v.unsqueeze(0))[0], y[0]), jac[0]
    )
