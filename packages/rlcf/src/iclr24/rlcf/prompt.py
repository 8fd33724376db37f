"""CoOp's prompt learner for an open_clip CLIP (the policy of RLCF's prompt-tuning variant).

The prompt of class c is [SOS] [V]_1 ... [V]_M [CLASS_c] . [EOS], where the M context vectors [V]_m are shared by
all classes and are the only trainable parameters (official n_ctx = 4, initialised from the token embeddings of
"a photo of a"; class token last). The text encoder runs on these embeddings instead of token ids.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int

__all__ = ["PromptLearner"]


class PromptLearner(nn.Module):
    """``PromptLearner(clip, classnames, tokenizer, ctx_init="a photo of a")``; ``forward() -> (C, d)`` normalised
    text features. Without ``ctx_init``, ``n_ctx`` random N(0, 0.02^2) context vectors ("X X X X {class}.")."""

    def __init__(
        self,
        clip: nn.Module,
        classnames,
        tokenizer,
        *,
        ctx_init: str | None = "a photo of a",
        n_ctx: int = 4,
        seed: int = 0,
    ) -> None:
        super().__init__()
        from .data import class_prompts
        from .reward import check_tokens

        needed = ("token_embedding", "positional_embedding", "transformer", "ln_final", "text_projection")
        missing = [a for a in needed if not hasattr(clip, a)]
        if missing:
            raise InputError(
                f"PromptLearner needs an open_clip CLIP with a built-in text tower; {type(clip).__name__} lacks "
                f"{', '.join(missing)}"
            )
        names = [n.replace("_", " ") for n in class_prompts(classnames, "{}")]
        ctx_len = int(clip.context_length)
        if ctx_init:
            n_ctx = int((tokenizer([ctx_init], context_length=ctx_len) > 0).sum()) - 2  # minus [SOS], [EOS]
            prefix = ctx_init
        else:
            check_int(n_ctx, "n_ctx", minimum=1, maximum=max(1, ctx_len - 3))
            prefix = " ".join(["X"] * n_ctx)
        tokens = tokenizer([f"{prefix} {n}." for n in names], context_length=ctx_len)
        tokens = check_tokens(clip, tokens, "policy")
        if (tokens[:, -1] != 0).any():
            raise InputError(f"a class prompt does not fit the policy's context length {ctx_len}")
        self.clip = [clip]  # not a submodule: its parameters stay out of this module's state
        self.n_ctx = n_ctx
        self.classnames = names
        with torch.no_grad():
            emb = clip.token_embedding(tokens.to(clip.token_embedding.weight.device)).float().cpu()
        if ctx_init:
            ctx = emb[0, 1 : 1 + n_ctx].clone()
        else:
            g = torch.Generator().manual_seed(seed)
            ctx = torch.randn(n_ctx, emb.shape[-1], generator=g) * 0.02
        self.ctx = nn.Parameter(ctx)
        self.register_buffer("token_prefix", emb[:, :1].clone(), persistent=False)
        self.register_buffer("token_suffix", emb[:, 1 + n_ctx :].clone(), persistent=False)
        self.register_buffer("tokenized_prompts", tokens, persistent=False)
        self.register_buffer("ctx_init_state", ctx.detach().clone(), persistent=False)

    @torch.no_grad()
    def reset(self) -> None:
        """Back to the initial context vectors."""
        self.ctx.copy_(self.ctx_init_state)

    def forward(self) -> torch.Tensor:
        from open_clip.transformer import text_global_pool

        clip = self.clip[0]
        c = self.token_prefix.shape[0]
        x = torch.cat([self.token_prefix, self.ctx.unsqueeze(0).expand(c, -1, -1), self.token_suffix], dim=1)
        x = x + clip.positional_embedding.float()
        x = clip.transformer(x, attn_mask=clip.attn_mask)
        x = clip.ln_final(x)
        x = text_global_pool(
            x, self.tokenized_prompts, clip.text_pool_type, getattr(clip, "text_eos_id", None)
        )
        proj = clip.text_projection
        x = proj(x) if isinstance(proj, nn.Linear) else (x @ proj if proj is not None else x)
        return F.normalize(x.float(), dim=-1)
