"""Labelled text for the SUFO analyses: a seeded synthetic pathology-report generator (the paper's private UCSF
reports cannot ship), ICD-10-CM descriptions -> chapter as a real short-text task (``simple-icd-10-cm``, offline),
and a loader for any CSV/JSONL of (text, label)."""

from __future__ import annotations

import csv
import functools
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe
from iclr24.paperkit.io import read_text

__all__ = ["TextDataset", "synthetic_reports", "icd10cm_chapters", "load_labelled", "split", "split_indices"]

_NUM = {3: "three", 4: "four", 5: "five"}
_FILLER = (
    "the specimen is received in formalin",
    "sections show prostatic adenocarcinoma",
    "perineural invasion is identified",
    "no lymphovascular invasion is seen",
    "the margins were inked prior to sectioning",
    "tissue is submitted entirely in cassettes",
    "benign prostatic tissue is present in the remaining cores",
    "immunostains were reviewed with appropriate controls",
    "the tumor involves both lobes",
    "high grade prostatic intraepithelial neoplasia is present",
)
_DEFERRED = "grading deferred to the addendum"


@dataclass(frozen=True)
class TextDataset:
    """Texts, integer labels ``(N,)`` int64, label names, and a mask of planted outliers (all False for real data)."""

    texts: list[str]
    labels: np.ndarray
    label_names: list[str]
    planted: np.ndarray

    def __post_init__(self) -> None:
        labels = check_array(self.labels, "labels", ndim=1, kind="int", allow_empty=True)
        if not isinstance(self.texts, list | tuple):
            raise InputError(f"texts must be a list of strings, got {describe(self.texts)}")
        if len(self.texts) != len(labels) or len(self.texts) != len(self.planted):
            raise InputError(
                f"texts, labels and planted must have the same length, got {len(self.texts)}, {len(labels)} "
                f"and {len(self.planted)}"
            )
        if len(self.texts) == 0:
            raise InputError("the dataset is empty: expected at least one (text, label) pair")
        if not all(isinstance(t, str) and t.strip() for t in self.texts):
            raise InputError("every text must be a non-empty string")
        if labels.dtype.kind not in "iu" or labels.min() < 0 or labels.max() >= len(self.label_names):
            raise InputError(f"labels must be integers in [0, {len(self.label_names)}), got {labels[:5]}...")
        object.__setattr__(self, "labels", labels.astype(np.int64))
        object.__setattr__(self, "planted", np.asarray(self.planted, dtype=bool))

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def n_classes(self) -> int:
        return len(self.label_names)

    @classmethod
    def from_data(cls, data, label_names: list[str] | None = None, what: str = "data") -> TextDataset:
        """A TextDataset from your own data: a TextDataset (returned as is), a torch ``Dataset`` of ``(text,
        label)`` items (or dicts with ``text`` and ``label``), a ``DataLoader`` of ``(texts, labels)`` batches (read
        once, in its order), or a list of ``(text, label)`` pairs. ``label_names`` default to ``"0"``, ``"1"``, ...
        up to the largest label."""
        if isinstance(data, TextDataset):
            return data
        from torch.utils.data import DataLoader
        from torch.utils.data import Dataset

        texts: list = []
        labels: list = []

        def add(item, where: str, batched: bool) -> None:
            if isinstance(item, dict):
                if "text" not in item or "label" not in item:
                    raise InputError(
                        f"{what}: {where} is a dict with keys {sorted(item)}; expected text and label"
                    )
                item = (item["text"], item["label"])
            if not isinstance(item, tuple | list) or len(item) != 2:
                raise InputError(f"{what}: {where} must be a (text, label) pair, got {describe(item)}")
            t, y = item
            if batched:
                t, y = list(t), np.asarray(y).ravel().tolist()
                if len(t) != len(y):
                    raise InputError(f"{what}: {where} has {len(t)} texts and {len(y)} labels")
                texts.extend(t)
                labels.extend(y)
            else:
                texts.append(t)
                labels.append(np.asarray(y).item() if np.ndim(y) == 0 else y)

        if isinstance(data, DataLoader | Dataset):
            try:
                if isinstance(data, DataLoader):
                    for n, batch in enumerate(data):
                        add(batch, f"batch {n}", batched=data.batch_size is not None)
                else:
                    items = (data[i] for i in range(len(data))) if hasattr(data, "__len__") else iter(data)
                    for n, item in enumerate(items):
                        add(item, f"item {n}", batched=False)
            except InputError:
                raise
            except Exception as e:  # noqa: BLE001 - a user's __getitem__ / collate can raise anything
                raise InputError(f"{what}: reading the data failed: {type(e).__name__}: {e}") from None
        elif isinstance(data, list | tuple) and data and all(isinstance(d, tuple | list) for d in data):
            for n, item in enumerate(data):
                add(item, f"pair {n}", batched=False)
        else:
            raise InputError(
                f"{what} must be a TextDataset, a torch Dataset of (text, label), a DataLoader of (texts, labels) "
                f"or a list of (text, label) pairs, got {describe(data)}"
            )
        if not texts:
            raise InputError(f"{what}: the {type(data).__name__} is empty")
        bad = [y for y in labels if isinstance(y, bool) or not isinstance(y, int | np.integer)]
        if bad:
            raise InputError(f"{what}: labels must be integer class ids, got {describe(bad[0])}")
        lab = np.asarray(labels, dtype=np.int64)
        if label_names is None:
            label_names = [str(i) for i in range(int(lab.max()) + 1 if lab.size and lab.max() >= 0 else 1)]
        return cls(list(texts), lab, list(label_names), np.zeros(len(texts), dtype=bool))

    def subset(self, idx: np.ndarray) -> TextDataset:
        idx = np.asarray(idx)
        return TextDataset(
            [self.texts[i] for i in idx], self.labels[idx], self.label_names, self.planted[idx]
        )


