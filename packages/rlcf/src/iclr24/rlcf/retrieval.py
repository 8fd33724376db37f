"""RLCF for text-image retrieval (Zhao et al., ICLR 2024, Sec. 3.4; official ``retrieval/clip_ret_policy.py``).

Image -> text: for a query image q the policy scores every gallery caption, s_j = tau cos(E_img(q), E_txt(t_j));
the K best captions (official K = 20) are the "samples", each rewarded by the frozen reward CLIP's CLIPScore of
(q, t_j); the loss is mean_k r~_k CE(s, j_k) (Eq. (3)) and the image encoder is tuned (8-10 steps, lr 1e-6 in the
official scripts). Text -> image is the mirror image: the text encoder is tuned against fixed gallery image features
(K = 12). Episodic: parameters and optimiser state are reset after every query.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe

from .losses import policy_gradient_loss
from .losses import sample_top_k
from .model import check_images
from .reward import CLIPReward
from .reward import check_tokens
from .reward import rewards_post_process

__all__ = ["RetrievalTTA", "recall_at_k"]


def recall_at_k(
    scores: torch.Tensor, targets: list[set[int]] | torch.Tensor, ks=(1, 5, 10)
) -> dict[str, float]:
    """R@k (%) of a score matrix ``(Q, G)``: a query counts when one of its gallery targets is in its top k."""
    check_tensor(scores, "scores", ndim=2, kind="float", finite=True)
    q, g = scores.shape
    if len(targets) != q:
        raise InputError(f"targets must give one target (set) per query ({q}), got {len(targets)}")
    if isinstance(targets, torch.Tensor):
        check_tensor(targets, "targets", ndim=1, kind="int")
        tgt = [{int(t)} for t in targets]
    else:
        if not all(isinstance(t, set | frozenset | list | tuple) for t in targets):
            raise InputError(
                f"targets must be a tensor of indices or a list of sets of indices, got {describe(targets)}"
            )
        tgt = [set(t) for t in targets]
    if any(not isinstance(i, int) or not 0 <= i < g for t in tgt for i in t):
        raise InputError(f"targets must be gallery indices in [0, {g})")
    if (
        isinstance(ks, int)
        or not ks
        or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in ks)
    ):
        raise InputError(f"ks must be a non-empty sequence of ints >= 1, got {ks!r}")
    order = scores.argsort(dim=1, descending=True)
    out = {}
    for k in ks:
        top = order[:, : min(k, scores.shape[1])].tolist()
        out[f"R@{k}"] = 100.0 * sum(bool(t & set(row)) for t, row in zip(tgt, top)) / len(tgt)
    return out


class RetrievalTTA:
    """``RetrievalTTA(policy, reward, direction="i2t")``; ``set_gallery(...)``, then ``query(x) -> (G,)`` scores.

    i2t: the gallery is captions (policy tokens, reward tokens), queries are images; t2i: the gallery is images,
    queries are (policy tokens, reward tokens) pairs of one caption."""

    def __init__(
        self,
        policy: nn.Module,
        reward: CLIPReward,
        *,
        direction: str = "i2t",
        steps: int = 8,
        lr: float = 1e-6,
        weight_decay: float = 5e-4,
        sample_k: int | None = None,
        amplify: bool = False,
    ) -> None:
        if direction not in ("i2t", "t2i"):
            raise InputError(f"direction must be 'i2t' or 't2i', got {direction!r}")
        if not isinstance(reward, CLIPReward):
            raise InputError(f"reward must be a CLIPReward, got {type(reward).__name__}")
        check_float(lr, "lr", minimum=0, maximum=10)
        check_float(weight_decay, "weight_decay", minimum=0)
        if isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps <= 10**6:
            raise InputError(f"steps must be an int >= 0, got {steps!r}")
        self.policy, self.reward, self.direction = policy, reward, direction
        self.steps, self.amplify = steps, amplify
        self.sample_k = sample_k if sample_k is not None else (20 if direction == "i2t" else 12)
        for p in policy.parameters():
            p.requires_grad_(False)
        if direction == "i2t":
            self.trainable: nn.Module | list = policy.visual
            params = list(policy.visual.parameters())
        else:
            names = ("token_embedding", "positional_embedding", "transformer", "ln_final", "text_projection")
            params = [p for n, p in policy.named_parameters() if n.split(".")[0] in names]
            self.trainable = policy
        for p in params:
            p.requires_grad_(True)
        self.params = params
        self.optimizer = torch.optim.AdamW(params, lr=lr, eps=1e-6, weight_decay=weight_decay)
        self._optim_state = copy.deepcopy(self.optimizer.state_dict())
        self._init = [p.detach().clone() for p in params]
        self.gallery: torch.Tensor | None = None
        self.reward_gallery: torch.Tensor | None = None

    @torch.no_grad()
    def reset(self) -> None:
        for p, p0 in zip(self.params, self._init):
            p.copy_(p0)
        self.optimizer.load_state_dict(copy.deepcopy(self._optim_state))

    @torch.no_grad()
    def set_gallery(self, policy_input: torch.Tensor, reward_input: torch.Tensor | None = None) -> None:
        """i2t: tokenised captions for the policy and the reward model; t2i: gallery images (one tensor for both,
        or separately preprocessed ones)."""
        reward_input = policy_input if reward_input is None else reward_input
        if self.direction == "i2t":
            pt = check_tokens(self.policy, policy_input, "policy")
            rt = check_tokens(self.reward.model, reward_input, "reward model")
            self.gallery = F.normalize(self.policy.encode_text(pt).float(), dim=-1)
            self.reward_gallery = F.normalize(self.reward.model.encode_text(rt).float(), dim=-1)
        else:
            check_images(self.policy, policy_input, "policy")
            check_images(self.reward.model, reward_input, "reward model")
            self.gallery = F.normalize(self.policy.encode_image(policy_input).float(), dim=-1)
            self.reward_gallery = F.normalize(self.reward.model.encode_image(reward_input).float(), dim=-1)
        if self.sample_k > self.gallery.shape[0]:
            raise InputError(f"sample_k={self.sample_k} exceeds the gallery of {self.gallery.shape[0]} items")

    def _scores(self, q: torch.Tensor) -> torch.Tensor:
        scale = self.policy.logit_scale.exp().float()
        if self.direction == "i2t":
            f = self.policy.encode_image(q)
        else:
            f = self.policy.encode_text(q)
        return scale * F.normalize(f.float(), dim=-1) @ self.gallery.t()

    def query(self, policy_query: torch.Tensor, reward_query: torch.Tensor | None = None) -> torch.Tensor:
        """Adapt on one query (an image ``(1, C, H, W)`` or tokens ``(1, L)``) and return its gallery scores."""
        if self.gallery is None:
            raise RuntimeError("call set_gallery(...) first")
        reward_query = policy_query if reward_query is None else reward_query
        if self.direction == "i2t":
            check_images(self.policy, policy_query, "policy")
            check_images(self.reward.model, reward_query, "reward model")
        self.reset()
        with torch.no_grad():
            enc = self.reward.model.encode_image if self.direction == "i2t" else self.reward.model.encode_text
            rq = F.normalize(enc(reward_query).float(), dim=-1)
        self.policy.train()
        for _ in range(self.steps):
            s = self._scores(policy_query)
            idx = sample_top_k(s.detach(), self.sample_k)
            r = torch.clamp(self.reward.weight * (self.reward_gallery[idx] @ rq[0]), min=0.0)  # Eq. (4)
            loss = policy_gradient_loss(s, idx, rewards_post_process(r.reshape(1, -1), self.amplify))
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        self.policy.eval()
        with torch.no_grad():
            out = self._scores(policy_query)[0]
        self.reset()
        return out
