"""The episodic loop: reset, frozen reward, what trains in each mode, the EMA buffer, bad input."""

import copy

import pytest
import torch

from iclr24.rlcf.data import DIGIT_NAMES as NAMES
from iclr24.rlcf.models import tokenize
from iclr24.rlcf.reward import CLIPReward
from iclr24.rlcf.tta import TTAConfig, TTARunner
from iclr24.rlcf.views import digit_views


def tok16(texts, context_length=16):
    return tokenize(texts, context_length)


def _views(n=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return digit_views(torch.rand(1, 8, 8, generator=g), n, generator=g)


def _optim_equal(a, b):
    if a["param_groups"] != b["param_groups"] or a["state"].keys() != b["state"].keys():
        return False
    return all(
        all(torch.equal(x[k], y[k]) if torch.is_tensor(x[k]) else x[k] == y[k] for k in x)
        for x, y in zip(a["state"].values(), b["state"].values())
    )


@pytest.mark.parametrize("mode, lr", [("image", 1e-2), ("prompt", 5e-2), ("norm", 5e-2)])
def test_episodic_reset_is_bit_identical_and_reward_frozen(toy_pair, digits_kw, mode, lr):
    policy, reward_model = toy_pair
    cfg = TTAConfig(method="rlcf", mode=mode, steps=3, lr=lr, n_views=16, selection_p=0.25)
    runner = TTARunner(policy, CLIPReward(reward_model), NAMES, cfg, **digits_kw)
    before = copy.deepcopy(runner.trainable.state_dict())
    opt0 = copy.deepcopy(runner.optimizer.state_dict())
    reward_sum = sum(p.double().sum().item() for p in reward_model.parameters())
    hist = runner.adapt(_views())
    assert hist.shape == (4, 10)
    assert not torch.equal(hist[0], hist[-1]), "the adaptation must change the prediction's logits"
    after = runner.trainable.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert _optim_equal(runner.optimizer.state_dict(), opt0)
    assert all(not p.requires_grad and p.grad is None for p in reward_model.parameters())
    assert sum(p.double().sum().item() for p in reward_model.parameters()) == reward_sum


def test_what_each_mode_trains(toy_pair, digits_kw):
    policy, reward_model = toy_pair
    r = TTARunner(policy, CLIPReward(reward_model), NAMES, TTAConfig(mode="norm", n_views=16, selection_p=0.25),
                  **digits_kw)  # fmt: skip
    names = {n for n, p in policy.named_parameters() if p.requires_grad}
    assert names and all(n.startswith("visual.body.") and n.split(".")[2] in ("1", "4", "7") for n in names)
    r = TTARunner(policy, CLIPReward(reward_model), NAMES, TTAConfig(mode="prompt"), **digits_kw)
    assert not any(p.requires_grad for p in policy.parameters())
    assert [n for n, _ in r.trainable.named_parameters()] == ["ctx"]
    assert r.prompt_learner.ctx.shape == (5, 32)  # "a photo of the digit" = 5 tokens


def test_zero_shot_equals_the_policy_and_tpt_needs_no_reward(toy_pair, digits_kw):
    policy, _ = toy_pair
    v = _views()
    zs = TTARunner(policy, None, NAMES, TTAConfig(method="zero-shot", mode="image"), **digits_kw).adapt(v)
    text = torch.nn.functional.normalize(
        policy.encode_text(tok16([f"a photo of the digit {n}." for n in NAMES])), dim=-1
    )
    img = torch.nn.functional.normalize(policy.encode_image(v[:1]), dim=-1)
    assert torch.allclose(zs[0], (policy.logit_scale.exp() * img @ text.t())[0], atol=1e-5)
    tpt = TTARunner(policy, None, NAMES, TTAConfig(method="tpt", mode="image", steps=1, lr=1e-2, n_views=16,
                                                   selection_p=0.25), **digits_kw)  # fmt: skip
    assert tpt.adapt(v).shape == (2, 10)


def test_momentum_buffer_replaces_the_init(toy_pair, digits_kw):
    policy, reward_model = toy_pair
    cfg = TTAConfig(mode="image", lr=1e-2, n_views=16, selection_p=0.25, momentum=0.5, update_freq=2)
    r = TTARunner(policy, CLIPReward(reward_model), NAMES, cfg, **digits_kw)
    w0 = policy.visual.proj.weight.detach().clone()
    r.adapt(_views(seed=1))
    assert torch.equal(policy.visual.proj.weight, w0)  # not yet: every 2 samples
    r.adapt(_views(seed=2))
    w = policy.visual.proj.weight.detach()
    assert not torch.equal(w, w0) and torch.equal(w, r._ema["proj.weight"])


def test_bad_input(toy_pair, digits_kw):
    policy, reward_model = toy_pair
    rew = CLIPReward(reward_model)
    with pytest.raises(ValueError, match="non-empty list of class names"):
        TTARunner(policy, rew, [], TTAConfig(), **digits_kw)
    with pytest.raises(ValueError, match="selects no view"):
        TTAConfig(n_views=8, selection_p=0.1)
    kw = dict(digits_kw, reward_tokenizer=lambda t, context_length=77: tok16(t, 77))
    with pytest.raises(ValueError, match="takes 16 tokens"):
        TTARunner(policy, rew, NAMES, TTAConfig(mode="image"), **kw)
    small = torch.nn.Embedding(100, 32)
    reward_model.token_embedding = small
    with pytest.raises(ValueError, match="outside the reward model's vocabulary"):
        TTARunner(policy, rew, NAMES, TTAConfig(mode="image"), **digits_kw)
    with pytest.raises(ValueError, match="needs a CLIPReward"):
        TTARunner(policy, None, NAMES, TTAConfig(mode="image"), **digits_kw)
    r = TTARunner(policy, None, NAMES, TTAConfig(method="tpt", mode="image", n_views=16, selection_p=0.25),
                  **digits_kw)  # fmt: skip
    with pytest.raises(ValueError, match="views as a tensor"):
        r.adapt(torch.zeros(16, 64))
    with pytest.raises(ValueError, match="NaN"):
        r.adapt(torch.full((16, 1, 8, 8), float("nan")))
    with pytest.raises(ValueError, match="selects no view"):
        r.adapt(torch.zeros(3, 1, 8, 8))
    with pytest.raises(ValueError, match="exceeds the 10 classes"):
        TTARunner(policy, rew, NAMES, TTAConfig(mode="image", sample_k=11), **digits_kw)
    with pytest.raises(ValueError, match="method must be"):
        TTAConfig(method="ppo")
    with pytest.raises(ValueError, match="image tensor"):
        digit_views("not an image")
