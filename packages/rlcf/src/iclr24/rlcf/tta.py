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

import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.paperkit.errors import InputError

from .losses import average_entropy
from .losses import distillation_loss
from .losses import n_selected
from .losses import policy_gradient_loss
from .losses import sample_top_k
from .losses import select_confident
from .model import ConvTower
from .model import check_images
from .reward import CLIPReward
from .reward import check_tokens

__all__ = [
    "TTAConfig",
    "TTARunner",
    "ViewFeatures",
    "evaluate_together",
    "METHODS",
    "MODES",
    "PROMPT_DEFAULTS",
    "IMAGE_DEFAULTS",
]

METHODS = ("zero-shot", "tpt", "rlcf", "kd")
MODES = ("prompt", "image", "norm")
# modules whose forward does not depend on train/eval mode (an encoder made only of these needs no mode switch)
_MODE_FREE = (
    nn.Conv2d,
    nn.Linear,
    nn.GroupNorm,
    nn.LayerNorm,
    nn.GELU,
    nn.ReLU,
    nn.Sequential,
    nn.Identity,
    ConvTower,
)
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
            raise InputError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.mode not in MODES:
            raise InputError(f"mode must be one of {MODES}, got {self.mode!r}")
        for name in ("steps", "n_views", "sample_k", "update_freq"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "steps" else 1):
                raise InputError(f"{name} must be an int >= {0 if name == 'steps' else 1}, got {v!r}")
        if not (self.lr > 0 and self.weight_decay >= 0):
            raise InputError(f"lr must be > 0 and weight_decay >= 0, got {self.lr}, {self.weight_decay}")
        if self.method != "zero-shot" and self.steps > 0:
            n_selected(
                self.n_views, self.selection_p
            )  # a fraction that keeps no view fails here, before any work
        if self.momentum is not None and not 0.0 < self.momentum < 1.0:
            raise InputError(f"momentum must be in (0, 1) or None, got {self.momentum}")
        if not 0.0 <= self.update_w <= 1.0:
            raise InputError(f"update_w must be in [0, 1], got {self.update_w}")

    def but(self, **kw) -> TTAConfig:
        return replace(self, **kw)


