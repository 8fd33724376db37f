"""Loaders for knowledge graphs on disk (no downloads), negatives for beta selection, and perturbed datasets.

Formats:
- DRUM / Neural-LP directory: ``entities.txt``, ``relations.txt`` (one name a line), ``facts.txt``, ``train.txt``,
  ``valid.txt``, ``test.txt`` with tab- (or whitespace-) separated ``head relation tail`` lines.
- FaithfulRE directory: ``train_facts.txt``, ``train.txt``, optional ``valid.txt``, ``test_facts.txt``,
  ``test_positive.txt`` and ``{valid,test}_positive_negative_score.txt`` (``head relation tail label``).
- GraIL inductive splits: a transductive folder (``train/valid/test.txt``) and its ``_ind`` twin.
- Plain TSV triples: a folder of ``train/valid/test.txt`` such as the Kinships, UMLS and Nations files in
  paperkit's data folder (:func:`load_real_kg`, fetched once with ``iclr24 data get kinships``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputFolderError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe
from iclr24.paperkit.io import read_text

from .kg import KG
from .kg import KGData
from .kg import encode_facts

__all__ = [
    "read_names",
    "read_triples",
    "load_tsv",
    "load_drum_dir",
    "load_faithfulre_dir",
    "load_grail",
    "split_facts",
    "make_negatives",
    "perturbed_datasets",
    "load_dataset",
    "REAL_KGS",
    "load_real_kg",
]

REAL_KGS = ("kinships", "umls", "nations")


def _need(path: Path, what: str) -> Path:
    if path.is_dir():
        raise InputFolderError(f"{path} is a folder: expected a file of {what}", path)
    if not path.exists():
        raise InputFileError(
            f"{path} is missing: expected {what}. DRUM-format data (e.g. the Family dataset from "
            "github.com/alisadeghian/DRUM/datasets) must be downloaded by you and pointed to"
        )
    return path


def read_names(path: str | os.PathLike) -> list[str]:
    """One name per non-empty line (``entities.txt``/``relations.txt``)."""
    path = _need(Path(path), "one name per line")
    names = []
    for i, line in enumerate(read_text(path, "names file", allow_empty=True).splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 1:
            raise InputError(f"{path}:{i}: expected one name per line, got {len(parts)} fields: {line!r}")
        names.append(parts[0])
    return names


def read_triples(path: str | os.PathLike, n_fields: int = 3) -> list[tuple[str, ...]]:
    """Lines of ``n_fields`` tab- or whitespace-separated fields (``head relation tail [label]``)."""
    path = _need(Path(path), f"{n_fields} tab-separated fields per line")
    out = []
    for i, line in enumerate(read_text(path, "triples file", allow_empty=True).splitlines(), 1):
        if not line.strip():
            continue
        parts = line.rstrip("\n").split("\t") if "\t" in line else line.split()
        parts = [p.strip() for p in parts]
        if len(parts) != n_fields:
            raise InputError(
                f"{path}:{i}: expected {n_fields} fields (head, relation, tail"
                f"{', label' if n_fields == 4 else ''}), got {len(parts)}: {line!r}"
            )
        out.append(tuple(parts))
    return out


def _index(
    path: Path, rows: list[tuple[str, ...]], e_idx: dict, r_idx: dict, labelled: bool = False
) -> np.ndarray:
    out = []
    for i, row in enumerate(rows, 1):
        h, r, t = row[:3]
        for e in (h, t):
            if e not in e_idx:
                raise InputError(
                    f"{path}: line {i}: entity {e!r} is not in entities.txt; add it there or fix the line"
                )
        if r not in r_idx:
            raise InputError(
                f"{path}: line {i}: relation {r!r} is not in relations.txt; add it there or fix the line"
            )
        rec = [e_idx[h], r_idx[r], e_idx[t]]
        if labelled:
            if row[3] not in ("0", "1"):
                raise InputError(f"{path}: line {i}: label must be 0 or 1, got {row[3]!r}")
            rec.append(int(row[3]))
        out.append(rec)
    return np.asarray(out, dtype=np.int64).reshape(-1, 4 if labelled else 3)


def _dedupe(path: Path, arr: np.ndarray, n_entities: int, duplicates: str) -> np.ndarray:
    if not len(arr):
        return arr
    ids = encode_facts(arr[:, 0], arr[:, 1], arr[:, 2], n_entities)
    _, first, counts = np.unique(ids, return_index=True, return_counts=True)
    if (counts > 1).any():
        if duplicates == "error":
            j = int(np.sort(first[counts > 1])[0])
            raise InputError(
                f"{path}: duplicate fact at line {j + 1} (it appears {int(counts.max())} times); "
                "remove repeats or load with duplicates='drop'"
            )
        arr = arr[np.sort(first)]
    return arr


def split_facts(triples: np.ndarray, fractions: tuple[float, ...], seed: int = 0) -> list[np.ndarray]:
    """Shuffle ``triples`` with ``seed`` and cut it into consecutive parts of the given fractions (last = rest)."""
    if not fractions or any(f < 0 for f in fractions) or sum(fractions) > 1 + 1e-9:
        raise InputError(f"fractions must be non-negative and sum to <= 1, got {fractions}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(triples))
    cuts = np.cumsum([int(round(f * len(triples))) for f in fractions[:-1]])
    return [triples[p] for p in np.split(perm, cuts)]


def make_negatives(positives: np.ndarray, kg: KG, seed: int = 0, hops: int = 3) -> np.ndarray:
    """One corrupted head per positive ``(h, r, t)``: a random entity within ``hops`` hops of ``t`` (as in GraIL's
    hard negatives), falling back to a uniform entity; never a known fact. Returns ``(h', r, t, 0)`` rows."""
    rng = np.random.default_rng(seed)
    E = kg.n_entities
    op, dst, src = kg.edges()
    nbrs: list[list[int]] = [[] for _ in range(E)]
    for d, s in zip(dst.tolist(), src.tolist()):
        nbrs[s].append(d)
    known = set(kg.fact_ids.tolist()) | set(
        encode_facts(positives[:, 0], positives[:, 1], positives[:, 2], E).tolist()
    )
    out = []
    for h, r, t in positives.tolist():
        frontier, seen = {t}, {t}
        for _ in range(hops):
            frontier = {n for f in frontier for n in nbrs[f]} - seen
            seen |= frontier
        cands = sorted(seen - {h, t})
        for _ in range(20):
            c = int(rng.choice(cands)) if cands and rng.random() < 0.8 else int(rng.integers(E))
            if c != h and int(encode_facts(np.array([c]), np.array([r]), np.array([t]), E)[0]) not in known:
                break
        out.append((c, r, t, 0))
    return np.asarray(out, dtype=np.int64).reshape(-1, 4)


def _labelled(pos: np.ndarray, kg: KG, seed: int) -> np.ndarray:
    pos4 = np.concatenate([pos, np.ones((len(pos), 1), np.int64)], axis=1)
    return np.concatenate([pos4, make_negatives(pos, kg, seed=seed)], axis=0)


def load_drum_dir(path: str | os.PathLike, duplicates: str = "drop", seed: int = 0) -> KGData:
    """A DRUM / Neural-LP dataset folder (``entities.txt``, ``relations.txt``, ``facts.txt``, ``train.txt``,
    ``valid.txt``, ``test.txt``). Validation/test negatives (for beta) are made by :func:`make_negatives`."""
    path = Path(path)
    if not path.is_dir():
        raise InputFileError(
            f"{path} is not a folder; expected a DRUM dataset folder with entities.txt, "
            "relations.txt, facts.txt, train.txt, valid.txt, test.txt"
        )
    ents = read_names(path / "entities.txt")
    rels = read_names(path / "relations.txt")
    e_idx = {e: i for i, e in enumerate(ents)}
    r_idx = {r: i for i, r in enumerate(rels)}
    parts = {}
    for split in ("facts", "train", "valid", "test"):
        p = path / f"{split}.txt"
        parts[split] = _dedupe(p, _index(p, read_triples(p), e_idx, r_idx), len(ents), duplicates)
    kg = KG(tuple(ents), tuple(rels), parts["facts"], name=f"{path.name}/facts")
    return KGData(
        kg,
        parts["train"],
        parts["valid"],
        parts["test"],
        valid_labelled=_labelled(parts["valid"], kg, seed),
        test_labelled=_labelled(parts["test"], kg, seed + 1),
        name=path.name,
    )


def load_faithfulre_dir(path: str | os.PathLike, duplicates: str = "drop") -> KGData:
    """A FaithfulRE dataset folder: ``entities.txt``, ``relations.txt``, ``train_facts.txt``, ``train.txt``,
    ``valid_positive_negative_score.txt``, ``test_positive_negative_score.txt`` and optionally ``test_facts.txt``
    (the inductive test graph; defaults to the training facts) and ``valid.txt``."""
    path = Path(path)
    if not path.is_dir():
        raise InputFileError(f"{path} is not a folder; expected a FaithfulRE dataset folder")
    ents = read_names(path / "entities.txt")
    rels = read_names(path / "relations.txt")
    e_idx = {e: i for i, e in enumerate(ents)}
    r_idx = {r: i for i, r in enumerate(rels)}

    def tri(name: str) -> np.ndarray:
        p = path / name
        return _dedupe(p, _index(p, read_triples(p), e_idx, r_idx), len(ents), duplicates)

    def lab(name: str) -> np.ndarray:
        p = path / name
        return _index(p, read_triples(p, 4), e_idx, r_idx, labelled=True)

    kg = KG(tuple(ents), tuple(rels), tri("train_facts.txt"), name=f"{path.name}/train_facts")
    vl, tl = lab("valid_positive_negative_score.txt"), lab("test_positive_negative_score.txt")
    test_kg = (
        kg.with_facts(tri("test_facts.txt"), name=f"{path.name}/test_facts")
        if (path / "test_facts.txt").exists()
        else None
    )
    valid = tri("valid.txt") if (path / "valid.txt").exists() else vl[vl[:, 3] == 1, :3]
    return KGData(
        kg,
        tri("train.txt"),
        valid,
        tl[tl[:, 3] == 1, :3],
        valid_labelled=vl,
        test_labelled=tl,
        test_kg=test_kg,
        name=path.name,
    )


def load_tsv(path: str | os.PathLike, duplicates: str = "drop", name: str | None = None) -> KG:
    """A KG from one file of ``head relation tail`` lines (vocabularies in order of appearance). An empty file (no
    triples) is an InputFileError, not a graph without facts."""
    p = Path(path)
    triples = read_triples(p)
    if not triples:
        raise InputFileError(f"{p} holds no triples: expected head<TAB>relation<TAB>tail lines", p)
    return KG.from_triples(triples, duplicates=duplicates, name=name or p.stem)


def load_grail(path: str | os.PathLike, ind_path: str | os.PathLike | None = None, seed: int = 0) -> KGData:
    """GraIL inductive splits as in the paper: the training graph (``path/train.txt``) and the inductive test graph
    (``ind_path/train.txt``, default ``<path>_ind``) are each split 3:1 into facts and positive queries; validation
    queries are ``path/valid.txt``; negatives come from :func:`make_negatives`."""
    path = Path(path)
    ind = Path(ind_path) if ind_path is not None else path.with_name(path.name + "_ind")
    tr, va, it = (
        read_triples(_need(p, "GraIL triples"))
        for p in (path / "train.txt", path / "valid.txt", ind / "train.txt")
    )
    rels = sorted({r for _, r, _ in tr + va + it})
    ents = sorted({e for h, _, t in tr + va + it for e in (h, t)})
    e_idx = {e: i for i, e in enumerate(ents)}
    r_idx = {r: i for i, r in enumerate(rels)}
    train_all = _index(path / "train.txt", tr, e_idx, r_idx)
    facts, train = split_facts(train_all, (0.75, 0.25), seed)
    ind_all = _index(ind / "train.txt", it, e_idx, r_idx)
    tfacts, test = split_facts(ind_all, (0.75, 0.25), seed + 1)
    valid = _index(path / "valid.txt", va, e_idx, r_idx)
    kg = KG(tuple(ents), tuple(rels), facts, name=f"{path.name}/facts")
    test_kg = kg.with_facts(tfacts, name=f"{ind.name}/facts")
    return KGData(
        kg,
        train,
        valid,
        test,
        valid_labelled=_labelled(valid, kg, seed),
        test_labelled=_labelled(test, test_kg, seed + 1),
        test_kg=test_kg,
        name=path.name,
    )


def load_dataset(path: str | os.PathLike, seed: int = 0) -> KGData:
    """Detect the format of a folder: DRUM (``facts.txt``), FaithfulRE (``train_facts.txt``) or a folder of
    ``train/valid/test.txt`` only (pykeen-style TSVs: the training triples are split 3:1 into facts and queries)."""
    p = Path(path)
    if not p.is_dir():
        raise InputFileError(
            f"{p} is not a folder; expected a DRUM dataset folder (entities.txt, relations.txt, "
            "facts.txt, train.txt, valid.txt, test.txt) or a FaithfulRE/pykeen-style folder"
        )
    if (p / "facts.txt").exists():
        return load_drum_dir(p, seed=seed)
    if (p / "train_facts.txt").exists():
        return load_faithfulre_dir(p)
    if (p / "train.txt").exists():
        rows = {s: read_triples(_need(p / f"{s}.txt", "triples")) for s in ("train", "valid", "test")}
        kg_all = KG.from_triples([r for s in rows.values() for r in s], duplicates="drop", name=p.name)
        e_idx = {e: i for i, e in enumerate(kg_all.entities)}
        r_idx = {r: i for i, r in enumerate(kg_all.relations)}
        arr = {
            s: _dedupe(p / f"{s}.txt", _index(p / f"{s}.txt", v, e_idx, r_idx), kg_all.n_entities, "drop")
            for s, v in rows.items()
        }
        facts, train = split_facts(arr["train"], (0.75, 0.25), seed)
        kg = kg_all.with_facts(facts, name=f"{p.name}/facts")
        return KGData(
            kg,
            train,
            arr["valid"],
            arr["test"],
            valid_labelled=_labelled(arr["valid"], kg, seed),
            test_labelled=_labelled(arr["test"], kg, seed + 1),
            name=p.name,
        )
    raise InputFileError(
        f"{p}: found neither facts.txt (DRUM format), train_facts.txt (FaithfulRE) nor train.txt"
    )


def perturbed_datasets(
    kg: KG, n_subsample: int = 10, n_rewire: int = 10, n_random: int = 9, drop: float = 0.3, seed: int = 0
) -> list[KG]:
    """The faithfulness test bed: ``kg`` itself, ``n_subsample`` copies with a fraction ``drop`` of facts removed,
    ``n_rewire`` copies where a fraction ``drop`` of facts get the tail of another fact of the same relation, and
    ``n_random`` random KGs with the same number of facts over a shrinking entity subset (higher degrees, larger
    walk counts, which stress counting)."""
    if not isinstance(kg, KG):
        raise InputError(f"kg must be a KG, got {describe(kg)}")
    for name, v in (("n_subsample", n_subsample), ("n_rewire", n_rewire), ("n_random", n_random)):
        check_int(v, name, minimum=0, maximum=10**4)
    check_float(drop, "drop", minimum=0, maximum=1)
    rng = np.random.default_rng(seed)
    out = [kg.with_facts(kg.facts, name=f"{kg.name}")]
    f = kg.facts
    for i in range(n_subsample):
        keep = rng.random(len(f)) >= drop
        out.append(kg.with_facts(f[keep], name=f"subsample-{i}"))
    for i in range(n_rewire):
        g = f.copy()
        sel = np.flatnonzero(rng.random(len(f)) < drop)
        for r in np.unique(g[sel, 1]):
            s = sel[g[sel, 1] == r]
            g[s, 2] = g[rng.permutation(s), 2]
        out.append(kg.with_facts(_unique_rows(g, kg.n_entities), name=f"rewire-{i}"))
    E, R = kg.n_entities, kg.n_relations
    for i in range(n_random):
        n_ent = max(4, int(E / (1.5 + i)))
        ents = rng.choice(E, size=n_ent, replace=False)
        g = np.stack(
            [rng.choice(ents, len(f)), rng.integers(R, size=len(f)), rng.choice(ents, len(f))], axis=1
        )
        out.append(kg.with_facts(_unique_rows(g, E), name=f"random-{i}"))
    return out


def _unique_rows(g: np.ndarray, E: int) -> np.ndarray:
    ids = encode_facts(g[:, 0], g[:, 1], g[:, 2], E)
    _, first = np.unique(ids, return_index=True)
    return g[np.sort(first)]


def load_real_kg(name: str, data_dir: str | os.PathLike | None = None, seed: int = 0) -> KGData:
    """Kinships, UMLS or Nations from paperkit's data folder (``iclr24 data get NAME`` extracts the raw TSVs once
    from the pykeen wheel; pykeen itself is never imported). The standard training triples are split 3:1 into KB
    facts and training queries with ``seed``; validation/test negatives as in :func:`make_negatives`.
    A missing file raises :class:`~iclr24.paperkit.data.folder.DataMissing` naming the command to run."""
    from iclr24.paperkit.data.folder import require_data

    if name not in REAL_KGS:
        raise InputError(f"unknown knowledge graph {name!r}; expected one of {', '.join(REAL_KGS)}")
    data = load_dataset(require_data(name, data_dir), seed=seed)
    data.name = name
    return data
