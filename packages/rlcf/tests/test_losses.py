"""The closed forms of RLCF's reward, baseline and policy gradient, and the view selection (acceptance checks)."""

import math

import pytest
import torch

from iclr24.rlcf.losses import average_entropy
from iclr24.rlcf.losses import distillation_loss
from iclr24.rlcf.losses import entropy
from iclr24.rlcf.losses import n_selected
from iclr24.rlcf.losses import policy_gradient_loss
from iclr24.rlcf.losses import sample_top_k
from iclr24.rlcf.losses import select_confident
from iclr24.rlcf.reward import clip_score
from iclr24.rlcf.reward import rewards_post_process


def _pair(cos: float):
    return torch.tensor([[1.0, 0.0]]), torch.tensor([[cos, math.sqrt(1 - cos * cos)]])


def test_clip_score_closed_form():
    assert clip_score(*_pair(0.3)).item() == pytest.approx(0.75, abs=1e-6)
    assert clip_score(*_pair(-0.1)).item() == 0.0
    # unnormalised features give the same score (cosine)
    a, t = _pair(0.3)
    assert clip_score(3 * a, 0.5 * t).item() == pytest.approx(0.75, abs=1e-6)
    with pytest.raises(ValueError, match="one shape"):
        clip_score(torch.ones(2, 3), torch.ones(3, 3))


def test_rewards_post_process_mean_and_amplify():
    r = torch.tensor([[0.2, 0.4, 0.9]])
    assert torch.allclose(rewards_post_process(r), torch.tensor([-0.3, -0.1, 0.4]), atol=1e-6)
    std = torch.tensor([0.2, 0.4, 0.9]).std().item()
    assert std == pytest.approx(0.3606, abs=1e-4)  # unbiased
    amp = rewards_post_process(r, amplify=True)
    assert torch.allclose(amp, torch.tensor([-0.3, -0.1, 0.4]) / (std + 1e-5), atol=1e-6)
    # per view: each row centred by its own mean; K = 1 is left alone (the official behaviour)
    two = rewards_post_process(torch.tensor([[1.0, 3.0], [0.0, 0.0]]))
    assert two.tolist() == [-1.0, 1.0, 0.0, 0.0]
    assert rewards_post_process(torch.tensor([[0.7]])).tolist() == pytest.approx([0.7])


@pytest.mark.parametrize("r, grad", [(1.0, [-0.5, 0.5]), (-1.0, [0.5, -0.5])])
def test_policy_gradient_closed_form(r, grad):
    logits = torch.zeros(1, 2, requires_grad=True)
    loss = policy_gradient_loss(logits, torch.tensor([0]), torch.tensor([r]))
    loss.backward()
    assert logits.grad[0].tolist() == pytest.approx(grad)


def test_policy_gradient_equals_reinforce_brute_force():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 7, generator=g, requires_grad=True)
    idx = sample_top_k(logits.detach(), 3)
    rew = torch.randn(12, generator=g)
    policy_gradient_loss(logits, idx, rew).backward()
    # brute force: -(1/BK) sum r * d log pi(y|x) / d logits = -(1/BK) sum r * (onehot - softmax)
    p = logits.detach().softmax(-1)
    want = torch.zeros(4, 7)
    for i in range(12):
        v = i // 3
        want[v] -= rew[i] * (torch.nn.functional.one_hot(idx[i], 7) - p[v]) / 12
    assert torch.allclose(logits.grad, want, atol=1e-6)


def test_rewards_are_constants():
    logits = torch.zeros(1, 2, requires_grad=True)
    rew = torch.tensor([1.0], requires_grad=True)
    policy_gradient_loss(logits, torch.tensor([0]), rew).backward()
    assert rew.grad is None


def test_confidence_selection_picks_the_six_lowest_entropy_views():
    g = torch.Generator().manual_seed(1)
    logits = (
        torch.randn(64, 10, generator=g) * torch.linspace(0.1, 5, 64)[torch.randperm(64, generator=g), None]
    )
    idx = select_confident(logits, 0.1)
    assert len(idx) == 6 == n_selected(64, 0.1)
    h = [(-(torch.softmax(r, 0) * torch.log_softmax(r, 0)).sum().item(), i) for i, r in enumerate(logits)]
    assert sorted(idx.tolist()) == sorted(i for _, i in sorted(h)[:6])
    assert torch.all(entropy(logits[idx]).max() <= entropy(logits).sort().values[6])


def test_selection_that_keeps_no_view_is_an_error():
    with pytest.raises(ValueError, match="selects no view"):
        select_confident(torch.zeros(8, 3), 0.1)
    with pytest.raises(ValueError, match="fraction"):
        n_selected(64, 0.0)
    with pytest.raises(ValueError, match="fraction"):
        n_selected(64, 1.5)


def test_top_k_shapes_and_repeat_interleave_order():
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(5, 9, generator=g)
    idx = sample_top_k(logits, 3)
    assert idx.shape == (15,)
    rep = torch.repeat_interleave(logits, 3, dim=0)
    for i in range(15):
        assert torch.equal(rep[i], logits[i // 3])
        assert idx[i] == logits[i // 3].argsort(descending=True)[i % 3]
    with pytest.raises(ValueError, match="sample_k"):
        sample_top_k(logits, 10)
    with pytest.raises(ValueError, match="B\\*K"):
        policy_gradient_loss(logits, idx[:7], torch.zeros(7))


def test_tpt_average_entropy_and_kd_brute_force():
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(6, 4, generator=g), torch.randn(6, 4, generator=g)
    p = a.softmax(-1).mean(0)
    assert average_entropy(a).item() == pytest.approx(-(p * p.log()).sum().item(), abs=1e-5)
    want = -(b.softmax(-1) * a.log_softmax(-1)).sum(-1).mean()
    assert distillation_loss(a, b).item() == pytest.approx(want.item(), abs=1e-6)
    with pytest.raises(ValueError, match="shape"):
        distillation_loss(a, b[:3])
