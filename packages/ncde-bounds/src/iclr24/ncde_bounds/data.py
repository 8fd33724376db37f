"""Real time series: UEA/UCR ``.ts`` files from a user path, and the UCR/UEA sets bundled in aeon's wheel
(BasicMotions, GunPoint, JapaneseVowels) through paperkit's data folder (``iclr24 data get basicmotions``: the
two ``.ts`` files are extracted from the wheel, aeon is never installed). No network at run time."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

from iclr24.paperkit.data.folder import DATA_FILES
from iclr24.paperkit.data.folder import DataMissing
from iclr24.paperkit.data.folder import require_data
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

__all__ = ["TimeSeriesDataset", "downsample", "load_aeon", "load_ts"]


@dataclass
class TimeSeriesDataset:
    """``values (N, L, C)`` float32 (NaN where missing or past a series' end), ``times (N, L)`` in [0, 1],
    ``lengths (N,)``, ``labels (N,)`` int64 indices into ``class_names``."""

    values: torch.Tensor
    times: torch.Tensor
    lengths: torch.Tensor
    labels: torch.Tensor
    class_names: list[str]

    @property
    def mask(self) -> torch.Tensor:
        return ~torch.isnan(self.values)

    def __len__(self) -> int:
        return self.values.shape[0]


def _parse_float(tok: str, where: str) -> float:
    tok = tok.strip()
    if tok in ("?", "NaN", "nan", ""):
        return math.nan
    try:
        return float(tok)
    except ValueError as e:
        raise InputError(f"{where}: expected a number or '?', got {tok!r}") from e


def load_ts(path: str | Path) -> TimeSeriesDataset:
    """Read a UEA/UCR ``.ts`` file (sktime/aeon format: ``@`` header, then ``dim1:dim2:...:label`` per line).

    Unequal lengths are padded with NaN (``lengths`` says where each ends); ``?`` marks a missing value. Times are
    the sample index rescaled to [0, 1]. Files with ``@timeStamps true`` are not supported."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(
            f"no .ts file at {p}; download the dataset from timeseriesclassification.com (e.g. "
            "BasicMotions_TRAIN.ts) and pass its path"
        )
    if p.is_dir():
        raise InputError(f"expected a .ts file, got the folder {p}")
    try:
        text = p.read_text(encoding="utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise InputError(f"{p} is not a text .ts file ({e})") from e
    class_names: list[str] | None = None
    rows: list[list[list[float]]] = []
    labels: list[str] = []
    in_data = False
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not in_data:
            if not line.startswith("@"):
                raise InputError(f"{p}:{lineno}: expected a '@' header line before @data, got {line[:40]!r}")
            key, *rest = line.split()
            key = key.lower()
            if key == "@timestamps" and rest and rest[0].lower() == "true":
                raise InputError(
                    f"{p}: @timeStamps true is not supported; export the series without time stamps"
                )
            if key == "@classlabel":
                if not rest or rest[0].lower() != "true":
                    raise InputError(f"{p}: only classification files (@classLabel true ...) are supported")
                class_names = rest[1:]
            if key == "@data":
                in_data = True
            continue
        parts = line.split(":")
        if len(parts) < 2:
            raise InputError(f"{p}:{lineno}: expected 'values:...:label', got {line[:40]!r}")
        *dims, label = parts
        rows.append([[_parse_float(tok, f"{p}:{lineno}") for tok in d.split(",")] for d in dims])
        labels.append(label.strip())
    if not in_data:
        raise InputError(f"{p}: no @data section; is this a UEA/UCR .ts file?")
    if not rows:
        raise InputError(f"{p}: the @data section is empty")
    n_dims = {len(r) for r in rows}
    if len(n_dims) != 1:
        raise InputError(f"{p}: series have different channel counts {sorted(n_dims)}")
    c = n_dims.pop()
    if class_names is None:
        class_names = sorted(set(labels))
    unknown = sorted(set(labels) - set(class_names))
    if unknown:
        raise InputError(f"{p}: labels {unknown[:5]} are not in the @classLabel list {class_names}")
    lens = [max(len(d) for d in r) for r in rows]
    length = max(lens)
    values = torch.full((len(rows), length, c), math.nan, dtype=torch.float32)
    for i, r in enumerate(rows):
        for ch, d in enumerate(r):
            values[i, : len(d), ch] = torch.tensor(d, dtype=torch.float32)
    return _finish(values, torch.tensor(lens), [class_names.index(s) for s in labels], class_names)


def _finish(
    values: torch.Tensor, lengths: torch.Tensor, labels: list[int], class_names: list[str]
) -> TimeSeriesDataset:
    if (lengths < 2).any():
        raise InputError(f"every series needs at least 2 observations, the shortest has {int(lengths.min())}")
    n, length, _ = values.shape
    idx = torch.arange(length, dtype=torch.float32).unsqueeze(0).expand(n, -1)
    last = (lengths - 1).clamp(min=1).unsqueeze(1).float()
    times = torch.minimum(idx / last, torch.ones(()))
    return TimeSeriesDataset(
        values, times, lengths, torch.tensor(labels, dtype=torch.long), list(class_names)
    )


#: UCR/UEA sets of the data folder (``iclr24 data get NAME``): registry name -> the archive's folder name
BUNDLED = {"basicmotions": "BasicMotions", "gunpoint": "GunPoint", "japanesevowels": "JapaneseVowels"}


def load_aeon(name: str, split: str = "train", data_dir: str | Path | None = None) -> TimeSeriesDataset:
    """A UCR/UEA set bundled in aeon's wheel (``"BasicMotions"``, ``"GunPoint"``, ``"JapaneseVowels"``), offline.

    Read from paperkit's data folder (fetch once with ``iclr24 data get basicmotions``; ``data_dir`` overrides the
    folder); a missing file raises :class:`DataMissing` naming that command. Other aeon set names are read with
    aeon itself when it happens to be installed."""
    if split not in ("train", "test"):
        raise InputError(f"split must be 'train' or 'test', got {split!r}")
    if not isinstance(name, str) or not name:
        raise InputError(f"name must be a dataset name such as 'BasicMotions', got {name!r}")
    key = name.lower()
    if key in BUNDLED and key in DATA_FILES:
        folder = require_data(key, data_dir)
        return load_ts(folder / f"{BUNDLED[key]}_{split.upper()}.ts")
    try:
        from aeon.datasets import load_classification
    except ImportError as e:
        raise DataMissing(
            f"{name!r} is not in the data folder's registry ({', '.join(BUNDLED.values())}: `iclr24 data get "
            f"basicmotions`) and aeon is not installed; pass a .ts file to load_ts instead"
        ) from e
    x, y = load_classification(name, split=split)  # aeon's bundled sets load offline
    x = torch.as_tensor(x, dtype=torch.float32).transpose(1, 2)  # (N, C, L) -> (N, L, C)
    names = sorted({str(s) for s in y})
    lengths = torch.full((x.shape[0],), x.shape[1])
    return _finish(x, lengths, [names.index(str(s)) for s in y], names)


def downsample(data: TimeSeriesDataset, rate: int, *, seed: int | None = None) -> TimeSeriesDataset:
    """Keep every ``rate``-th observation (always the first and last), or with ``seed`` a random subset of the same
    size: a coarser, possibly irregular sampling of the same series."""
    if isinstance(rate, bool) or not isinstance(rate, int) or rate < 1:
        raise InputError(f"rate must be an int >= 1, got {rate!r}")
    n, length, c = data.values.shape
    if int(data.lengths.min()) != length:
        raise InputError("downsample needs equal-length series")
    keep = max(2, (length - 1) // rate + 1)
    if seed is None:
        idx = torch.linspace(0, length - 1, keep).round().long().unsqueeze(0).expand(n, -1)
    else:
        g = torch.Generator().manual_seed(seed)
        inner = torch.rand(n, length - 2, generator=g).argsort(1)[:, : keep - 2] + 1
        idx = (
            torch.cat([torch.zeros(n, 1, dtype=torch.long), inner, torch.full((n, 1), length - 1)], 1)
            .sort(1)
            .values
        )
    v = data.values.gather(1, idx.unsqueeze(-1).expand(-1, -1, c))
    t = data.times.gather(1, idx)
    return TimeSeriesDataset(v, t, torch.full((n,), keep), data.labels.clone(), list(data.class_names))
