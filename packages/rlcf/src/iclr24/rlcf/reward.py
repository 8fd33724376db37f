"""The CLIP reward (Zhao et al., ICLR 2024, Sec. 3.2; official ``TPT/clip_reward.py``).

Notation: x_v the v-th selected view of a test image, y_{v,k} (k = 1..K) the classes sampled from the policy for it,
t_y the reward model's prompt of class y, E^R_img / E^R_txt the frozen reward CLIP's encoders, w = 2.5.
    Eq. (4): r(x, y) = max(w * cos(E^R_img(x), E^R_txt(t_y)), 0)                           (CLIPScore)
    Eq. (5): r~_{v,k} = r_{v,k} - mean_k' r_{v,k'}       (the baseline b; optionally / (std_k' r_{v,k'} + 1e-5))
The reward model is frozen: it never gets a gradient and its parameters never change.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_tensor

__all__ = ["clip_score", "rewards_post_process", "CLIPReward", "check_tokens"]


def clip_score(
    image_features: torch.Tensor, text_features: torch.Tensor, weight: float = 2.5
) -> torch.Tensor:
    """Per-pair CLIPScore of matched rows, ``(N,)``; features need not be normalised (they are here)."""
    if image_features.shape != text_features.shape or image_features.ndim != 2:
        raise InputError(
            f"expected image and text features of one shape (N, d), got {tuple(image_features.shape)} and "
            f"{tuple(text_features.shape)}"
        )
    cos = (F.normalize(image_features.float(), dim=-1) * F.normalize(text_features.float(), dim=-1)).sum(-1)
    # Eq. (4): r = max(w * cos(E_img(x), E_txt(t_y)), 0)
    return torch.clamp(weight * cos, min=0.0)


def rewards_post_process(scores: torch.Tensor, amplify: bool = False) -> torch.Tensor:
    """``scores`` ``(B, K)`` (per view) or ``(B*K,)`` (all views at once, the official ``process_batch``): subtract
    the mean over the last axis (and divide by its unbiased std + 1e-5 with ``amplify``); returns a flat tensor.
    A last axis of length 1 is returned unchanged, as in the official code."""
    check_tensor(scores, "scores", ndim=(1, 2), kind="float", allow_empty=True)
    if scores.shape[-1] > 1:
        # Eq. (5): r~ = r - mean_k r  (the baseline b of REINFORCE)
        centred = scores - scores.mean(-1, keepdim=True)
        if amplify:
            centred = centred / (scores.std(-1, keepdim=True) + 1e-5)
        scores = centred
    return scores.flatten()


def check_tokens(model: nn.Module, tokens: torch.Tensor, who: str = "model") -> torch.Tensor:
    """Tokenised prompts that ``model``'s text tower can embed: integer ``(C, L)`` with ``C >= 1``, ``L`` equal to
    its context length and every id inside its vocabulary; otherwise a ``ValueError`` saying what does not match."""
    if (
        not isinstance(tokens, torch.Tensor)
        or tokens.ndim != 2
        or tokens.dtype not in (torch.long, torch.int)
    ):
        raise InputError(f"expected tokenised prompts as an integer tensor (C, L), got {tokens!r:.80}")
    if tokens.shape[0] == 0:
        raise InputError("expected at least one class prompt, got zero classes")
    ctx = getattr(model, "context_length", None)
    vocab = getattr(model, "vocab_size", None)
    emb = getattr(model, "token_embedding", None)
    if emb is None or ctx is None:
        raise InputError(f"the {who} has no open_clip text tower (token_embedding, context_length)")
    vocab = vocab or emb.num_embeddings
    if tokens.shape[1] != ctx:
        raise InputError(
            f"the {who}'s text tower takes {ctx} tokens per prompt, but the prompts were tokenised to "
            f"{tokens.shape[1]}: tokenise with the {who}'s own tokenizer / context length"
        )
    if int(tokens.max()) >= min(vocab, emb.num_embeddings) or int(tokens.min()) < 0:
        raise InputError(
            f"token id {int(tokens.max())} is outside the {who}'s vocabulary of {emb.num_embeddings}: the "
            "tokenizer does not match its embedding"
        )
    return tokens.long()


class CLIPReward:
    """A frozen CLIP as the reward model: ``set_class_prompts(tokens)`` once per label set,
    ``set_image_features(views)`` once per test sample (the selected views), then ``rewards(index, k)``.

    ``weight`` is w of Eq. (4) (official 2.5); ``amplify`` divides the centred rewards by their std
    (``--reward_amplify``, off by default); ``process_batch`` centres over all views x K instead of per view.
    ``resolution``: the reward model's input side; views of another size are resized bicubically."""

    def __init__(
        self,
        model: nn.Module,
        *,
        weight: float = 2.5,
        amplify: bool = False,
        process_batch: bool = False,
        resolution: int | None = None,
    ) -> None:
        if not hasattr(model, "encode_image") or not hasattr(model, "encode_text"):
            raise InputError(
                f"the reward model must be a CLIP with encode_image/encode_text, got {type(model).__name__}"
            )
        if not weight > 0:
            raise InputError(f"the CLIPScore weight must be > 0, got {weight}")
        self.model = model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.weight = float(weight)
        self.amplify = bool(amplify)
        self.process_batch = bool(process_batch)
        self.resolution = resolution
        self.class_features: torch.Tensor | None = None
        self.image_features: torch.Tensor | None = None

    @torch.no_grad()
    def set_class_prompts(self, tokens: torch.Tensor) -> torch.Tensor:
        """Encode the class prompts (``(C, L)`` token ids from the reward model's tokenizer)."""
        tokens = check_tokens(self.model, tokens, "reward model")
        dev = next(self.model.parameters()).device
        self.class_features = F.normalize(self.model.encode_text(tokens.to(dev)).float(), dim=-1)
        return self.class_features

    @torch.no_grad()
    def set_image_features(self, images: torch.Tensor) -> torch.Tensor:
        """Encode (and cache) the views the policy is adapted on, ``(B, C, H, W)``."""
        from .model import check_images

        check_images(self.model, images, "reward model", check_size=False)
        if self.resolution is not None and images.shape[-1] != self.resolution:
            images = F.interpolate(images, size=self.resolution, mode="bicubic", align_corners=True)
        check_images(self.model, images, "reward model")
        self.image_features = F.normalize(self.model.encode_image(images).float(), dim=-1)
        return self.image_features

    @torch.no_grad()
    def scores(self, index: torch.Tensor, k: int) -> torch.Tensor:
        """CLIPScore ``(B*K,)`` of view ``i // K`` with class ``index[i]`` (rows ordered as ``topk(...).flatten()``)."""
        if self.class_features is None or self.image_features is None:
            raise RuntimeError("call set_class_prompts(...) and set_image_features(...) first")
        img = torch.repeat_interleave(self.image_features, k, dim=0)
        return clip_score(img, self.class_features[index], self.weight)

    @torch.no_grad()
    def rewards(self, index: torch.Tensor, k: int) -> torch.Tensor:
        """Post-processed rewards r~ ``(B*K,)`` (Eq. (5))."""
        s = self.scores(index, k)
        return rewards_post_process(s if self.process_batch else s.reshape(-1, k), self.amplify)

    @torch.no_grad()
    def class_logits(self) -> torch.Tensor:
        """The reward model's zero-shot logits ``tau * cos`` of the cached views, ``(B, C)`` (the KD teacher)."""
        if self.class_features is None or self.image_features is None:
            raise RuntimeError("call set_class_prompts(...) and set_image_features(...) first")
        return self.model.logit_scale.exp().float() * self.image_features @ self.class_features.t()
