"""Load a trained model back: a model folder (``save_pretrained``) or a checkpoint file of :meth:`AEMC.save`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from .completion import AEMC
from .completion import AEMCNE
from .completion import CHECKPOINT_FORMAT
from .config import FitConfig
from .data import Ratings

__all__ = ["load_model"]

_REQUIRED = {
    "spec": dict,
    "config": dict,
    "shape": (list, tuple),
    "shift": (float, int),
    "scale": (float, int),
    "state": dict,
    "users": torch.Tensor,
    "items": torch.Tensor,
    "values": torch.Tensor,
}


def load_model(path: str | Path) -> AEMC:
    """Load a model folder written by :meth:`AEMC.save_pretrained` (what ``aemc-ne train`` writes into
    ``OUT/model``), or a checkpoint file written by :meth:`AEMC.save` (``weights_only=True``: no pickle).

    Anything else is one ``ValueError`` line (paperkit's :func:`~iclr24.paperkit.load_checkpoint`): a file torch
    cannot read as plain tensors and containers (never with advice to load it unsafely), a dict without this
    package's format tag, missing or mistyped keys, or a spec and weights that do not fit together."""
    from iclr24.paperkit.checkpoint import load_checkpoint

    p = Path(path)
    if p.is_dir():
        return AEMC.from_pretrained(p)
    if not p.is_file():
        raise InputFileError(f"model checkpoint not found at {p}; write one with `aemc-ne train --out DIR`")
    obj = load_checkpoint(p, format=CHECKPOINT_FORMAT, required=_REQUIRED, what="aemc-ne checkpoint")
    try:
        return _model_from_checkpoint(obj)
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(
            f"{p} is a damaged aemc-ne checkpoint ({type(e).__name__}: {first}); write it again with "
            "`aemc-ne train --out DIR`"
        ) from None


def _model_from_checkpoint(obj: dict) -> AEMC:
    spec = dict(obj["spec"])
    kind = spec.pop("kind")
    if kind not in ("AEMC", "AEMCNE"):
        raise InputError(f"spec kind must be 'AEMC' or 'AEMCNE', got {kind!r}")
    model = AEMCNE(**spec) if kind == "AEMCNE" else AEMC(**spec)
    cfg = dict(obj["config"])
    cfg["clip"] = None if cfg["clip"] is None else tuple(cfg["clip"])
    model.cfg_ = FitConfig(**cfg)
    model.shape_ = tuple(int(n) for n in obj["shape"])
    model.shift_, model.scale_ = float(obj["shift"]), float(obj["scale"])
    tr = Ratings(obj["users"].numpy(), obj["items"].numpy(), obj["values"].numpy(), *model.shape_)
    model._train = tr
    model._x = model._csr(tr, (tr.values - model.shift_) / model.scale_).astype(np.float32)
    n_features = tr.n_users if model.orientation == "item" else tr.n_items
    model.net_ = model._build(n_features)
    model.net_.load_state_dict(obj["state"])
    model.device_ = torch.device("cpu")
    model.fitted_ = True
    return model