def synthetic_reports(
    n: int,
    seed: int = 0,
    proportions: tuple[float, float, float] = (0.6, 0.3, 0.1),
    outlier_fraction: float = 0.05,
    n_filler: int = 4,
) -> TextDataset:
    """Synoptic "prostate reports" whose label is the primary Gleason grade 3/4/5 (classes 0/1/2, imbalanced by
    ``proportions``). The grade is written as a digit or a word, as "gleason score p+s" or "primary gleason grade:
    p", among shuffled filler sentences. A planted outlier mode (``outlier_fraction``) says "grading deferred to the
    addendum" instead and carries a random label: a failure mode no model can learn."""
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 10**7:
        raise InputError(f"n must be an int in [2, 10**7], got {n!r}")
    p = check_array(proportions, "proportions", ndim=1)
    if p.shape != (3,) or (p < 0).any() or not np.isclose(p.sum(), 1.0):
        raise InputError(f"proportions must be three non-negative numbers summing to 1, got {proportions}")
    check_float(outlier_fraction, "outlier_fraction", minimum=0, maximum=1, open_max=True)
    check_int(n_filler, "n_filler", minimum=0, maximum=len(_FILLER))
    rng = np.random.default_rng(seed)
    labels = rng.choice(3, size=n, p=p)
    planted = rng.random(n) < outlier_fraction
    texts = []
    for i in range(n):
        sentences = list(rng.choice(_FILLER, size=n_filler, replace=False))
        if planted[i]:
            labels[i] = rng.integers(3)
            sentences.append(_DEFERRED)
        else:
            primary = int(labels[i]) + 3
            secondary = int(rng.integers(3, 6))
            word = rng.random() < 0.5
            pg = _NUM[primary] if word else str(primary)
            sg = _NUM[secondary] if word else str(secondary)
            if rng.random() < 0.5:
                sentences.append(f"gleason score {pg}+{sg}")
            else:
                sentences.append(f"primary gleason grade: {pg}; secondary gleason grade: {sg}")
        rng.shuffle(sentences)
        texts.append(". ".join(sentences) + ".")
    return TextDataset(texts, labels.astype(np.int64), ["gleason 3", "gleason 4", "gleason 5"], planted)


@functools.lru_cache(maxsize=4)
def _icd10cm_pairs(min_per_chapter: int) -> tuple[list[tuple[str, str]], list[str]]:
    """(description, chapter) of every leaf code in a kept chapter, and the kept chapters; walking the 74,736
    leaves' ancestors takes seconds, so it is done once per process."""
    try:
        import simple_icd_10_cm as cm
    except ImportError:  # pragma: no cover
        raise ImportError("icd10cm_chapters needs simple-icd-10-cm: pip install simple-icd-10-cm") from None
    codes = [c for c in cm.get_all_codes(True) if cm.is_leaf(c)]
    chapters = []
    for c in codes:
        a = cm.get_ancestors(c)
        chapters.append(a[-1] if a else c)
    names, counts = np.unique(chapters, return_counts=True)
    keep = set(names[counts >= min_per_chapter])
    pairs = [(cm.get_description(c), ch) for c, ch in zip(codes, chapters) if ch in keep]
    return pairs, sorted(keep, key=lambda s: (len(s), s))


