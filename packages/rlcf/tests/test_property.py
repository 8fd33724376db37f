"""Property test of the public API (``iclr24.rlcf.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty inputs,
bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import torch

import iclr24.rlcf as rl
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {
    "run_demo_seed": "trains two CLIPs for minutes; its config is probed through DemoConfig",
    "train_digit_clips": "trains two CLIPs for minutes; its config is probed through DemoConfig",
    "digits_recipe": "probed below through its angle and noise arguments",
}


def tok16(texts, context_length=16):
    return rl.tokenize(texts, context_length)


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    logits = torch.randn(8, 5)
    bad_logits = probe_arrays((8, 5), torch=True)
    # losses and view selection
    for f in (rl.average_entropy, rl.select_confident, rl.sample_top_k, rl.rewards_post_process):
        p.sweep(f, 0, bad_logits)
    p.sweep(rl.distillation_loss, 0, bad_logits, logits)
    p.sweep(rl.distillation_loss, 1, bad_logits, logits)
    sampled = rl.sample_top_k(logits, 3)
    rewards = torch.rand(*sampled.shape)
    p.sweep(rl.policy_gradient_loss, 0, bad_logits, sampled, rewards)
    p.sweep(
        rl.policy_gradient_loss,
        1,
        probe_arrays(tuple(sampled.shape), torch=True, dtype="int64"),
        logits,
        rewards,
    )
    p.sweep(rl.policy_gradient_loss, 2, probe_arrays(tuple(sampled.shape), torch=True), logits, sampled)
    p.sweep(rl.sample_top_k, "k", probe_sizes(), logits)
    p.sweep(rl.select_confident, "selection_p", probe_floats(), logits)
    feats = torch.nn.functional.normalize(torch.randn(4, 6), dim=-1)
    p.sweep(rl.clip_score, 0, probe_arrays((4, 6), torch=True), feats)
    p.sweep(rl.clip_score, "weight", probe_floats(), feats, feats)
    scores = torch.randn(4, 6)
    p.sweep(rl.recall_at_k, 0, probe_arrays((4, 6), torch=True), [{0}, {1}, {2}, {3}])
    p.sweep(rl.recall_at_k, 1, [("too few", [{0}]), ("out of range", [{99}] * 4), ("not sets", [1, 2, 3, 4])],
            scores)  # fmt: skip
    p.sweep(rl.recall_at_k, "ks", [("zero", (0,)), ("negative", (-1,)), ("empty", ()), ("float", (2.5,))],
            scores, [{0}, {1}, {2}, {3}])  # fmt: skip
    # text
    p.sweep(rl.tokenize, 0, [("empty", []), ("str", "a cat"), ("not strings", [1, 2])])
    p.sweep(rl.tokenize, "context_length", probe_sizes(), ["a cat"])
    p.sweep(rl.toy_tokenizer, "context_length", probe_sizes(), ["a cat"])
    p.sweep(rl.class_prompts, 0, [("empty", []), ("str", "cat"), ("not strings", [1, 2])])
    p.sweep(rl.class_prompts, "template", [("no slot", "a photo"), ("int", 3)], ["cat"])
    # views
    img = torch.rand(1, 8, 8)
    p.sweep(rl.digit_views, 0, probe_arrays((1, 8, 8), torch=True))
    p.sweep(rl.digit_views, 1, probe_sizes(), img)
    p.sweep(rl.digit_views, "max_angle", probe_floats(), img, 4)
    p.sweep(rl.clip_views, 0, probe_arrays((3, 16, 16), torch=True), 4, resolution=8)
    p.sweep(rl.clip_views, 1, probe_sizes(), torch.rand(3, 16, 16), resolution=8)
    p.sweep(rl.clip_views, "resolution", probe_sizes(), torch.rand(3, 16, 16), 2)
    # models
    for field in ("vision_width", "embed_dim", "text_width", "text_heads", "text_layers", "context_length"):
        p.sweep(rl.ToyCLIPConfig, field, probe_sizes())
    p.sweep(rl.build_toy_clip, 0, [("not a config", {"embed_dim": 8})])
    policy = rl.build_toy_clip(rl.ToyCLIPConfig(vision_width=4), seed=0)
    reward_model = rl.build_toy_clip(rl.ToyCLIPConfig(vision_width=4), seed=1)
    p.sweep(rl.CLIPReward, 0, [("not a model", object())])
    p.sweep(rl.CLIPReward, "weight", probe_floats(), reward_model)
    reward = rl.CLIPReward(reward_model)
    p.sweep(rl.PromptLearner, 1, [("empty", []), ("not strings", [1, 2])], policy, tokenizer=tok16)
    p.sweep(rl.PromptLearner, "n_ctx", probe_sizes(), policy, ["zero", "one"], tok16, ctx_init=None)
    images = torch.rand(12, 1, 8, 8)
    labels = torch.arange(12) % 3
    tokens = tok16(["zero", "one", "two"])
    p.sweep(rl.train_toy_clip, 1, probe_arrays((12, 1, 8, 8), torch=True), policy, labels, tokens, steps=1)
    p.sweep(rl.train_toy_clip, 2, [*probe_arrays((12,), torch=True, dtype="int64"), ("out of range", labels + 9)],
            policy, images, tokens, steps=1)  # fmt: skip
    p.sweep(rl.train_toy_clip, "steps", probe_sizes(), policy, images, labels, tokens)
    p.sweep(rl.train_toy_clip, "lr", probe_floats(), policy, images, labels, tokens, steps=1)
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    bad_data = [
        ("three fields", TensorDataset(images, labels, labels)),
        ("one field", TensorDataset(images)),
        ("empty", TensorDataset(images[:0], labels[:0])),
        ("3 channels", DataLoader(TensorDataset(torch.rand(12, 3, 8, 8), labels), batch_size=4)),
        ("nan images", DataLoader(TensorDataset(images * float("nan"), labels), batch_size=4)),
        ("float labels", TensorDataset(images, labels.float())),
        ("ragged", [(torch.zeros(1, 8, 8), 0), (torch.zeros(1, 4, 4), 1)]),
    ]
    p.sweep(rl.train_toy_clip, 1, bad_data, policy, tokens=tokens, steps=1)
    p.sweep(rl.train_toy_clip, "callbacks", [("int", 3), ("list of int", [3])], policy, images, labels, tokens,
            steps=1)  # fmt: skip
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    p.sweep(rl.train_toy_clip, "log_dir", [("a file", a_file)], policy, images, labels, tokens, steps=1)
    for field in ("vision_width", "embed_dim", "text_width", "text_heads", "text_layers", "context_length"):
        p.sweep(rl.ToyCLIP, field, probe_sizes())
    p.sweep(rl.ToyCLIP.from_pretrained, 0, [*probe_files(tmp_path, ""), *probe_files(tmp_path, ".json")])
    policy.save_pretrained(tmp_path / "toy")
    (tmp_path / "toy" / "config.json").write_text(
        '{"format": "iclr24-pretrained/1", "class": "x", "config": {}}'
    )
    p.sweep(rl.ToyCLIP.from_pretrained, 0, [("foreign class", tmp_path / "toy")])
    p.sweep(rl.load_clip, 0, [("foreign class", tmp_path / "toy"), ("not a model folder", tmp_path)])
    # the episodic runners
    for field in ("steps", "n_views", "sample_k", "update_freq"):
        p.sweep(rl.TTAConfig, field, probe_sizes())
    for field in ("lr", "weight_decay", "selection_p", "update_w"):
        p.sweep(rl.TTAConfig, field, probe_floats())
    p.sweep(rl.TTAConfig, "method", [("unknown", "magic")])
    cfg = rl.TTAConfig(steps=1, n_views=8, selection_p=0.25)
    kw = dict(template="a photo of the digit {}.", ctx_init="a photo of the digit", policy_tokenizer=tok16,
              reward_tokenizer=tok16)  # fmt: skip
    p.sweep(rl.TTARunner, 2, [("empty", []), ("not strings", [1, 2])], policy, reward, cfg, **kw)
    runner = rl.TTARunner(policy, reward, ["zero", "one", "two"], cfg, **kw)
    p.sweep(runner.adapt, 0, probe_arrays((8, 1, 8, 8), torch=True))
    p.sweep(rl.RetrievalTTA, "direction", [("unknown", "x2y")], policy, reward)
    p.sweep(rl.RetrievalTTA, "steps", probe_sizes(), policy, reward)
    p.sweep(rl.RetrievalTTA, "lr", probe_floats(), policy, reward)
    # configs of the demo
    for field in ("n_test", "policy_width", "policy_steps", "batch_size", "n_views", "rlcf_steps"):
        p.sweep(rl.DemoConfig, field, probe_sizes())
    for field in ("train_lr", "selection_p", "lr_image", "reward_max_angle"):
        p.sweep(rl.DemoConfig, field, probe_floats())
    p.sweep(rl.DemoConfig, "methods", [("unknown", ("magic",)), ("empty", ())])
    # loaders
    p.sweep(rl.load_image_folder, 0, probe_files(tmp_path, ""))
    p.sweep(rl.load_image_folder, "size", probe_sizes(), tmp_path)
    for suffix in (".pt", ".safetensors"):
        p.sweep(rl.load_clip, 0, probe_files(tmp_path, suffix), arch="ViT-B-16")
    p.sweep(rl.load_clip, 0, [("unknown arch", "ViT-Z-99")])
    p.check()
    p.assert_covers(rl, skip=SKIP)
