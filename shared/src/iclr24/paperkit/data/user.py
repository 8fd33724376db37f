"""Your own data: a trainer that takes tensors also takes a ``Dataset`` or a ``DataLoader``.

    from iclr24.paperkit.data.user import as_tensors
    x, y = as_tensors(data, fields=2, what="train data")      # tensors, (x, y), a Dataset or a DataLoader

A map-style ``Dataset`` is read in index order, item by item; a ``DataLoader`` is read for one pass, batch by batch,
in the order it yields (so a shuffling loader gives its own order, which a full-batch trainer ignores); an iterable
dataset is read to its end. Items may be a tensor, a tuple/list of tensors or numbers, or a dict of them (then
``keys`` picks and orders the fields). The result is the same tensors the tensor path would get, so a trainer that
calls this first gives the same answer from either. Anything else is one :class:`~.errors.InputError` naming what came.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from ..errors import InputError

__all__ = ["as_tensors", "is_user_data"]


def is_user_data(obj: Any) -> bool:
    """True for a ``torch.utils.data.Dataset`` or ``DataLoader`` (what :func:`as_tensors` reads item by item)."""
    from torch.utils.data import DataLoader
    from torch.utils.data import Dataset
    from torch.utils.data import IterableDataset

    return isinstance(obj, (Dataset, DataLoader, IterableDataset))


def _as_tensor(value: Any, what: str, where: str):
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (bool, int, float)):
        return torch.tensor(value)
    try:
        import numpy as np

        if isinstance(value, (np.ndarray, np.generic)) and value.dtype != object:
            return torch.from_numpy(np.asarray(value))
    except ImportError:  # pragma: no cover - numpy comes with torch
        pass
    raise InputError(f"{what}: {where} is a {type(value).__name__}; expected a tensor, an array or a number")


def _fields_of(item: Any, keys: Sequence[str] | None, what: str, where: str) -> list:
    if isinstance(item, Mapping):
        names = list(keys) if keys is not None else list(item)
        missing = [k for k in names if k not in item]
        if missing:
            raise InputError(f"{what}: {where} has keys {sorted(item)}, missing {missing}")
        return [_as_tensor(item[k], what, f"{where}[{k!r}]") for k in names]
    if isinstance(item, (tuple, list)):
        return [_as_tensor(v, what, f"{where}[{i}]") for i, v in enumerate(item)]
    return [_as_tensor(item, what, where)]


def _check_count(parts: list, fields: int | None, what: str, where: str) -> None:
    if fields is not None and len(parts) != fields:
        raise InputError(f"{what}: {where} has {len(parts)} field(s); expected {fields}")


def as_tensors(
    data: Any,
    *,
    fields: int | None = None,
    keys: Sequence[str] | None = None,
    what: str = "data",
    item: Callable[[Any], Any] | None = None,
) -> tuple:
    """Tensors from tensors, a tuple of tensors, a ``Dataset`` or a ``DataLoader``; always a tuple of tensors.

    ``fields``: how many tensors the caller expects (e.g. 2 for ``(x, y)``), checked. ``keys``: for dict items, which
    keys in which order. ``item``: a function applied to each dataset item (or loader batch) before its fields are
    read, e.g. to drop the label of ``(inputs, label)`` items. Tensors come back unchanged (no copy); loader
    batches are concatenated along dim 0 and dataset items stacked."""
    import torch

    if data is None:
        raise InputError(f"{what}: got None; expected tensors, a Dataset or a DataLoader")
    if isinstance(data, torch.Tensor) or (isinstance(data, (tuple, list)) and not is_user_data(data)):
        parts = _fields_of(data, None, what, "the input")
        _check_count(parts, fields, what, "the input")
        _same_length(parts, what)
        return tuple(parts)
    if isinstance(data, Mapping):
        parts = _fields_of(data, keys, what, "the input")
        _check_count(parts, fields, what, "the input")
        _same_length(parts, what)
        return tuple(parts)
    if not is_user_data(data):
        raise InputError(
            f"{what}: got a {type(data).__name__}; expected a tensor, a tuple of tensors, a torch Dataset or a "
            "DataLoader"
        )
    from torch.utils.data import DataLoader

    batched = isinstance(data, DataLoader) and data.batch_size is not None
    chunks: list[list] = []
    try:
        # a DataLoader draws its base seed (and a shuffling one its order) from the global torch RNG: read it in a
        # forked RNG, so a trainer that samples from the global RNG afterwards gives the tensor path's result
        with torch.random.fork_rng(devices=[]):
            chunks = _read_items(data, keys, fields, what, item)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - a user's __getitem__ / collate can raise anything
        raise InputError(f"{what}: reading the user's data failed: {type(e).__name__}: {e}") from None
    if not chunks:
        raise InputError(f"{what}: the {type(data).__name__} is empty")
    out = []
    for j in range(len(chunks[0])):
        col = [c[j] for c in chunks]
        try:
            if batched:
                col = [t.reshape(1) if t.dim() == 0 else t for t in col]
                out.append(torch.cat(col, dim=0))
            else:
                out.append(torch.stack(col, dim=0))
        except RuntimeError as e:
            shapes = sorted({tuple(t.shape) for t in col})[:3]
            raise InputError(f"{what}: field {j} has items of different shapes {shapes} ({e})") from None
    _same_length(out, what)
    return tuple(out)


def _same_length(parts: list, what: str) -> None:
    lengths = {int(t.shape[0]) if t.dim() else 1 for t in parts}
    if len(lengths) > 1:
        raise InputError(
            f"{what}: the fields have different lengths {sorted(lengths)}; expected one per example"
        )


def _read_items(
    data: Any,
    keys: Sequence[str] | None,
    fields: int | None,
    what: str,
    transform: Callable[[Any], Any] | None,
) -> list[list]:
    from torch.utils.data import DataLoader

    chunks: list[list] = []
    if isinstance(data, DataLoader) or not hasattr(data, "__len__"):
        items = iter(data)
    else:
        items = (data[i] for i in range(len(data)))
    for n, item in enumerate(items):
        if transform is not None:
            item = transform(item)
        parts = _fields_of(item, keys, what, f"item {n}")
        _check_count(parts, fields, what, f"item {n}")
        if chunks and len(parts) != len(chunks[0]):
            raise InputError(f"{what}: item {n} has {len(parts)} fields, item 0 had {len(chunks[0])}")
        chunks.append(parts)
    return chunks