def icd10cm_chapters(n: int | None = 2000, seed: int = 0, min_per_chapter: int = 50) -> TextDataset:
    """Real short clinical text: ICD-10-CM leaf-code descriptions labelled by their chapter (``simple-icd-10-cm``,
    offline; 74,736 leaves in 22 chapters, imbalanced). Chapters with fewer than ``min_per_chapter`` leaves are
    dropped; ``n`` draws a seeded random subset (None: all)."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 10**6):
        raise InputError(f"n must be an int in [2, 10**6] or None (all of them), got {n!r}")
    check_int(min_per_chapter, "min_per_chapter", minimum=1)
    pairs, kept = _icd10cm_pairs(min_per_chapter)
    index = {ch: i for i, ch in enumerate(kept)}
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pairs))
    if n is not None:
        if n < 2:
            raise InputError(f"n must be >= 2 or None, got {n}")
        order = order[:n]
    texts = [pairs[i][0].lower() for i in order]
    labels = np.array([index[pairs[i][1]] for i in order], dtype=np.int64)
    names_out = [f"chapter {ch}" for ch in kept]
    return TextDataset(texts, labels, names_out, np.zeros(len(texts), dtype=bool))


def load_labelled(
    path: str | os.PathLike, text_field: str = "text", label_field: str = "label"
) -> TextDataset:
    """A CSV (with a header) or JSONL file of (text, label) rows; labels may be strings or integers. A missing
    field or a malformed line is one clear error naming the line."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(
            f"{p} does not exist (expected a .csv or .jsonl file of {text_field}, {label_field})", p
        )
    if p.suffix.lower() not in (".jsonl", ".csv"):
        raise InputFileError(f"{p}: expected a .csv or .jsonl file, got {p.suffix or 'no suffix'}", p)
    text = read_text(p, "labelled-text file")
    rows: list[tuple[str, str]] = []
    if p.suffix.lower() == ".jsonl":
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputFileError(f"{p}:{i}: not valid JSON ({e.msg})", p) from None
            if not isinstance(d, dict) or text_field not in d or label_field not in d:
                raise InputFileError(
                    f"{p}:{i}: expected an object with {text_field!r} and {label_field!r}", p
                )
            rows.append((str(d[text_field]), str(d[label_field])))
    else:
        try:
            reader = csv.DictReader(io.StringIO(text, newline=""))
            if (
                reader.fieldnames is None
                or text_field not in reader.fieldnames
                or label_field not in reader.fieldnames
            ):
                raise InputFileError(
                    f"{p}: the header must name {text_field!r} and {label_field!r}, got {reader.fieldnames}",
                    p,
                )
            for i, r in enumerate(reader, 2):
                if r.get(text_field) in (None, "") or r.get(label_field) in (None, ""):
                    raise InputFileError(f"{p}:{i}: empty {text_field!r} or {label_field!r}", p)
                rows.append((r[text_field], r[label_field]))
        except csv.Error as e:
            raise InputFileError(f"{p}: not a readable CSV file ({e})", p) from None
    if not rows:
        raise InputFileError(f"{p} holds no rows", p)
    names = sorted({lab for _, lab in rows}, key=lambda s: (len(s), s))
    if len(names) < 2:
        raise InputFileError(f"{p}: a single class ({names[0]!r}); the analyses need at least two")
    index = {n: i for i, n in enumerate(names)}
    labels = np.array([index[lab] for _, lab in rows], dtype=np.int64)
    return TextDataset([t for t, _ in rows], labels, names, np.zeros(len(rows), dtype=bool))


def split_indices(
    ds: TextDataset, test_fraction: float = 0.3, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The sorted row indices of :func:`split`'s two parts."""
    from sklearn.model_selection import train_test_split

    if not 0.0 < test_fraction < 1.0:
        raise InputError(f"test_fraction must be in (0, 1), got {test_fraction}")
    idx = np.arange(len(ds))
    counts = np.bincount(ds.labels, minlength=ds.n_classes)
    n_test, present = int(np.ceil(test_fraction * len(ds))), int((counts > 0).sum())
    # stratify when every class can be on both sides (sklearn refuses otherwise)
    ok = counts[counts > 0].min() >= 2 and present <= n_test <= len(ds) - present
    strat = ds.labels if ok else None
    tr, te = train_test_split(idx, test_size=test_fraction, random_state=seed, stratify=strat)
    return np.sort(tr), np.sort(te)


def split(ds: TextDataset, test_fraction: float = 0.3, seed: int = 0) -> tuple[TextDataset, TextDataset]:
    """A seeded stratified split keeping the class proportions (the official code re-splits with
    ``train_test_split(random_state=run)``); unstratified when a class has a single text or either side would hold
    fewer texts than there are classes."""
    if not isinstance(ds, TextDataset):
        raise InputError(f"ds must be a TextDataset, got {describe(ds)}")
    check_float(test_fraction, "test_fraction", minimum=0, maximum=1, open_min=True, open_max=True)
    tr, te = split_indices(ds, test_fraction, seed)
    return ds.subset(tr), ds.subset(te)
