"""The real-weights path (a tiny open_clip checkpoint saved and loaded back) and the prompt learner."""

import json

import open_clip
import pytest
import torch

from iclr24.rlcf.data import DIGIT_NAMES as NAMES
from iclr24.rlcf.model import load_clip
from iclr24.rlcf.model import tokenize
from iclr24.rlcf.prompt import PromptLearner

TINY = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 16, "layers": 1, "width": 64, "patch_size": 8},
    "text_cfg": {"context_length": 12, "vocab_size": 49408, "width": 64, "heads": 1, "layers": 1},
}


def tok16(texts, context_length=16):
    return tokenize(texts, context_length)


def _tiny_config(tmp_path):
    p = tmp_path / "rlcf-tiny-test.json"
    p.write_text(json.dumps(TINY))
    return p


def test_open_clip_state_dict_round_trip(tmp_path):
    cfg = _tiny_config(tmp_path)
    open_clip.add_model_config(cfg)
    torch.manual_seed(0)
    model = open_clip.create_model("rlcf-tiny-test")
    ckpt = tmp_path / "tiny.pt"
    torch.save(model.state_dict(), ckpt)
    loaded, tokenizer = load_clip(ckpt, arch=str(cfg))
    for (n, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(a, b), n
    x = torch.rand(2, 3, 16, 16)
    assert torch.allclose(loaded.encode_image(x), model.encode_image(x))
    assert tokenizer(["a photo of a cat."]).shape[1] == 12  # the architecture's context length


def test_openai_state_dict_through_open_clip(tmp_path):
    """An OpenAI-layout state dict (what a non-JIT ``ViT-B-16.pt`` holds; QuickGELU as OpenAI's models) loads with
    its architecture inferred from the tensors."""
    torch.manual_seed(0)
    model = open_clip.model.CLIP(16, open_clip.model.CLIPVisionCfg(**TINY["vision_cfg"]),
                                 open_clip.model.CLIPTextCfg(**TINY["text_cfg"]), quick_gelu=True)  # fmt: skip
    ckpt = tmp_path / "ViT-tiny.pt"
    torch.save(model.state_dict(), ckpt)
    loaded, _ = load_clip(ckpt)
    tok = open_clip.tokenize(["a photo of a dog."], context_length=12)
    # open_clip builds OpenAI models through fp16 weights (then casts to fp32): equal up to fp16 rounding
    assert torch.allclose(loaded.encode_text(tok), model.encode_text(tok), atol=2e-2)
    assert not torch.allclose(loaded.encode_text(tok), -model.encode_text(tok), atol=2e-2)


def test_missing_or_foreign_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="never downloaded"):
        load_clip(tmp_path / "nope.pt")
    bad = tmp_path / "notes.pt"
    bad.write_text("not a checkpoint")
    with pytest.raises(ValueError, match="not an OpenAI CLIP checkpoint"):
        load_clip(bad)
    other = tmp_path / "other.pt"
    torch.save({"weight": torch.zeros(3)}, other)
    with pytest.raises(ValueError, match="not an open_clip rlcf-tiny-test checkpoint"):
        load_clip(other, arch=str(_tiny_config(tmp_path)))
    with pytest.raises(ValueError, match="unknown open_clip architecture"):
        load_clip(other, arch="ViT-Q-99")
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        load_clip(empty)


def test_prompt_learner_starts_at_the_hand_crafted_prompt(toy_pair):
    policy, _ = toy_pair
    pl = PromptLearner(policy, NAMES, tok16, ctx_init="a photo of the digit")
    want = torch.nn.functional.normalize(
        policy.encode_text(tok16([f"a photo of the digit {n}." for n in NAMES])), dim=-1
    )
    assert torch.allclose(pl(), want, atol=1e-5)
    with torch.no_grad():
        pl.ctx.add_(torch.randn_like(pl.ctx))  # (a constant shift would vanish in LayerNorm)
    assert not torch.allclose(pl(), want, atol=1e-3)
    pl.reset()
    assert torch.allclose(pl(), want, atol=1e-5)
    rand = PromptLearner(policy, NAMES, tok16, ctx_init=None, n_ctx=4)
    assert rand.ctx.shape == (4, 32) and rand.ctx.std() < 0.05
    with pytest.raises(ValueError, match="does not fit"):
        PromptLearner(policy, ["a very long class name " * 4], tok16)
