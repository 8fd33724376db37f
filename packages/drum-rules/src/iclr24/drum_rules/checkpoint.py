"""Saving and loading a trained model together with its beta and where its data came from, and loading the
official FaithfulRE checkpoints (``model/family-drum-r3s3.pt``: a bare ``state_dict`` of ``Learner``).

A trained model is a folder (:func:`save_model`, ``drum-rules train``): ``model.safetensors``, ``config.json`` (the
DRUM constructor's arguments) and ``provenance.json`` (the command, seed, steps, CPU seconds, and the model's beta
and data), read back by :func:`load_model` or ``DRUM.from_pretrained``. The earlier single-file checkpoints
(:func:`save_checkpoint`, ``model.pt``) keep loading through :func:`load_checkpoint` and :func:`load_model`.

Every ``.pt`` file is read with ``torch.load(..., weights_only=True)``: tensors and plain containers only, so a
crafted pickle cannot run code. A file that is not a readable checkpoint is one ``ValueError`` naming it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

import torch

from iclr24.paperkit import atomic_torch_save
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.pretrained import CONFIG_FILE
from iclr24.paperkit.pretrained import read_model_folder

from . import synthetic
from .data import load_dataset
from .kg import KGData
from .model import DRUM

__all__ = [
    "save_model",
    "load_model",
    "save_checkpoint",
    "load_checkpoint",
    "load_official_checkpoint",
    "official_key_map",
    "resolve_data",
]

FORMAT = "drum-rules/1"


def resolve_data(spec: str, seed: int = 0, data_dir: str | os.PathLike | None = None) -> KGData:
    """``family`` / ``family:N`` (the built-in synthetic KG with N families), ``kinships``/``umls``/``nations``
    (the real KGs in paperkit's data folder, see :func:`~iclr24.drum_rules.data.load_real_kg`) or a folder."""
    from .data import REAL_KGS
    from .data import load_real_kg

    if spec == "family" or spec.startswith("family:"):
        n = spec.split(":", 1)[1] if ":" in spec else "40"
        if not n.isdigit() or int(n) < 1:
            raise InputError(f"expected family:N with N a positive integer, got {spec!r}")
        return synthetic.family(int(n), seed=seed)
    if spec in REAL_KGS:
        return load_real_kg(spec, data_dir=data_dir, seed=seed)
    return load_dataset(spec, seed=seed)


def save_checkpoint(
    path: str | os.PathLike, model: DRUM, beta: float, data_spec: str, extra: dict | None = None
) -> Path:
    """Tensors (the state dict) plus a JSON string with the model config, beta, the data and ``extra``."""
    meta = {
        "format": FORMAT,
        "config": model.config(),
        "beta": float(beta),
        "data": data_spec,
        "extra": extra or {},
    }
    return atomic_torch_save({"state_dict": model.state_dict(), "meta": json.dumps(meta)}, path)


def save_model(
    folder: str | os.PathLike,
    model: DRUM,
    beta: float,
    data_spec: str,
    provenance: Mapping | None = None,
) -> Path:
    """``model.save_pretrained(folder)`` with the model's threshold ``beta`` and its data (``family:25``, a
    folder, ``umls``) recorded in ``provenance.json`` beside any other ``provenance`` fields (command, seed,
    steps, CPU seconds). :func:`load_model` reads all three back."""
    if not isinstance(model, DRUM):
        raise InputError(f"model must be a DRUM, got {type(model).__name__}")
    check_float(beta, "beta", minimum=0)
    if not isinstance(data_spec, str):
        raise InputError(f"data_spec must be a string (family:N, a folder, umls, ...), got {data_spec!r}")
    prov = {**dict(provenance or {}), "beta": float(beta), "data": data_spec}
    return model.save_pretrained(folder, provenance=prov)


def load_model(path: str | os.PathLike) -> tuple[DRUM, float | None, str | None]:
    """``(model, beta, data_spec)`` from a model folder (:func:`save_model` / ``drum-rules train``: OUT/model), a
    run folder holding one (OUT, with OUT/model or an older OUT/model.pt), or an earlier ``model.pt`` file
    (:func:`save_checkpoint`). ``beta``/``data_spec`` are None when the folder's provenance records none (a
    folder written by ``DRUM.save_pretrained`` alone). The model is in eval mode."""
    p = Path(path)
    if p.is_dir() and not (p / CONFIG_FILE).exists():
        if (p / "model" / CONFIG_FILE).is_file():
            p = p / "model"
        elif (p / "model.pt").is_file():
            p = p / "model.pt"
        else:
            raise InputFileError(
                f"{p} is a folder without a model: expected a model folder (model.safetensors, {CONFIG_FILE}, "
                "provenance.json), a run folder of drum-rules train (holding model/), or a model.pt file",
                p,
            )
    if not p.is_dir():
        if not p.exists() and p.suffix != ".pt":
            raise InputFileError(
                f"{p} does not exist; train a model first (drum-rules train DATA --out DIR) and pass "
                "--model DIR/model",
                p,
            )
        return load_checkpoint(p)
    _, _, prov = read_model_folder(p)
    m = DRUM.from_pretrained(p)
    m.eval()
    beta, data = prov.get("beta"), prov.get("data")
    try:
        beta = None if beta is None else check_float(beta, "beta", minimum=0)
    except InputError:
        raise InputFileError(f"{p / 'provenance.json'} records beta {beta!r}, not a number >= 0", p) from None
    return m, beta, None if data is None else str(data)


def _read(path: str | os.PathLike) -> tuple[Path, object]:
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p} is a folder; expected a checkpoint file such as {p / 'model.pt'}")
    if not p.is_file():
        raise InputFileError(
            f"{p} does not exist; train a model first (drum-rules train DATA --out DIR) and "
            "pass --model DIR/model (or an older DIR/model.pt)"
        )
    try:
        return p, torch.load(p, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - UnpicklingError, PytorchStreamReader RuntimeError, EOFError, ...
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        raise InputError(
            f"{p} is not a readable checkpoint (torch.load with weights_only=True refused it: "
            f"{type(e).__name__}: {first}); it is corrupt, truncated, or not a tensors-only file"
        ) from None


def load_checkpoint(path: str | os.PathLike) -> tuple[DRUM, float, str]:
    """``(model, beta, data_spec)`` from a file written by :func:`save_checkpoint` / ``drum-rules train``."""
    p, ck = _read(path)
    if not isinstance(ck, dict) or "state_dict" not in ck or "meta" not in ck:
        hint = (
            "; it looks like an official FaithfulRE state_dict: use load_official_checkpoint"
            if isinstance(ck, Mapping) and any(str(k).startswith("lstm_list.") for k in ck)
            else ""
        )
        raise InputError(f"{p} is not a drum-rules checkpoint (no state_dict/meta entries){hint}")
    try:
        meta = json.loads(ck["meta"])
        c = meta["config"]
        m = DRUM(
            int(c["n_relations"]),
            rank=int(c["rank"]),
            steps=int(c["steps"]),
            aggregation=c["aggregation"],
            normalize=bool(c["normalize"]),
            embed_dim=int(c["embed_dim"]),
            hidden_dim=int(c["hidden_dim"]),
            thr=float(c["thr"]),
            seed=None,
        )
        sd = ck["state_dict"]
        m.fixed_attention = sd.get("fixed_attention", m.fixed_attention)
        m.fixed_mask = sd.get("fixed_mask", m.fixed_mask)
        m.load_state_dict(sd)
        m.head_relations = [int(h) for h in c["head_relations"]]
        beta, data = float(meta["beta"]), str(meta["data"])
    except (KeyError, TypeError, json.JSONDecodeError, RuntimeError) as e:
        raise InputError(f"{p} is a damaged drum-rules checkpoint: {type(e).__name__}: {e}") from None
    m.eval()
    return m, beta, data


_OFFICIAL = [
    (re.compile(r"^query_embeddings\.(.*)$"), r"query_embedding.\1"),
    (re.compile(r"^lstm_list\.(\d+)\.(.*)$"), r"lstms.\1.\2"),
    (re.compile(r"^linear\.(weight|bias)$"), r"linear.\1"),
]


def official_key_map(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """FaithfulRE ``Learner`` parameter names -> ours: ``query_embeddings`` -> ``query_embedding``,
    ``lstm_list.j`` -> ``lstms.j``, ``linear`` unchanged. An unknown key is an error (no silent drops)."""
    out = {}
    for k, v in state_dict.items():
        for pat, rep in _OFFICIAL:
            if pat.match(k):
                out[pat.sub(rep, k)] = v
                break
        else:
            raise InputError(
                f"unexpected parameter {k!r} in an official FaithfulRE checkpoint; expected query_embeddings.*, "
                "lstm_list.<j>.*, linear.weight/bias"
            )
    return out


def load_official_checkpoint(
    path: str | os.PathLike, steps: int = 2, aggregation: str = "sum", normalize: bool = False
) -> DRUM:
    """A model from an official FaithfulRE checkpoint (e.g. ``model/family-drum-r3s3.pt``: rank 3, num_step 3).

    Sizes come from the tensors (2|R|+1 operators from ``linear``, rank from ``lstm_list``, embedding and hidden
    sizes); ``steps`` is T = the official ``num_step - 1`` (``s3`` in the file name -> 2), which the weights do
    not record. ``aggregation``: ``"sum"`` (drum), ``"sm"`` (smdrum) or ``"mm"`` (mmdrum). The official code
    analyses with ``no_norm``, hence ``normalize=False``."""
    p, sd = _read(path)
    if isinstance(sd, dict) and "state_dict" in sd and "meta" in sd:
        raise InputError(f"{p} is a drum-rules checkpoint, not an official one: use load_checkpoint")
    if not isinstance(sd, Mapping) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise InputError(f"{p} is not an official FaithfulRE state_dict (a mapping of names to tensors)")
    ours = official_key_map(sd)
    try:
        W = ours["linear.weight"]
        emb = ours["query_embedding.weight"]
        ranks = sorted({int(k.split(".")[1]) for k in ours if k.startswith("lstms.")})
        hidden = ours["lstms.0.weight_hh_l0"].shape[1]
    except KeyError as e:
        raise InputError(f"{p}: official checkpoint lacks {e.args[0]!r}") from None
    K = W.shape[0]
    if K % 2 != 1 or emb.shape[0] != K or W.shape[1] != 2 * hidden or ranks != list(range(len(ranks))):
        raise InputError(
            f"{p}: inconsistent official checkpoint shapes: linear {tuple(W.shape)}, embeddings "
            f"{tuple(emb.shape)}, LSTM hidden {hidden}, ranks {ranks}"
        )
    m = DRUM(
        (K - 1) // 2,
        rank=len(ranks),
        steps=steps,
        aggregation=aggregation,
        normalize=normalize,
        embed_dim=emb.shape[1],
        hidden_dim=hidden,
        seed=None,
    )
    missing, unexpected = m.load_state_dict(ours, strict=False)
    missing = [k for k in missing if not k.startswith("fixed_")]
    if missing or unexpected:
        raise InputError(f"{p}: official checkpoint does not fit: missing {missing}, unexpected {unexpected}")
    m.eval()
    return m
