import pytest
import torch

from iclr24.opposing_signals.tracking import mean_loss
from iclr24.opposing_signals.train import gd_step
from iclr24.opposing_signals.train import make_mlp
from iclr24.opposing_signals.train import train


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_gd_step_is_torch_optim_sgd_bit_for_bit(momentum):
    # the written-out update must give torch.optim.SGD's trajectory exactly (GD at the edge of stability is chaotic:
    # a last-bit difference would become a different run)
    g = torch.Generator().manual_seed(0)
    ours = [torch.randn(7, 5, generator=g), torch.randn(5, generator=g), torch.randn(3, generator=g)]
    ref = [p.clone().requires_grad_(True) for p in ours]
    ours = [p.clone().requires_grad_(True) for p in ours]
    opt = torch.optim.SGD(ref, lr=0.37, momentum=momentum)
    bufs = [None] * len(ours)
    for _ in range(6):
        grads = [torch.randn(p.shape, generator=g) for p in ours]
        for p, q, gr in zip(ours, ref, grads):
            p.grad, q.grad = gr.clone(), gr.clone()
        ours[2].grad = ref[2].grad = None  # a parameter without a gradient is left alone
        gd_step(ours, bufs, 0.37, momentum)
        opt.step()
        for p, q in zip(ours, ref):
            assert torch.equal(p, q)


def test_train_gd_matches_a_torch_optim_sgd_loop_exactly():
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(40, 6, generator=g), torch.randint(0, 3, (40,), generator=g)
    model = make_mlp(6, 16, 2, 3, seed=3)
    hist = train(model, x, y, optimizer="gd", lr=0.5, steps=25, sharpness_every=0)
    ref = make_mlp(6, 16, 2, 3, seed=3)
    opt = torch.optim.SGD(ref.parameters(), lr=0.5)
    loss_fn = mean_loss("mse")
    losses = []
    for _ in range(25):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ref(x), y)
        losses.append(float(loss.detach()))
        loss.backward()
        opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert torch.equal(p, q)
    assert hist.loss[:25] == pytest.approx(losses, rel=1e-6)
