"""Save and load a model made by :func:`~.model.build_mlp_model`: its build spec and weights in one file
(``weights_only`` loading, format tag checked), or a model folder (``save_pretrained``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from .model import CMVAE
from .model import build_mlp_model

__all__ = ["CHECKPOINT_FORMAT", "load_checkpoint", "save_checkpoint"]


def save_checkpoint(model: CMVAE, path: str | os.PathLike) -> Path:
    """Write a model built by :func:`build_mlp_model` (its build spec and its weights) atomically."""
    from iclr24.paperkit import atomic_torch_save

    if getattr(model, "spec", None) is None:
        raise InputError(
            "save_checkpoint needs a model made by build_mlp_model; for your own modules save model.state_dict()"
        )
    return atomic_torch_save(
        {"format": CHECKPOINT_FORMAT, "spec": json.dumps(model.spec), "state": model.state_dict()}, path
    )


CHECKPOINT_FORMAT = "iclr24.cmvae/1"


def load_checkpoint(path: str | os.PathLike, map_location: str = "cpu") -> CMVAE:
    """Rebuild a model from a model folder (``save_pretrained``; what ``cmvae train`` writes into ``OUT/model``) or
    from a file saved by :func:`save_checkpoint` (paperkit's ``load_checkpoint``: ``weights_only=True``,
    format tag and keys checked; an untagged file of an earlier version is accepted when it has them), on
    ``map_location``. A damaged build spec or weights that do not fit it are one ``ValueError`` naming the file."""
    from iclr24.paperkit import load_checkpoint as load_checked

    p = Path(path)
    if p.is_dir():
        model = CMVAE.from_pretrained(p)
        return model.to(map_location) if str(map_location) != "cpu" else model
    if not p.is_file():
        raise InputFileError(f"checkpoint not found: {p} (write one with `cmvae train` or save_checkpoint)")
    obj = load_checked(
        p,
        format=CHECKPOINT_FORMAT,
        required={"spec": str, "state": dict},
        what="cmvae checkpoint",
        legacy=True,
    )
    try:
        spec = json.loads(obj["spec"])
    except ValueError:
        raise InputError(f"{p}: damaged cmvae checkpoint: its build spec is not valid JSON") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("input_dims"), list):
        raise InputError(f"{p}: damaged cmvae checkpoint: its build spec has no input_dims list")
    spec = dict(spec)
    dims = spec.pop("input_dims")
    try:
        model = build_mlp_model(dims, **spec)
    except (TypeError, ValueError, RuntimeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(
            f"{p}: damaged cmvae checkpoint: its build spec cannot be built ({first[:200]})"
        ) from None
    try:
        model.load_state_dict(obj["state"])
    except (RuntimeError, TypeError, AttributeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(
            f"{p}: damaged cmvae checkpoint: its weights do not fit the model its spec builds ({first[:200]})"
        ) from None
    return model.to(map_location) if str(map_location) != "cpu" else model
