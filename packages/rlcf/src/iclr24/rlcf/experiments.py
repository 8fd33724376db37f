"""The offline demo: two small CLIPs trained in-process on digit image-caption pairs (a weak policy on clean images,
a stronger reward model on clean + rotated/noisy copies), then episodic test-time adaptation of the policy on
rotated + noisy held-out digits with zero-shot, TPT, KD and RLCF on the same views, budget and seed."""

from __future__ import annotations

from dataclasses import asdict
from dataclasses import dataclass
from pathlib import Path

import torch

from iclr24.paperkit.errors import InputError

from .data import DIGIT_NAMES
from .data import DIGIT_TEMPLATE
from .data import augment_rotate_noise
from .data import class_prompts
from .data import digits_recipe
from .model import TOY_CONTEXT_LENGTH
from .model import ToyCLIPConfig
from .model import class_logits
from .model import encode_class_prompts
from .model import tokenize
from .model import train_toy_clip
from .reward import CLIPReward
from .tta import TTAConfig
from .tta import TTARunner
from .tta import evaluate_together
from .views import digit_views

__all__ = ["DemoConfig", "train_digit_clips", "run_demo_seed", "DEMO_METHODS", "toy_tokenizer"]

DEMO_METHODS = ("zero-shot", "tpt", "tpt-3", "kd", "rlcf", "rlcf-prompt")


@dataclass(frozen=True)
class DemoConfig:
    """The recipe. Training: AdamW 3e-3, batch 128; policy width 8 on clean images (500 steps), reward width 32 on
    clean + 4 rotated (U(-50, 50) deg) noisy copies (800 steps). Test: +-U(20, 35) deg, N(0, 0.15^2) noise.
    TTA: 64 views (+-10 deg, +-1 px), 10% selected, K = 3; RLCF/KD 3 steps, TPT 1 step (``tpt``, TPT's paper
    default) and 3 steps (``tpt-3``, the official ``tpt-tune.sh``), AdamW wd 5e-4, lr 1e-3 on the image encoder
    (7e-3 on the prompt context)."""

    n_test: int = 300
    policy_width: int = 8
    reward_width: int = 32
    policy_steps: int = 500
    reward_steps: int = 800
    reward_copies: int = 4
    reward_max_angle: float = 50.0
    train_lr: float = 3e-3
    batch_size: int = 128
    n_views: int = 64
    selection_p: float = 0.1
    sample_k: int = 3
    rlcf_steps: int = 3
    tpt_steps: int = 1
    tpt_gate_steps: int = 3
    lr_image: float = 1e-3
    lr_prompt: float = 7e-3
    weight_decay: float = 5e-4
    methods: tuple[str, ...] = DEMO_METHODS  # the methods run (every one on the same views)


def toy_tokenizer(texts, context_length: int = TOY_CONTEXT_LENGTH) -> torch.Tensor:
    return tokenize(texts, context_length)


_CACHE: dict = {}  # trained toy CLIPs, per process only (never written to disk)


class _Tagged:
    """The user's callbacks, told which of the two CLIPs a step belongs to (``metrics["model"]``)."""

    def __init__(self, callbacks, tag: str) -> None:
        from iclr24.paperkit.tracking import StepLog

        self.callbacks, self.tag = StepLog(None, callbacks).callbacks, tag  # checked and made a list

    def on_step(self, step: int, metrics) -> None:
        for cb in self.callbacks:
            (cb.on_step if hasattr(cb, "on_step") else cb)(step, {**metrics, "model": self.tag})

    def on_end(self, summary) -> None:
        for cb in self.callbacks:
            if hasattr(cb, "on_end"):
                cb.on_end({**summary, "model": self.tag})


