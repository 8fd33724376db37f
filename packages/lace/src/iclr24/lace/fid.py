"""Layout FID with a FIDNetV3 checkpoint from a user path: the feature network of the official evaluation
(``test.py``: ``load_fidnet_v3`` of ``fid/model.py``, the FIDNetV3 of const_layout / LayoutDM, trained by the
official ``train_fid_model.py``), and the Frechet distance of its features.

FIDNetV3 (num_label = C, d = 256, 4 heads, 4 layers, max_bbox = 25): element features
``relu(W_in [W_b b | E(c)])``, a learnt token prepended, a post-norm ``nn.TransformerEncoder`` (FF d/2,
sequence-first) with the padding masked; the feature of a layout is the token's output. It has no position
embedding, so the feature does not depend on the element order. The decoder and the real/fake head
(``fc_out_disc``, ``pos_token``, ``dec_fc_in``, ``dec_transformer``, ``fc_out_cls``, ``fc_out_bbox``) are kept so
that the official ``state_dict`` loads strictly; :func:`fid_features` uses the encoder only. The official
checkpoint is ``FIDNetV3/<name>-max25/model_best.pth.tar``, a dict with ``state_dict`` (plus epoch, loss and
optimiser state), read here with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import torch
from torch import nn

from iclr24.paperkit.checkpoint import safe_torch_load
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe
from iclr24.paperkit.metrics import frechet_distance

from .layout import as_layouts

__all__ = ["FIDNetV3", "load_fidnet", "fid_features", "layout_fid"]


class _WithToken(nn.Module):
    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, num_layers: int) -> None:
        super().__init__()
        self.token = nn.Parameter(torch.randn(1, 1, d_model))
        self.register_buffer("token_mask", torch.zeros(1, 1, dtype=torch.bool))
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward)
        self.core = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)

    def forward(self, x: torch.Tensor, padding_mask: torch.Tensor) -> torch.Tensor:
        B = x.shape[1]  # x: (N, B, d), sequence first; padding_mask: (B, N), True = padding
        x = torch.cat([self.token.expand(-1, B, -1), x], dim=0)
        pad = torch.cat([self.token_mask.expand(B, -1), padding_mask], dim=1)
        return self.core(x, src_key_padding_mask=pad)


class FIDNetV3(nn.Module):
    """The official FIDNetV3 (parameter names as in its ``state_dict``)."""

    def __init__(
        self, num_label: int, d_model: int = 256, nhead: int = 4, num_layers: int = 4, max_bbox: int = 25
    ):
        super().__init__()
        for name, v in (
            ("num_label", num_label),
            ("d_model", d_model),
            ("nhead", nhead),
            ("num_layers", num_layers),
        ):
            check_int(v, name, minimum=1, maximum=2**16)
        check_int(max_bbox, "max_bbox", minimum=1, maximum=2**12)
        if d_model % nhead:
            raise InputError(f"d_model {d_model} must be divisible by nhead {nhead}")
        self.num_label, self.max_bbox = num_label, max_bbox
        self.emb_label = nn.Embedding(num_label, d_model)
        self.fc_bbox = nn.Linear(4, d_model)
        self.enc_fc_in = nn.Linear(2 * d_model, d_model)
        self.enc_transformer = _WithToken(d_model, nhead, d_model // 2, num_layers)
        self.fc_out_disc = nn.Linear(d_model, 1)
        self.pos_token = nn.Parameter(torch.rand(max_bbox, 1, d_model))
        self.dec_fc_in = nn.Linear(2 * d_model, d_model)
        dec = nn.TransformerEncoderLayer(d_model, nhead, d_model // 2)
        self.dec_transformer = nn.TransformerEncoder(dec, num_layers, enable_nested_tensor=False)
        self.fc_out_cls = nn.Linear(d_model, num_label)
        self.fc_out_bbox = nn.Linear(d_model, 4)

    def extract_features(
        self, bbox: torch.Tensor, label: torch.Tensor, padding_mask: torch.Tensor
    ) -> torch.Tensor:
        """(B, N, 4) centre-format boxes, (B, N) labels, (B, N) padding mask (True = padding) -> (B, d)."""
        x = self.enc_fc_in(torch.cat([self.fc_bbox(bbox), self.emb_label(label)], dim=-1))
        x = torch.relu(x).permute(1, 0, 2)
        return self.enc_transformer(x, padding_mask)[0]


def load_fidnet(
    path: str | os.PathLike, num_label: int | None = None, nhead: int = 4, dataset: str | None = None
) -> FIDNetV3:
    """A FIDNetV3 checkpoint -> the network in eval mode. ``path``: ``model_best.pth.tar`` or the folder holding it
    (``FIDNetV3/<dataset>-max25/`` is looked for under a folder when ``dataset`` is given). Sizes (d, layers,
    labels, max_bbox) come from the weights; ``nhead`` (4 in the official runs) cannot. ``num_label``: the number
    of categories the caller evaluates; a checkpoint for another number is a ValueError."""
    p = Path(path).expanduser()
    if p.is_dir():
        cands = [p / "model_best.pth.tar"]
        if dataset is not None:
            cands.insert(0, p / f"{dataset}-max25" / "model_best.pth.tar")
        found = [c for c in cands if c.is_file()]
        if not found:
            raise InputFileError(
                f"no FIDNetV3 checkpoint under {p}: expected {cands[0]}; the official ones are in fid.tar.gz of the "
                "Hugging Face dataset puar-playground/LACE (or train one with the official train_fid_model.py)"
            )
        p = found[0]
    if not p.is_file():
        raise InputFileError(
            f"no FIDNetV3 checkpoint at {p}; the official ones (FIDNetV3/<dataset>-max25/model_best.pth.tar) are in "
            "fid.tar.gz of the Hugging Face dataset puar-playground/LACE"
        )
    try:
        obj = safe_torch_load(p, what="FIDNetV3 checkpoint")
    except InputFileError as e:
        raise InputFileError(f"{e}; expected an official FIDNetV3 model_best.pth.tar", p) from None
    sd = obj.get("state_dict", obj) if isinstance(obj, dict) else None
    if not isinstance(sd, dict) or "emb_label.weight" not in sd or "pos_token" not in sd:
        raise InputFileError(
            f"{p} is not a FIDNetV3 checkpoint (expected {{'state_dict': ...}} with keys emb_label.weight, "
            "fc_bbox.*, enc_transformer.*, pos_token, ...)",
            p,
        )
    sd = {k.removeprefix("module."): v for k, v in sd.items()}
    n_label, d = sd["emb_label.weight"].shape
    layer_ids = [int(m.group(1)) for k in sd if (m := re.match(r"enc_transformer\.core\.layers\.(\d+)\.", k))]
    if (
        not layer_ids
        or not isinstance(sd["emb_label.weight"], torch.Tensor)
        or sd["emb_label.weight"].ndim != 2
    ):
        raise InputFileError(
            f"{p} is not a FIDNetV3 checkpoint (no enc_transformer.core.layers.* weights)", p
        )
    layers = 1 + max(layer_ids)
    if num_label is not None and n_label != num_label:
        raise InputError(f"{p} is a FIDNetV3 for {n_label} categories, the layouts have {num_label}")
    if d % nhead:
        raise InputError(f"{p} has width {d}, not divisible by nhead={nhead}")
    net = FIDNetV3(int(n_label), int(d), nhead, layers, int(sd["pos_token"].shape[0]))
    try:
        net.load_state_dict(sd, strict=True)
    except RuntimeError as e:
        raise InputFileError(
            f"{p} does not fit FIDNetV3: {str(e).splitlines()[0]} {str(e).splitlines()[1:2]}"
        ) from None
    return net.eval()


@torch.no_grad()
def fid_features(
    net: FIDNetV3, bbox: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, batch_size: int = 512
) -> np.ndarray:
    """FIDNetV3 features of layouts (bbox (B, L, 4) centre format, labels (B, L), mask (B, L)) -> (B, d) float64.
    Padding gets label 0 and is masked out, as in the official ``test.py``."""
    if not isinstance(net, FIDNetV3):
        raise InputError(f"net must be a FIDNetV3 (load_fidnet), got {describe(net)}")
    check_int(batch_size, "batch_size", minimum=1, maximum=2**20)
    _, _, m = as_layouts((bbox, labels, mask), "fid_features layouts", num_classes=net.num_label)
    if bbox.shape[1] > net.max_bbox:
        raise InputError(
            f"this FIDNetV3 takes layouts of at most {net.max_bbox} elements, got {bbox.shape[1]}"
        )
    lab = torch.where(m, labels.long(), torch.zeros_like(labels.long()))
    out = [
        net.extract_features(
            bbox[i : i + batch_size].float(), lab[i : i + batch_size], ~m[i : i + batch_size]
        )
        for i in range(0, bbox.shape[0], batch_size)
    ]
    return torch.cat(out).double().numpy()


def layout_fid(net: FIDNetV3, generated, real, batch_size: int = 512) -> float:
    """FID of generated vs real layouts (each ``(bbox, labels, mask)``) in FIDNetV3 feature space
    (``paperkit.metrics.frechet_distance``, the official ``compute_generative_model_scores`` formula)."""
    gen = as_layouts(generated, "generated layouts")
    ref = as_layouts(real, "real layouts")
    return _fd(fid_features(net, *gen, batch_size), fid_features(net, *ref, batch_size))


def _fd(a: np.ndarray, b: np.ndarray) -> float:
    """paperkit's Frechet distance, its refusals (too few layouts, non-finite features) as InputErrors."""
    if len(a) < 2 or len(b) < 2:
        raise InputError(
            f"a Frechet distance needs at least 2 layouts on each side, got {len(a)} and {len(b)}"
        )
    try:
        return frechet_distance(a, b)
    except InputError:
        raise
    except ValueError as e:
        raise InputError(f"the layouts' features cannot be compared: {e}") from None
