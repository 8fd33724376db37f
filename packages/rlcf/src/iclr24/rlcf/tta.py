"""Episodic test-time adaptation of a CLIP policy, one test sample at a time (Zhao et al., ICLR 2024, Alg. 1;
official ``TPT/tpt_cls_rl.py::test_time_tuning`` and ``tune_cls_rl.py``).

For each test image: reset the trainable parameters and the optimiser state; build N views (view 0 the original);
then for ``steps`` steps
    Alg. 1, line 3: step 1 forwards all N views and keeps the floor(rho N) most confident (lowest entropy); the
                    reward model encodes these views once; later steps forward the selected views only
    Alg. 1, line 4: y_{v,1..K} = top-K(logits_v)                                     (the official "sampling")
    Alg. 1, line 5: r~ = CLIP reward of (x_v, y_{v,k}) minus its mean over k            (Eq. (4), (5))
    Alg. 1, line 6: theta <- AdamW step on mean(r~ * CE(logits_v, y_{v,k}))              (Eq. (3))
and predict on the original view. The same loop runs the baselines: zero-shot (no step), TPT (entropy of the
averaged confident views, selected at step 1 and kept, as TPT's ``tpt_classification.py``) and KD (cross-entropy to the reward model's class
distribution on the selected views). Trainable: the CoOp prompt context (``mode="prompt"``), the whole image encoder
(``"image"``) or its norm layers (``"norm"``). Optional EMA "momentum buffer" of the official ``CLIPCLS_TTA``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from .losses import (
    average_entropy,
    distillation_loss,
    n_selected,
    policy_gradient_loss,
    sample_top_k,
    select_confident,
)
from .models import check_images
from .reward import CLIPReward, check_tokens

__all__ = ["TTAConfig", "TTARunner", "METHODS", "MODES", "PROMPT_DEFAULTS", "IMAGE_DEFAULTS"]

METHODS = ("zero-shot", "tpt", "rlcf", "kd")
MODES = ("prompt", "image", "norm")
_NORMS = (nn.LayerNorm, nn.GroupNorm, nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


@dataclass(frozen=True)
class TTAConfig:
    """One method's test-time adaptation. Defaults: the official prompt-tuning script (``rlcf-prompt.sh``):
    3 steps, AdamW lr 7e-3, wd 5e-4, 64 views, 10% selected, K = 3, mean baseline, no amplify, no EMA."""

    method: str = "rlcf"
    mode: str = "prompt"
    steps: int = 3
    lr: float = 7e-3
    weight_decay: float = 5e-4
    n_views: int = 64
    selection_p: float = 0.1
    sample_k: int = 3
    amplify: bool = False
    process_batch: bool = False
    momentum: float | None = None  # EMA "momentum buffer" (official 0.9998 when on)
    update_freq: int = 64
    update_w: float = 1.0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        for name in ("steps", "n_views", "sample_k", "update_freq"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "steps" else 1):
                raise ValueError(f"{name} must be an int >= {0 if name == 'steps' else 1}, got {v!r}")
        if not (self.lr > 0 and self.weight_decay >= 0):
            raise ValueError(f"lr must be > 0 and weight_decay >= 0, got {self.lr}, {self.weight_decay}")
        if self.method != "zero-shot" and self.steps > 0:
            n_selected(
                self.n_views, self.selection_p
            )  # a fraction that keeps no view fails here, before any work
        if self.momentum is not None and not 0.0 < self.momentum < 1.0:
            raise ValueError(f"momentum must be in (0, 1) or None, got {self.momentum}")
        if not 0.0 <= self.update_w <= 1.0:
            raise ValueError(f"update_w must be in [0, 1], got {self.update_w}")

    def but(self, **kw) -> TTAConfig:
        return replace(self, **kw)


PROMPT_DEFAULTS = TTAConfig()
IMAGE_DEFAULTS = TTAConfig(
    mode="image", lr=1e-5
)  # official ``tune_cls_rl.py`` scripts: the visual encoder, lr 1e-5


def _default_tokenizer(texts, context_length=77):
    import open_clip

    return open_clip.tokenize(list(texts), context_length=context_length)


class TTARunner:
    """``TTARunner(policy, reward, classnames, cfg)``: ``adapt(views)`` -> the original view's logits after 0..steps
    updates ``(steps + 1, C)``; ``evaluate(images, labels, make_views)`` -> accuracy per step.

    ``policy``: an open_clip CLIP (adapted); ``reward``: a :class:`CLIPReward` (frozen; needed by ``rlcf``/``kd``);
    ``template``: the hand-crafted class prompt (the reward model's text, and the policy's in image/norm modes);
    ``ctx_init``: CoOp's context initialisation in prompt mode. Tokenizers default to open_clip's."""

    def __init__(
        self,
        policy: nn.Module,
        reward: CLIPReward | None,
        classnames,
        cfg: TTAConfig = PROMPT_DEFAULTS,
        *,
        template: str = "a photo of a {}.",
        ctx_init: str | None = "a photo of a",
        policy_tokenizer: Callable | None = None,
        reward_tokenizer: Callable | None = None,
    ) -> None:
        from .data import class_prompts

        if not isinstance(cfg, TTAConfig):
            raise ValueError(f"cfg must be a TTAConfig, got {type(cfg).__name__}")
        if not hasattr(policy, "encode_image") or not hasattr(policy, "logit_scale"):
            raise ValueError(
                f"the policy must be a CLIP with encode_image/logit_scale, got {type(policy).__name__}"
            )
        prompts = class_prompts(classnames, template)
        self.classnames = list(classnames)
        if cfg.method == "rlcf" and cfg.sample_k > len(self.classnames):
            raise ValueError(f"sample_k={cfg.sample_k} exceeds the {len(self.classnames)} classes")
        self.cfg = cfg
        self.policy = policy
        self.reward = reward
        ptok = policy_tokenizer or _default_tokenizer
        if cfg.method in ("rlcf", "kd"):
            if not isinstance(reward, CLIPReward):
                raise ValueError(
                    f"method {cfg.method!r} needs a CLIPReward reward model, got {type(reward).__name__}"
                )
            rtok = reward_tokenizer or _default_tokenizer
            reward.set_class_prompts(rtok(prompts, context_length=int(reward.model.context_length)))
            reward.amplify, reward.process_batch = cfg.amplify, cfg.process_batch
        for p in policy.parameters():
            p.requires_grad_(False)
        self.prompt_learner = None
        if cfg.mode == "prompt":
            from .prompt import PromptLearner

            dev = next(policy.parameters()).device
            self.prompt_learner = PromptLearner(policy, classnames, ptok, ctx_init=ctx_init).to(dev)
            self.trainable: nn.Module = self.prompt_learner
            params = list(self.prompt_learner.parameters())
            self.text_features = None
        else:
            tokens = check_tokens(policy, ptok(prompts, context_length=int(policy.context_length)), "policy")
            with torch.no_grad():
                dev = next(policy.parameters()).device
                self.text_features = F.normalize(policy.encode_text(tokens.to(dev)).float(), dim=-1)
            self.trainable = policy.visual
            if cfg.mode == "norm":
                params = [p for m in policy.visual.modules() if isinstance(m, _NORMS) for p in m.parameters()]
                if not params:
                    raise ValueError(
                        "mode='norm': the policy's image encoder has no LayerNorm/GroupNorm/BatchNorm"
                    )
            else:
                params = list(policy.visual.parameters())
        for p in params:
            p.requires_grad_(True)
        self.params = params
        self.optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self._optim_state = copy.deepcopy(self.optimizer.state_dict())
        self._original = self._state()
        self._init = self._state()
        self._ema = self._state() if cfg.momentum is not None else None
        self._count = 0

    # -- state -------------------------------------------------------------------------------------------------
    def _state(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.trainable.state_dict().items()}

    @torch.no_grad()
    def reset(self) -> None:
        """Trainable parameters back to their (EMA-updated) initial state; optimiser state cleared (episodic)."""
        self.trainable.load_state_dict(self._init)
        self.optimizer.load_state_dict(copy.deepcopy(self._optim_state))

    @torch.no_grad()
    def _momentum_update(self) -> None:
        if self._ema is None:
            return
        m, cur = self.cfg.momentum, self.trainable.state_dict()
        for k, v in cur.items():
            if v.is_floating_point():
                self._ema[k].mul_(m).add_(v.detach(), alpha=1 - m)
        self._count += 1
        if self._count >= self.cfg.update_freq:
            self._count = 0
            w = self.cfg.update_w
            for k, v in self._original.items():
                if v.is_floating_point():
                    self._init[k] = (1 - w) * v + w * self._ema[k]

    # -- forward -----------------------------------------------------------------------------------------------
    def _logits(self, views: torch.Tensor | None, image_features: torch.Tensor | None) -> torch.Tensor:
        scale = self.policy.logit_scale.exp().float()
        if self.prompt_learner is not None:
            return scale * image_features @ self.prompt_learner().t()
        img = F.normalize(self.policy.encode_image(views).float(), dim=-1)
        return scale * img @ self.text_features.t()

    def _check_views(self, views: torch.Tensor) -> torch.Tensor:
        if not isinstance(views, torch.Tensor) or views.ndim != 4 or views.shape[0] == 0:
            raise ValueError(
                f"expected views as a tensor (N, C, H, W) with the original image first, got "
                f"{getattr(views, 'shape', type(views).__name__)}"
            )
        if not torch.isfinite(views).all():
            raise ValueError("the views have NaN or infinite pixels")
        check_images(self.policy, views, "policy")
        if self.reward is not None and self.cfg.method in ("rlcf", "kd"):  # the same views go to the reward
            check_images(self.reward.model, views, "reward model", check_size=self.reward.resolution is None)
        if self.cfg.method != "zero-shot" and self.cfg.steps > 0:
            n_selected(views.shape[0], self.cfg.selection_p)
        return views.to(next(self.policy.parameters()).device, torch.float32)

    def adapt(self, views: torch.Tensor) -> torch.Tensor:
        """Adapt on one test image's views and return the original view's logits after 0, 1, ..., steps updates
        ``(steps + 1, C)`` (the last row is the prediction); parameters are reset before and after."""
        views = self._check_views(views)
        cfg = self.cfg
        steps = 0 if cfg.method == "zero-shot" else cfg.steps
        self.reset()
        feats = None
        if self.prompt_learner is not None:
            with torch.no_grad():  # the image encoder is frozen in prompt mode: encode the views once
                feats = F.normalize(self.policy.encode_image(views).float(), dim=-1)
        history = [self._predict(views, feats)]
        selected = None
        for _ in range(steps):
            if self.prompt_learner is None:
                self.policy.visual.train()  # as the official tune_cls_*.py (matters for BatchNorm only)
            if selected is None:  # every method selects once and keeps the views (TPT's own code does too)
                out = self._logits(views, feats)
                selected = select_confident(out.detach(), cfg.selection_p)  # Alg. 1, line 3
                out = out[selected]
                if cfg.method in ("rlcf", "kd"):  # the reward model encodes the selected views once
                    self.reward.set_image_features(views[selected])
            else:
                out = self._logits(views[selected], None if feats is None else feats[selected])
            if cfg.method == "rlcf":
                sampled = sample_top_k(out.detach(), cfg.sample_k)  # Alg. 1, line 4
                rewards = self.reward.rewards(sampled, cfg.sample_k)  # Alg. 1, line 5
                loss = policy_gradient_loss(out, sampled, rewards)  # Alg. 1, line 6
            elif cfg.method == "kd":
                loss = distillation_loss(out, self.reward.class_logits())
            else:
                loss = average_entropy(out)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            history.append(self._predict(views, feats))
        self._momentum_update()
        self.reset()
        if self.reward is not None:
            self.reward.image_features = None
        return torch.stack(history)

    @torch.no_grad()
    def _predict(self, views: torch.Tensor, feats: torch.Tensor | None) -> torch.Tensor:
        if self.prompt_learner is None:
            self.policy.visual.eval()
        return self._logits(views[:1], None if feats is None else feats[:1])[0].detach()

    def evaluate(
        self,
        images: torch.Tensor,
        labels: torch.Tensor,
        make_views: Callable[..., torch.Tensor],
        *,
        seed: int = 0,
        progress: Callable | None = None,
    ) -> dict:
        """Top-1 accuracy (%) after each number of steps over a test set, one image at a time; ``make_views(image,
        n_views, generator=g)`` builds the views (view 0 = the original)."""
        if len(images) == 0:
            raise ValueError("the test set is empty")
        if len(images) != len(labels):
            raise ValueError(f"got {len(images)} images but {len(labels)} labels")
        if int(labels.max()) >= len(self.classnames) or int(labels.min()) < 0:
            raise ValueError(
                f"labels must index the {len(self.classnames)} class names, got max {int(labels.max())}"
            )
        g = torch.Generator().manual_seed(seed)
        n_views = 1 if self.cfg.method == "zero-shot" else self.cfg.n_views
        pairs = ((make_views(img, n_views, generator=g), y) for img, y in zip(images, labels))
        return self.evaluate_views(pairs, progress=progress)

    def evaluate_views(self, pairs, *, progress: Callable | None = None) -> dict:
        """Top-1 accuracy (%) after each number of steps over ``(views, label)`` pairs, one test image at a time:
        any iterable, e.g. an :class:`~iclr24.rlcf.data.ImageFolderTTA` or a ``DataLoader(..., batch_size=None)``
        over it (images are read and augmented lazily, one at a time)."""
        correct, n = None, 0
        t0 = time.perf_counter()
        for views, y in pairs:
            y = int(y)
            if not 0 <= y < len(self.classnames):
                raise ValueError(f"labels must index the {len(self.classnames)} class names, got {y}")
            hist = self.adapt(views)
            hit = (hist.argmax(-1).cpu() == y).float()
            correct = hit if correct is None else correct + hit
            n += 1
            if progress is not None:
                progress.update(1)
        if n == 0:
            raise ValueError("the test set is empty")
        acc = (100.0 * correct / n).tolist()
        return {
            "accuracy": acc[-1],
            "accuracy_per_step": acc,
            "n": n,
            "seconds": time.perf_counter() - t0,
        }
