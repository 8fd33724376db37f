"""Saving and loading a trained model together with its beta and where its data came from."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from iclr24.paperkit import atomic_torch_save

from . import synthetic
from .data import load_dataset
from .kg import KGData
from .model import DRUM

__all__ = ["save_checkpoint", "load_checkpoint", "resolve_data"]


def resolve_data(spec: str, seed: int = 0) -> KGData:
    """``family`` / ``family:N`` (the built-in synthetic KG with N families) or a dataset folder."""
    if spec == "family" or spec.startswith("family:"):
        n = spec.split(":", 1)[1] if ":" in spec else "40"
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"expected family:N with N a positive integer, got {spec!r}")
        return synthetic.family(int(n), seed=seed)
    return load_dataset(spec, seed=seed)


def save_checkpoint(
    path: str | os.PathLike, model: DRUM, beta: float, data_spec: str, extra: dict | None = None
) -> Path:
    cfg = model.config()
    return atomic_torch_save(
        {
            "state_dict": model.state_dict(),
            "config": cfg,
            "beta": float(beta),
            "data": data_spec,
            "extra": extra or {},
        },
        path,
    )


def load_checkpoint(path: str | os.PathLike) -> tuple[DRUM, float, str]:
    """``(model, beta, data_spec)`` from a file written by :func:`save_checkpoint` / ``drum-rules train``."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(
            f"{p} does not exist; train a model first (drum-rules train DATA --out DIR) and "
            "pass --model DIR/model.pt"
        )
    ck = torch.load(p, map_location="cpu", weights_only=True)
    if not isinstance(ck, dict) or "config" not in ck:
        raise ValueError(f"{p} is not a drum-rules checkpoint")
    c = ck["config"]
    m = DRUM(
        c["n_relations"],
        rank=c["rank"],
        steps=c["steps"],
        aggregation=c["aggregation"],
        normalize=c["normalize"],
        embed_dim=c["embed_dim"],
        hidden_dim=c["hidden_dim"],
        thr=c["thr"],
        seed=None,
    )
    sd = ck["state_dict"]
    m.fixed_attention = sd.get("fixed_attention", m.fixed_attention)
    m.fixed_mask = sd.get("fixed_mask", m.fixed_mask)
    m.load_state_dict(sd)
    m.head_relations = list(c["head_relations"])
    m.eval()
    return m, float(ck["beta"]), str(ck["data"])