@dataclass
class ViewFeatures:
    """One test image's views encoded by a policy's initial image encoder (:meth:`TTARunner.encode_views`),
    computed once and shared by the runners on that policy; ``reward_features`` caches the reward model's
    features of a selection of these views (runners with the same selection share it)."""

    policy_id: int
    n_views: int
    features: torch.Tensor
    reward_features: dict = field(default_factory=dict)


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
            raise InputError(f"cfg must be a TTAConfig, got {type(cfg).__name__}")
        if not hasattr(policy, "encode_image") or not hasattr(policy, "logit_scale"):
            raise InputError(
                f"the policy must be a CLIP with encode_image/logit_scale, got {type(policy).__name__}"
            )
        prompts = class_prompts(classnames, template)
        self.classnames = list(classnames)
        if cfg.method == "rlcf" and cfg.sample_k > len(self.classnames):
            raise InputError(f"sample_k={cfg.sample_k} exceeds the {len(self.classnames)} classes")
        self.cfg = cfg
        self.policy = policy
        self.reward = reward
        ptok = policy_tokenizer or _default_tokenizer
        if cfg.method in ("rlcf", "kd"):
            if not isinstance(reward, CLIPReward):
                raise InputError(
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
                    raise InputError(
                        "mode='norm': the policy's image encoder has no LayerNorm/GroupNorm/BatchNorm"
                    )
            else:
                params = list(policy.visual.parameters())
        for p in params:
            p.requires_grad_(True)
        self.params = params
        # views interact through batch statistics only in BatchNorm layers (train mode)
        self._mode_free = all(isinstance(m, _MODE_FREE) for m in policy.visual.modules())
        self._batch_coupled = any(
            isinstance(m, nn.modules.batchnorm._BatchNorm) for m in policy.visual.modules()
        )
        # foreach: the same AdamW update (bit-identical on CPU) in a few fused tensor-list ops
        self.optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, foreach=True)
        self._live = self.trainable.state_dict(keep_vars=True)  # the live parameters and buffers, by name
        own = {id(p) for p in params}
        self._grad_flags = [
            (p, id(p) in own) for p in policy.parameters()
        ]  # which of them this runner trains
        self._original = self._state()
        self._init = self._state()
        self._ema = self._state() if cfg.momentum is not None else None
        self._count = 0

    # -- state -------------------------------------------------------------------------------------------------
    def _state(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.trainable.state_dict().items()}

    @torch.no_grad()
    def reset(self) -> None:
        """Trainable parameters back to their (EMA-updated) initial state; optimiser state cleared (episodic); only
        this runner's parameters require a gradient (several runners may share one policy)."""
        for p, trains in self._grad_flags:
            p.requires_grad_(trains)
        for k, t in self._live.items():  # in place, as load_state_dict(self._init)
            t.copy_(self._init[k])
        self.optimizer.state.clear()  # AdamW's moments and step counts: a fresh optimiser (its groups never change)

    def _set_train(self, mode: bool) -> None:
        if self._mode_free:  # no module of the encoder behaves differently in train and eval mode
            return
        if self.policy.visual.training != mode:
            self.policy.visual.train(mode)

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
    def _logits_from(self, image_features: torch.Tensor) -> torch.Tensor:
        """``tau * cos`` of normalised image features with the class text features (or the prompt learner's)."""
        scale = self.policy.logit_scale.exp().float()
        text = self.prompt_learner() if self.prompt_learner is not None else self.text_features
        return scale * image_features @ text.t()

    def _logits(self, views: torch.Tensor | None, image_features: torch.Tensor | None) -> torch.Tensor:
        if image_features is not None:
            return self._logits_from(image_features)
        return self._logits_from(F.normalize(self.policy.encode_image(views).float(), dim=-1))

    def _check_views(self, views: torch.Tensor) -> torch.Tensor:
        if not isinstance(views, torch.Tensor) or views.ndim != 4 or views.shape[0] == 0:
            raise InputError(
                f"expected views as a tensor (N, C, H, W) with the original image first, got "
                f"{getattr(views, 'shape', type(views).__name__)}"
            )
        if not torch.isfinite(views).all():
            raise InputError("the views have NaN or infinite pixels")
        check_images(self.policy, views, "policy")
        if self.reward is not None and self.cfg.method in ("rlcf", "kd"):  # the same views go to the reward
            check_images(self.reward.model, views, "reward model", check_size=self.reward.resolution is None)
        if self.cfg.method != "zero-shot" and self.cfg.steps > 0:
            n_selected(views.shape[0], self.cfg.selection_p)
        return views.to(next(self.policy.parameters()).device, torch.float32)

    def can_share(self) -> bool:
        """Whether this runner may take the view features another runner on the same policy computed
        (:meth:`encode_views`): its image encoder starts every sample from the same state (no EMA buffer, or a
        frozen encoder in prompt mode) and has no batch statistics coupling the views (BatchNorm in train mode)."""
        return self.prompt_learner is not None or (self.cfg.momentum is None and not self._batch_coupled)

    @torch.no_grad()
    def encode_views(self, views: torch.Tensor) -> ViewFeatures:
        """The L2-normalised features ``(N, d)`` of one test image's views under the policy's initial image
        encoder (eval mode): what every runner on this policy computes first for the image (the prediction
        before any step, the confidence selection, the frozen features of prompt mode). Computed once, it can be
        passed to ``adapt(views, shared=...)`` of every runner whose :meth:`can_share` is true."""
        views = self._check_views(views)
        self.reset()
        self._set_train(False)
        feats = F.normalize(self.policy.encode_image(views).float(), dim=-1)
        return ViewFeatures(policy_id=id(self.policy), n_views=views.shape[0], features=feats)

    def _initial_features(self, views: torch.Tensor, shared: ViewFeatures | None, steps: int):
        """The initial encoder's view features where this runner can use them without changing its result, else
        ``None`` (then the views go through the encoder with their graph, as the official code)."""
        if shared is not None:
            if not self.can_share():
                raise InputError(
                    "this runner cannot take shared view features (its encoder has an EMA buffer or BatchNorm)"
                )
            if shared.policy_id != id(self.policy) or shared.n_views != views.shape[0]:
                raise InputError(
                    f"the shared view features come from another policy or another set of views "
                    f"({shared.n_views} views; got {views.shape[0]})"
                )
            return shared.features
        if (
            self.prompt_learner is not None
        ):  # the image encoder is frozen in prompt mode: encode the views once
            with torch.no_grad():
                return F.normalize(self.policy.encode_image(views).float(), dim=-1)
        if steps > 0 and not self._batch_coupled:
            return self.encode_views(views).features
        return None

    def _first_step_logits(
        self, views: torch.Tensor, feats0: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Step 1: ``(selected, logits of the selected views with their graph)``. The selection is made on the
        initial parameters and kept for the later steps (every method; TPT's own code does too). Where the
        initial features are known and the views do not interact in the encoder (no BatchNorm), only the
        selected views are forwarded with a graph: the loss depends on them alone, so the gradient is the same
        as forwarding all N views with a graph and indexing, at a fraction of the backward cost."""
        p = self.cfg.selection_p
        if self.prompt_learner is not None:  # the features are constants; the graph runs through the context
            out = self._logits(None, feats0)
            selected = select_confident(out.detach(), p)  # Alg. 1, line 3
            return selected, out[selected]
        if feats0 is not None:
            with torch.no_grad():
                selected = select_confident(self._logits_from(feats0), p)  # Alg. 1, line 3
            return selected, self._logits(views[selected], None)
        out = self._logits(views, None)  # batch-coupled encoder: all views with their graph, as the official
        selected = select_confident(out.detach(), p)  # Alg. 1, line 3
        return selected, out[selected]

    def _set_reward_views(
        self, views: torch.Tensor, selected: torch.Tensor, shared: ViewFeatures | None
    ) -> None:
        """The reward model encodes the selected views once per test image (shared across runners with the same
        reward model and the same selection)."""
        key = (id(self.reward.model), self.reward.resolution, tuple(selected.tolist()))
        if shared is not None and key in shared.reward_features:
            self.reward.image_features = shared.reward_features[key]
            return
        feats = self.reward.set_image_features(views[selected])
        if shared is not None:
            shared.reward_features[key] = feats

    def adapt(self, views: torch.Tensor, shared: ViewFeatures | None = None) -> torch.Tensor:
        """Adapt on one test image's views and return the original view's logits after 0, 1, ..., steps updates
        ``(steps + 1, C)`` (the last row is the prediction); parameters are reset before and after. ``shared``:
        the views' features from :meth:`encode_views` of a runner on the same policy (computed once per image)."""
        views = self._check_views(views)
        cfg = self.cfg
        steps = 0 if cfg.method == "zero-shot" else cfg.steps
        self.reset()
        feats0 = self._initial_features(views, shared, steps)
        frozen = self.prompt_learner is not None  # prompt mode: the view features stay valid at every step
        history = [self._predict(views, feats0)]
        selected = None
        for _ in range(steps):
            if not frozen:
                self._set_train(True)  # as the official tune_cls_*.py (matters for BatchNorm only)
            if selected is None:
                selected, out = self._first_step_logits(views, feats0)
                if cfg.method in ("rlcf", "kd"):
                    self._set_reward_views(views, selected, shared)
            else:
                out = self._logits(views[selected], feats0[selected] if frozen else None)
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
            history.append(self._predict(views, feats0 if frozen else None))
        self._momentum_update()
        self.reset()
        if self.reward is not None:
            self.reward.image_features = None
        return torch.stack(history)

    @torch.no_grad()
    def _predict(self, views: torch.Tensor, feats: torch.Tensor | None) -> torch.Tensor:
        """The original view's logits: from its known features, or through the encoder in eval mode."""
        if feats is not None:
            return self._logits_from(feats[:1])[0].detach()
        self._set_train(False)
        return self._logits(views[:1], None)[0].detach()

    def evaluate(
        self,
        images: torch.Tensor,
        labels: torch.Tensor,
        make_views: Callable[..., torch.Tensor],
        *,
        seed: int = 0,
        progress: Callable | None = None,
        callbacks=None,
        log_dir=None,
    ) -> dict:
        """Top-1 accuracy (%) after each number of steps over a test set, one image at a time; ``make_views(image,
        n_views, generator=g)`` builds the views (view 0 = the original). ``callbacks`` / ``log_dir``: as in
        :meth:`evaluate_views`."""
        if len(images) == 0:
            raise InputError("the test set is empty")
        if len(images) != len(labels):
            raise InputError(f"got {len(images)} images but {len(labels)} labels")
        if int(labels.max()) >= len(self.classnames) or int(labels.min()) < 0:
            raise InputError(
                f"labels must index the {len(self.classnames)} class names, got max {int(labels.max())}"
            )
        g = torch.Generator().manual_seed(seed)
        n_views = 1 if self.cfg.method == "zero-shot" else self.cfg.n_views
        pairs = ((make_views(img, n_views, generator=g), y) for img, y in zip(images, labels))
        return self.evaluate_views(pairs, progress=progress, callbacks=callbacks, log_dir=log_dir)

    def evaluate_views(
        self, pairs, *, progress: Callable | None = None, callbacks=None, log_dir=None
    ) -> dict:
        """Top-1 accuracy (%) after each number of steps over ``(views, label)`` pairs, one test image at a time:
        any iterable, e.g. an :class:`~iclr24.rlcf.data.ImageFolderTTA` or a ``DataLoader(..., batch_size=None)``
        over it (images are read and augmented lazily, one at a time).

        ``callbacks`` (``f(i, metrics)`` or objects with ``on_step``) and ``log_dir`` (``metrics.jsonl``,
        TensorBoard event files when installed) get one record per test image ``i``: ``correct`` (the final
        prediction right: 1, else 0), ``correct_before`` (the prediction before any step) and the running
        ``accuracy`` (%); the end record has the result's accuracies. Logging changes no number."""
        from iclr24.paperkit.tracking import StepLog

        log = StepLog(log_dir, callbacks, name="rlcf")
        correct, n = None, 0
        t0 = time.perf_counter()
        with log:
            for views, y in pairs:
                y = int(y)
                if not 0 <= y < len(self.classnames):
                    raise InputError(f"labels must index the {len(self.classnames)} class names, got {y}")
                hist = self.adapt(views)
                hit = (hist.argmax(-1).cpu() == y).float()
                correct = hit if correct is None else correct + hit
                n += 1
                log(n - 1, {"correct": int(hit[-1]), "correct_before": int(hit[0]),
                            "accuracy": 100.0 * float(correct[-1]) / n})  # fmt: skip
                if progress is not None:
                    progress.update(1)
            if n == 0:
                raise InputError("the test set is empty")
            acc = (100.0 * correct / n).tolist()
            log.close({"accuracy": acc[-1], "accuracy_before": acc[0], "n": n})
        return {
            "accuracy": acc[-1],
            "accuracy_per_step": acc,
            "n": n,
            "seconds": time.perf_counter() - t0,
        }


def evaluate_together(
    runners: dict[str, TTARunner],
    images: torch.Tensor,
    labels: torch.Tensor,
    make_views: Callable[..., torch.Tensor],
    *,
    seed: int = 0,
    progress: Callable | None = None,
    hits: bool = False,
) -> dict[str, dict]:
    """Several methods on the same test images and the same views, one image at a time: ``{name: the result of
    TTARunner.evaluate}``, equal to evaluating each runner alone with the same ``seed``, with the shared work done
    once per image: the views (``make_views(image, n_views, generator=g)``, drawn once), their features under the
    policy's initial image encoder (:meth:`TTARunner.encode_views`) and the reward model's features of a selection
    of views. A runner whose steps are the first steps of another's (the same method and settings with fewer
    steps, or zero-shot, on the same encoder and class text) reads its history off that runner's: the updates are
    the same. The runners must adapt one policy with one number of views; ``seconds`` is each runner's own time
    (0 for one read off another; the shared encoding is counted in ``shared_seconds``). With ``hits`` each result
    also lists, per image, whether the final prediction was right (1) or not (0)."""
    n_views = _check_together(runners, images, labels)
    sharer = next((r for r in runners.values() if r.can_share()), None)
    prefix = _prefixes(runners)
    g = torch.Generator().manual_seed(seed)
    correct = {k: None for k in runners}
    per_image: dict[str, list[int]] = {k: [] for k in runners}
    seconds = dict.fromkeys(runners, 0.0)
    shared_seconds = 0.0
    for img, y in zip(images, labels):
        views = make_views(img, n_views, generator=g)
        t0 = time.perf_counter()
        shared = sharer.encode_views(views) if sharer is not None and n_views > 1 else None
        shared_seconds += time.perf_counter() - t0
        hists = {}
        for k, r in runners.items():
            if k in prefix:
                continue
            t0 = time.perf_counter()
            hists[k] = r.adapt(views, shared=shared if r.can_share() else None)
            seconds[k] += time.perf_counter() - t0
        for k, r in runners.items():
            hist = hists[prefix[k]][: _steps(r) + 1] if k in prefix else hists[k]
            hit = (hist.argmax(-1).cpu() == int(y)).float()
            correct[k] = hit if correct[k] is None else correct[k] + hit
            per_image[k].append(int(hit[-1]))
            if progress is not None:
                progress.update(1)
    out = {}
    for k in runners:
        acc = (100.0 * correct[k] / len(images)).tolist()
        out[k] = {"accuracy": acc[-1], "accuracy_per_step": acc, "n": len(images), "seconds": seconds[k],
                  "shared_seconds": shared_seconds}  # fmt: skip
        if hits:
            out[k]["hits"] = per_image[k]
    return out


def _steps(r: TTARunner) -> int:
    return 0 if r.cfg.method == "zero-shot" else r.cfg.steps


def _same_start(a: TTARunner, b: TTARunner) -> bool:
    """Both adapt the image encoder from one state (no EMA) against the same class text features."""
    return (
        a.prompt_learner is None
        and b.prompt_learner is None
        and a.can_share()
        and b.can_share()
        and a.trainable is b.trainable
        and torch.equal(a.text_features, b.text_features)
    )


def _same_updates(a: TTARunner, b: TTARunner) -> bool:
    """The same method and settings (apart from the number of steps) and, for RLCF/KD, the same reward."""
    if replace(a.cfg, steps=b.cfg.steps) != b.cfg:
        return False
    if a.cfg.method not in ("rlcf", "kd"):
        return True
    ra, rb = a.reward, b.reward
    return (
        ra.model is rb.model
        and (ra.weight, ra.resolution) == (rb.weight, rb.resolution)
        and torch.equal(ra.class_features, rb.class_features)
    )


def _prefixes(runners: dict[str, TTARunner]) -> dict[str, str]:
    """``{k: j}``: runner ``k``'s history is the first ``steps_k + 1`` rows of runner ``j``'s (``j`` is run)."""
    order = sorted(runners, key=lambda k: -_steps(runners[k]))
    prefix: dict[str, str] = {}
    for i, k in enumerate(order):
        rk = runners[k]
        for j in order[:i]:  # runners already decided, with at least as many steps
            rj = runners[j]
            if j in prefix or not _same_start(rk, rj):
                continue
            if _steps(rk) == 0 or _same_updates(rk, rj):
                prefix[k] = j
                break
    return prefix


def _check_together(runners: dict[str, TTARunner], images: torch.Tensor, labels: torch.Tensor) -> int:
    """What :func:`evaluate_together` needs, checked before any work; returns the number of views."""
    if not runners or not all(isinstance(r, TTARunner) for r in runners.values()):
        raise InputError(f"expected a non-empty dict of TTARunners, got {runners!r:.80}")
    first = next(iter(runners.values()))
    if any(r.policy is not first.policy or r.classnames != first.classnames for r in runners.values()):
        raise InputError("evaluate_together needs runners that adapt one policy over one list of class names")
    adapting = {r.cfg.n_views for r in runners.values() if r.cfg.method != "zero-shot"}
    if len(adapting) > 1:
        raise InputError(
            f"evaluate_together needs one number of views for every method, got {sorted(adapting)}"
        )
    if any(r.cfg.momentum is not None for r in runners.values()):
        raise InputError("evaluate_together cannot share the policy between runners with an EMA buffer")
    if len(images) == 0 or len(images) != len(labels):
        raise InputError(f"expected as many labels as test images (> 0), got {len(images)} and {len(labels)}")
    if int(labels.max()) >= len(first.classnames) or int(labels.min()) < 0:
        raise InputError(
            f"labels must index the {len(first.classnames)} class names, got max {int(labels.max())}"
        )
    return adapting.pop() if adapting else 1