def train_digit_clips(cfg: DemoConfig, seed: int, progress=None, *, callbacks=None, log_dir=None):
    """``(policy, reward_model, data)`` for one seed, trained once per process and shared by every method.

    ``callbacks`` get every training step of both CLIPs (``metrics["model"]`` is ``"policy"`` or ``"reward"``);
    ``log_dir`` gets ``LOG/policy/`` and ``LOG/reward/`` (``metrics.jsonl``, and TensorBoard runs when installed:
    ``tensorboard --logdir LOG`` shows the two side by side). With either, the CLIPs are trained anew (not taken
    from the per-process cache), to the same weights."""
    key = (cfg.policy_width, cfg.reward_width, cfg.policy_steps, cfg.reward_steps, cfg.reward_copies,
           cfg.reward_max_angle, cfg.train_lr, cfg.batch_size, seed)  # fmt: skip
    logged = callbacks is not None or log_dir is not None
    if key in _CACHE and not logged:
        return _CACHE[key]
    cbs = {tag: None if callbacks is None else [_Tagged(callbacks, tag)] for tag in ("policy", "reward")}
    logs = {tag: None if log_dir is None else Path(log_dir) / tag for tag in ("policy", "reward")}
    data = digits_recipe(seed)
    tokens = toy_tokenizer(class_prompts(DIGIT_NAMES, DIGIT_TEMPLATE))
    kw = dict(lr=cfg.train_lr, batch_size=cfg.batch_size, seed=seed, progress=progress)
    from .toyclip import build_toy_clip  # open_clip: imported on first use, not with iclr24.rlcf

    policy = train_toy_clip(build_toy_clip(ToyCLIPConfig(vision_width=cfg.policy_width), seed=seed),
                            data.train_x, data.train_y, tokens, steps=cfg.policy_steps, **kw,
                            callbacks=cbs["policy"], log_dir=logs["policy"])  # fmt: skip
    aug = augment_rotate_noise(data.train_x, cfg.reward_copies, cfg.reward_max_angle, 0.15, seed)
    x = torch.cat([data.train_x, aug])
    y = data.train_y.repeat(cfg.reward_copies + 1)
    reward = train_toy_clip(build_toy_clip(ToyCLIPConfig(vision_width=cfg.reward_width), seed=seed + 1000),
                            x, y, tokens, steps=cfg.reward_steps, **kw,
                            callbacks=cbs["reward"], log_dir=logs["reward"])  # fmt: skip
    _CACHE.clear()  # keep one seed's models at a time
    _CACHE[key] = (policy, reward, data)
    return _CACHE[key]


def method_config(cfg: DemoConfig, method: str) -> TTAConfig:
    base = dict(n_views=cfg.n_views, selection_p=cfg.selection_p, sample_k=cfg.sample_k,
                weight_decay=cfg.weight_decay)  # fmt: skip
    return {
        "zero-shot": TTAConfig(method="zero-shot", mode="image", steps=0, lr=cfg.lr_image, **base),
        "tpt": TTAConfig(method="tpt", mode="image", steps=cfg.tpt_steps, lr=cfg.lr_image, **base),
        "tpt-3": TTAConfig(method="tpt", mode="image", steps=cfg.tpt_gate_steps, lr=cfg.lr_image, **base),
        "kd": TTAConfig(method="kd", mode="image", steps=cfg.rlcf_steps, lr=cfg.lr_image, **base),
        "rlcf": TTAConfig(method="rlcf", mode="image", steps=cfg.rlcf_steps, lr=cfg.lr_image, **base),
        "rlcf-prompt": TTAConfig(
            method="rlcf", mode="prompt", steps=cfg.rlcf_steps, lr=cfg.lr_prompt, **base
        ),
    }[method]


@torch.no_grad()
def zero_shot_accuracy(model, x: torch.Tensor, y: torch.Tensor) -> float:
    tokens = toy_tokenizer(class_prompts(DIGIT_NAMES, DIGIT_TEMPLATE))
    return 100.0 * float(
        (class_logits(model, x, encode_class_prompts(model, tokens)).argmax(1) == y).float().mean()
    )


def run_demo_seed(cfg: DemoConfig, seed: int, methods=None, progress=None, hits: bool = False) -> dict:
    """Every method on the first ``n_test`` shifted test digits of one seed, on the same views: the views of a digit
    are drawn once, and what every method computes first for them (the policy's features of the views, the
    reward model's features of a selection) is computed once (:func:`~iclr24.rlcf.tta.evaluate_together`). With
    ``hits`` each method's result lists per digit whether its final prediction was right."""
    methods = cfg.methods if methods is None else methods
    unknown = set(methods) - set(DEMO_METHODS)
    if not methods or unknown:
        raise InputError(f"methods must be a non-empty subset of {DEMO_METHODS}, got {methods!r}")
    policy, reward_model, data = train_digit_clips(cfg, seed, progress)
    x, y = data.test_x[: cfg.n_test], data.test_y[: cfg.n_test]
    out = {
        "seed": seed,
        "policy_zero_shot": zero_shot_accuracy(policy, x, y),
        "reward_zero_shot": zero_shot_accuracy(reward_model, x, y),
        "methods": {},
        "config": asdict(cfg),
    }
    runners = {
        m: TTARunner(
            policy,
            CLIPReward(reward_model),
            DIGIT_NAMES,
            method_config(cfg, m),
            template=DIGIT_TEMPLATE,
            ctx_init="a photo of the digit",
            policy_tokenizer=toy_tokenizer,
            reward_tokenizer=toy_tokenizer,
        )  # fmt: skip
        for m in methods
    }
    out["methods"] = evaluate_together(runners, x, y, digit_views, seed=seed, progress=progress, hits=hits)
    for p in policy.parameters():
        p.requires_grad_(False)
    return out
