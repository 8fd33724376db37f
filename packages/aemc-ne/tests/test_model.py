import pytest
import torch

from iclr24.aemc_ne.model import AutoencoderMC
from iclr24.aemc_ne.model import ElementwiseNetwork
from iclr24.aemc_ne.model import MainAutoencoder
from iclr24.aemc_ne.model import masked_loss
from iclr24.aemc_ne.model import zero_fill


def _net(m=7, shared=True, seed=0, skip=0.8):
    torch.manual_seed(seed)
    return AutoencoderMC(
        MainAutoencoder(m, (5, 3, 5), "tanh"),
        ElementwiseNetwork((4, 4), "tanh", skip, shared, None if shared else m),
    )


def test_masked_loss_is_mean_over_observed_entries_brute_force():
    gen = torch.Generator().manual_seed(0)
    x, xh = torch.randn(4, 6, generator=gen), torch.randn(4, 6, generator=gen)
    m = torch.rand(4, 6, generator=gen) < 0.5
    brute = sum((x[i, j] - xh[i, j]) ** 2 for i in range(4) for j in range(6) if m[i, j]) / int(m.sum())
    assert float(masked_loss(x, xh, m)) == pytest.approx(float(brute), rel=1e-6)
    # NaN in an unobserved target is ignored
    x2 = x.clone()
    x2[~m] = float("nan")
    assert float(masked_loss(x2, xh, m)) == pytest.approx(float(brute), rel=1e-6)


def test_unobserved_entries_change_neither_loss_nor_gradients():
    """Spec check 1 + 2: perturbing X at M = 0 (input and target) leaves loss and every gradient unchanged."""
    net = _net()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(9, 7, generator=gen)
    m = torch.rand(9, 7, generator=gen) < 0.4
    x_pert = torch.where(m, x, 100 * torch.randn(9, 7, generator=gen))
    grads, losses = [], []
    for xx in (x, x_pert):
        net.zero_grad()
        loss = masked_loss(xx, net(zero_fill(xx, m)), m)
        loss.backward()
        losses.append(float(loss.detach()))
        grads.append([p.grad.clone() for p in net.parameters()])
    assert losses[0] == losses[1]
    for g0, g1 in zip(*grads):
        assert torch.equal(g0, g1)
    # and the loss does move when an observed entry moves (the test can fail)
    x_obs = x.clone()
    x_obs[m] += 1.0
    assert float(masked_loss(x_obs, net(zero_fill(x_obs, m)), m).detach()) != losses[0]


def test_propensity_weights_ones_and_doubling():
    """Spec check 7: weights 1/p with p = 1 reproduce the unweighted loss; doubling one p_ij halves its term."""
    gen = torch.Generator().manual_seed(2)
    x, xh = (torch.randn(3, 5, generator=gen, dtype=torch.float64) for _ in range(2))
    m = torch.ones(3, 5, dtype=torch.bool)
    p = torch.full((3, 5), 0.5, dtype=torch.float64)
    assert float(masked_loss(x, xh, m, torch.ones(3, 5, dtype=torch.float64))) == pytest.approx(
        float(masked_loss(x, xh, m))
    )
    base = masked_loss(x, xh, m, 1 / p)
    p2 = p.clone()
    p2[1, 2] = 1.0
    term = (x[1, 2] - xh[1, 2]) ** 2 / 0.5 / 15
    assert float(base - masked_loss(x, xh, m, 1 / p2)) == pytest.approx(float(term) / 2, rel=1e-9)


def test_shared_g_is_elementwise_permutation_equivariant():
    """Spec check 3: permuting the output coordinates of h permutes X_hat identically."""
    g = ElementwiseNetwork((6, 6), "tanh", 0.8, shared=True)
    y = torch.randn(5, 11)
    perm = torch.randperm(11)
    assert torch.allclose(g(y[:, perm]), g(y)[:, perm], atol=1e-6)
    # entrywise: the same value gives the same output wherever it sits
    y[2, 3] = y[0, 7]
    out = g(y)
    assert out[2, 3] == out[0, 7]


def test_per_output_g_matches_independent_mlps_and_gradients_stay_per_row():
    m = 4
    g = ElementwiseNetwork((3, 2), "tanh", 0.8, shared=False, n_outputs=m)
    y = torch.randn(6, m)
    out = g(y)
    for i in range(m):  # brute force: row i's own MLP
        z = y[:, i : i + 1]
        for k, (w, b) in enumerate(zip(g.weights, g.biases)):
            z = z @ w[i] + b[i]
            if k < len(g.weights) - 1:
                z = torch.tanh(z)
        assert torch.allclose(out[:, i], z[:, 0] + 0.8 * y[:, i], atol=1e-6)
    out[:, 1].sum().backward()
    for w in g.weights:
        assert w.grad[1].abs().sum() > 0
        assert torch.all(w.grad[[0, 2, 3]] == 0)
    # permuting the outputs does NOT commute with per-output g (rows are distinct functions)
    perm = torch.tensor([1, 0, 3, 2])
    assert not torch.allclose(g(y[:, perm]), g(y)[:, perm])


def test_identity_g_reduces_to_aemc_exactly():
    """Spec check 4: skip = 1 and the last layer of E zeroed give g = identity, so AEMC-NE = AEMC."""
    ne = _net(skip=1.0)
    with torch.no_grad():
        ne.element.layers[-1].weight.zero_()
        ne.element.layers[-1].bias.zero_()
    ae = AutoencoderMC(ne.main, None)
    x = torch.randn(8, 7)
    assert torch.equal(ne(x), ae(x))
    r, c = torch.tensor([0, 3, 7]), torch.tensor([1, 6, 2])
    assert torch.equal(ne.predict_entries(x, r, c), ae(x)[r, c])


def test_predict_entries_equals_dense_gather_both_modes():
    for shared in (True, False):
        net = _net(shared=shared)
        x = torch.randn(5, 7)
        r, c = torch.tensor([0, 4, 4, 2]), torch.tensor([6, 0, 3, 3])
        assert torch.allclose(net.predict_entries(x, r, c), net(x)[r, c], atol=1e-6)


@pytest.mark.parametrize(
    "make",
    [
        lambda: MainAutoencoder(0, (3,)),
        lambda: MainAutoencoder(5, ()),
        lambda: MainAutoencoder(5, (3,), "swish"),
        lambda: ElementwiseNetwork((4,), skip=float("nan")),
        lambda: ElementwiseNetwork((4,), shared=False),
        lambda: masked_loss(torch.zeros(2), torch.zeros(2), torch.zeros(2, dtype=torch.bool)),
    ],
)
def test_bad_architecture_arguments(make):
    with pytest.raises(ValueError):
        make()
