"""The episodic loop: reset, frozen reward, what trains in each mode, the EMA buffer, bad input."""

import copy

import pytest
import torch

from iclr24.rlcf.data import DIGIT_NAMES as NAMES
from iclr24.rlcf.model import tokenize
from iclr24.rlcf.reward import CLIPReward
from iclr24.rlcf.toyclip import build_toy_clip
from iclr24.rlcf.tta import TTAConfig
from iclr24.rlcf.tta import TTARunner
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


def _six_runners(policy, reward_model, digits_kw, n_views=16):
    base = dict(n_views=n_views, selection_p=0.25)
    cfgs = {
        "zero-shot": TTAConfig(method="zero-shot", mode="image", **base),
        "tpt": TTAConfig(method="tpt", mode="image", steps=1, lr=1e-2, **base),
        "tpt-3": TTAConfig(method="tpt", mode="image", steps=3, lr=1e-2, **base),
        "kd": TTAConfig(method="kd", mode="image", steps=3, lr=1e-2, **base),
        "rlcf": TTAConfig(method="rlcf", mode="image", steps=3, lr=1e-2, **base),
        "rlcf-prompt": TTAConfig(method="rlcf", mode="prompt", steps=3, lr=5e-2, **base),
    }
    return {k: TTARunner(policy, CLIPReward(reward_model), NAMES, c, **digits_kw) for k, c in cfgs.items()}


def test_shared_view_features_change_no_result(toy_pair, digits_kw):
    """The work shared across methods (the views' features under the initial encoder, the reward features of a
    selection) and the step-1 forward of the selected views only give the histories of each runner alone, and
    those of the official order (all views forwarded with their graph, then indexed)."""
    policy, reward_model = toy_pair
    runners = _six_runners(policy, reward_model, digits_kw)
    for seed in (1, 2):
        v = _views(seed=seed)
        alone = {k: r.adapt(v) for k, r in runners.items()}
        shared = runners["tpt"].encode_views(v)
        for k, r in runners.items():
            assert torch.allclose(r.adapt(v, shared=shared), alone[k], atol=1e-5), k
        assert len(shared.reward_features) == 1  # kd and rlcf select the same views: encoded once
        for k in ("tpt-3", "kd", "rlcf"):  # the official order, forced
            runners[k]._batch_coupled = True
            assert torch.allclose(runners[k].adapt(v), alone[k], atol=1e-5), k
            runners[k]._batch_coupled = False
        assert not torch.equal(alone["rlcf"][0], alone["rlcf"][-1])


def test_evaluate_together_equals_each_runner_alone(toy_pair, digits_kw):
    from iclr24.rlcf.tta import _prefixes
    from iclr24.rlcf.tta import evaluate_together

    policy, reward_model = toy_pair
    runners = _six_runners(policy, reward_model, digits_kw)
    g = torch.Generator().manual_seed(3)
    x, y = torch.rand(5, 1, 8, 8, generator=g), torch.randint(10, (5,), generator=g)
    together = evaluate_together(runners, x, y, digit_views, seed=7)
    # zero-shot and 1-step TPT are read off 3-step TPT (the same first update); the others run
    assert _prefixes(runners) == {"tpt": "tpt-3", "zero-shot": "tpt-3"}
    assert together["tpt"]["seconds"] == 0.0 and together["rlcf"]["seconds"] > 0
    for k, r in runners.items():
        assert (
            together[k]["accuracy_per_step"] == r.evaluate(x, y, digit_views, seed=7)["accuracy_per_step"]
        ), k
    # bad input: before any work
    other = TTARunner(build_toy_clip(), None, NAMES, TTAConfig(method="zero-shot", mode="image"), **digits_kw)
    with pytest.raises(ValueError, match="one policy"):
        evaluate_together({"a": runners["tpt"], "b": other}, x, y, digit_views)
    with pytest.raises(ValueError, match="one number of views"):
        evaluate_together({"a": runners["tpt"], "b": _six_runners(policy, reward_model, digits_kw, 20)["tpt"]}, x, y,
                          digit_views)  # fmt: skip
    with pytest.raises(ValueError, match="as many labels"):
        evaluate_together(runners, x, y[:3], digit_views)
    ema = TTARunner(policy, None, NAMES, TTAConfig(method="tpt", mode="image", n_views=16, selection_p=0.25,
                                                   momentum=0.5), **digits_kw)  # fmt: skip
    with pytest.raises(ValueError, match="EMA"):
        evaluate_together({"a": runners["tpt"], "b": ema}, x, y, digit_views)
    with pytest.raises(ValueError, match="cannot take shared"):
        ema.adapt(_views(), shared=runners["tpt"].encode_views(_views()))
