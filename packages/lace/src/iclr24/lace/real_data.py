"""PubLayNet and Rico in the official preprocessed format, read from a user path (nothing is downloaded).

The official code (``util/datasets/{publaynet,rico}.py`` on top of LayoutDM's ``BaseDataset``) preprocesses the
raw annotations once into ``<root>/<name>-max25/processed/{train,val,test}.pt``. Each file is
``torch.save((data, slices))`` of a PyTorch Geometric ``InMemoryDataset``: ``data`` is one collated
``torch_geometric`` ``Data`` whose ``x`` is the (M, 4) float tensor of every element's box (xc, yc, w, h) in
[0, 1] (centre format, divided by the page width / height) and ``y`` the (M,) int64 category ids (indices into
:data:`CATEGORIES`), all layouts concatenated; ``slices['x']`` (N + 1,) are the layouts' offsets. Layouts have
1..25 elements (longer ones were dropped by the preprocessing).

Those files are pickles of ``torch_geometric`` classes. They are read with ``torch.load(weights_only=True)``: the
``torch_geometric`` class names the file holds (listed statically first) are mapped onto inert stand-ins that only
store what the file contains, so no code the file names runs and ``torch_geometric`` need not be installed; any
other class or function is refused.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import torch

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import check_choice
from iclr24.paperkit.errors import strip_unsafe_advice

__all__ = [
    "CATEGORIES",
    "MAX_ELEMENTS",
    "SPLITS",
    "dataset_name",
    "official_split_path",
    "load_official_layouts",
    "real_config",
]

MAX_ELEMENTS = 25  # the official max_seq_length
SPLITS = ("train", "val", "test")

# Label order = the official ``labels`` lists (category id = index).
CATEGORIES: dict[str, tuple[str, ...]] = {
    "publaynet": ("text", "title", "list", "table", "figure"),
    "rico25": (
        "Text",
        "Image",
        "Icon",
        "Text Button",
        "List Item",
        "Input",
        "Background Image",
        "Card",
        "Web View",
        "Radio Button",
        "Drawer",
        "Checkbox",
        "Advertisement",
        "Modal",
        "Pager Indicator",
        "Slider",
        "On/Off Switch",
        "Button Bar",
        "Toolbar",
        "Number Stepper",
        "Multi-Tab",
        "Date Picker",
        "Map View",
        "Video",
        "Bottom Navigation",
    ),
    "rico13": (
        "Toolbar",
        "Image",
        "Text",
        "Icon",
        "Text Button",
        "Input",
        "List Item",
        "Advertisement",
        "Pager Indicator",
        "Web View",
        "Background Image",
        "Drawer",
        "Modal",
    ),
}
_ALIASES = {"rico": "rico25"}

_HOW_TO_GET = (
    "the official preprocessed splits come with the LACE authors' datasets.tar.gz (Hugging Face dataset "
    "puar-playground/LACE), or are written by the official code from the raw PubLayNet labels / Rico semantic "
    "annotations"
)


def dataset_name(name: str) -> str:
    """``publaynet``, ``rico25`` (alias ``rico``) or ``rico13``; anything else is a ValueError."""
    key = _ALIASES.get(str(name).lower(), str(name).lower())
    if key not in CATEGORIES:
        raise InputError(f"unknown dataset {name!r}; expected one of {sorted([*CATEGORIES, *_ALIASES])}")
    return key


def official_split_path(path: str | os.PathLike, dataset: str = "publaynet", split: str = "test") -> Path:
    """The ``.pt`` file of one split: ``path`` itself if it is a file, else the first that exists of
    ``path/<name>-max25/processed/<split>.pt``, ``path/processed/<split>.pt``, ``path/<split>.pt``.
    FileNotFoundError names the expected file and how to get it."""
    name = dataset_name(dataset)
    check_choice(split, "split", SPLITS)
    p = Path(path).expanduser()
    if p.is_file():
        return p
    if not p.exists():
        raise InputFileError(f"no dataset folder or file at {p}; {_HOW_TO_GET}")
    tried = [
        p / f"{name}-max{MAX_ELEMENTS}" / "processed" / f"{split}.pt",
        p / "processed" / f"{split}.pt",
        p / f"{split}.pt",
    ]
    for t in tried:
        if t.is_file():
            return t
    raise InputFileError(
        f"no {name} {split} split under {p}: expected {tried[0]} (or {tried[1].relative_to(p)} / "
        f"{tried[2].relative_to(p)}); {_HOW_TO_GET}"
    )


class _Inert:
    """What a ``torch_geometric`` object of the file becomes: its pickled state (or arguments), nothing else."""

    def __init__(self, *args, **kwargs) -> None:
        self.__dict__["args"] = (args, kwargs)

    def __setstate__(self, state) -> None:
        self.__dict__["state"] = state


def _safe_load(p: Path, what: str):
    """``torch.load(weights_only=True)`` with every ``torch_geometric`` class the file names (listed without
    running anything) mapped onto an inert stand-in; any other non-allowlisted global is refused."""
    try:
        names = torch.serialization.get_unsafe_globals_in_checkpoint(p)
    except Exception as e:  # noqa: BLE001 - an unreadable file is a user error here
        raise InputError(f"{p} is not {what} (not a torch.save file: {type(e).__name__})") from None
    others = [n for n in names if not n.startswith("torch_geometric.")]
    if others:
        raise InputError(
            f"{p} is not {what}: it names {others[:3]}, refused (a safe load reads tensors and plain containers only)"
        )
    stand_ins = [(type(n.rsplit(".", 1)[1], (_Inert,), {}), n) for n in names]
    try:
        with torch.serialization.safe_globals(stand_ins):
            return torch.load(p, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError, TypeError) as e:
        first = strip_unsafe_advice(e) or type(e).__name__
        raise InputError(f"{p} is not {what} (a safe load could not read it: {first})") from None


def _mapping(obj) -> dict | None:
    """The attribute dict of a (stand-in) ``Data``: ``_store._mapping`` (PyG 2), its own state (PyG 1), or a
    plain dict (``Data.to_dict()``)."""
    if isinstance(obj, dict):
        return obj
    state = getattr(obj, "state", None)
    if isinstance(state, tuple) and len(state) == 2:  # (dict state, slot state)
        state = state[0]
    if not isinstance(state, dict):
        return None
    store = state.get("_store")
    if store is not None:
        inner = getattr(store, "state", None)
        if isinstance(inner, dict) and isinstance(inner.get("_mapping"), dict):
            return inner["_mapping"]
        return None
    return state


def load_official_layouts(
    path: str | os.PathLike,
    dataset: str = "publaynet",
    split: str = "test",
    max_elements: int = MAX_ELEMENTS,
    limit: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One split of PubLayNet / Rico in the official preprocessed format -> (bbox (N, L, 4) centre format in
    [0, 1], labels (N, L) int64 indices into ``CATEGORIES[dataset]``, mask (N, L) bool), padded to
    ``L = max_elements`` (25, the official value), in the file's order; ``limit``: the first ``limit`` layouts.

    ``path``: the ``.pt`` file, or a folder (see :func:`official_split_path`). A missing file, a file of another
    layout, labels outside the dataset's categories, boxes outside [0, 1] and layouts longer than ``max_elements``
    are errors that say what was expected."""
    name = dataset_name(dataset)
    cats = CATEGORIES[name]
    if not isinstance(max_elements, int) or max_elements < 1:
        raise InputError(f"max_elements must be a positive int, got {max_elements!r}")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise InputError(f"limit must be a positive int or None, got {limit!r}")
    p = official_split_path(path, name, split)
    expected = (
        f"an official preprocessed {name} split: torch.save((data, slices)) with data.x (M, 4) boxes, "
        "data.y (M,) labels and slices['x'] (N + 1,) offsets"
    )
    obj = _safe_load(p, expected)
    if not isinstance(obj, tuple | list) or len(obj) < 2:
        raise InputError(f"{p} is not {expected}; got a {type(obj).__name__}")
    data, slices = _mapping(obj[0]), obj[1]
    if (
        data is None
        or not isinstance(data.get("x"), torch.Tensor)
        or not isinstance(data.get("y"), torch.Tensor)
    ):
        raise InputError(f"{p} is not {expected}; its data has no tensors 'x' and 'y'")
    x, y = data["x"], data["y"]
    if x.ndim != 2 or x.shape[1] != 4 or y.ndim != 1 or y.shape[0] != x.shape[0] or x.shape[0] == 0:
        raise InputError(
            f"{p}: expected x (M, 4) and y (M,) with M >= 1, got x {tuple(x.shape)} and y {tuple(y.shape)}"
        )
    if slices is None:  # a single layout
        off = torch.tensor([0, x.shape[0]])
    elif isinstance(slices, dict) and isinstance(slices.get("x"), torch.Tensor):
        off = slices["x"].long().reshape(-1)
    else:
        raise InputError(f"{p} is not {expected}; slices has no tensor 'x'")
    counts = off[1:] - off[:-1]
    if off.numel() < 2 or off[0] != 0 or off[-1] != x.shape[0] or (counts < 1).any():
        raise InputError(
            f"{p}: slices['x'] must rise strictly from 0 to {x.shape[0]}, got {off[:6].tolist()}..."
        )
    if int(counts.max()) > max_elements:
        k = int(counts.argmax())
        raise InputError(
            f"{p}: layout {k} has {int(counts[k])} elements, more than max_elements={max_elements}"
        )
    x = x.float()
    if not torch.isfinite(x).all() or x.min() < 0 or x.max() > 1 or (x[:, 2:] < 0).any():
        raise InputError(
            f"{p}: boxes must be (xc, yc, w, h) in [0, 1], got values in [{x.min():.3g}, {x.max():.3g}]"
        )
    y = y.long()
    if y.min() < 0 or y.max() >= len(cats):
        raise InputError(
            f"{p}: labels must index the {len(cats)} {name} categories (0..{len(cats) - 1}), got "
            f"{int(y.min())}..{int(y.max())}: a file of another dataset?"
        )
    n = counts.numel() if limit is None else min(limit, counts.numel())
    counts, m_used = counts[:n], int(off[n])
    layout = torch.repeat_interleave(torch.arange(n), counts)
    pos = torch.arange(m_used) - torch.repeat_interleave(off[:n], counts)
    bbox = torch.zeros(n, max_elements, 4)
    labels = torch.zeros(n, max_elements, dtype=torch.long)
    mask = torch.zeros(n, max_elements, dtype=torch.bool)
    bbox[layout, pos] = x[:m_used]
    labels[layout, pos] = y[:m_used]
    mask[layout, pos] = True
    return bbox, labels, mask


def real_config(dataset: str = "publaynet", **overrides):
    """A :class:`~iclr24.lace.LaceConfig` for a real dataset: its categories, 25 elements, and the official
    per-dataset constraint weights (overlap 0 on Rico, as the authors train it); ``overrides`` win."""
    from .model import LaceConfig

    name = dataset_name(dataset)
    kw = dict(categories=CATEGORIES[name], max_elements=MAX_ELEMENTS)
    if name.startswith("rico"):
        kw["overlap_weight"] = 0.0
    kw.update(overrides)
    return LaceConfig(**kw)
