"""Ratings as sparse triplets, the paper's synthetic low-rank generator (Sec. 5.1), and loaders for the real datasets
from a path the user gives (MovieLens-100K/1M, the recbole copy of ML-100K, Douban/Flixster in Monti et al.'s
``.mat`` format or as triplets).

A :class:`Ratings` is a set of observed entries ``(users[k], items[k], values[k])`` of an ``n_users x n_items``
matrix. It is never densified unless you ask (:meth:`Ratings.to_dense`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import describe

__all__ = [
    "Ratings",
    "SyntheticData",
    "RESPONSES",
    "make_synthetic",
    "load_movielens",
    "load_movielens_split",
    "load_recbole_inter",
    "movielens_100k_split",
    "movielens_100k_u1",
    "load_monti",
    "load_triplets",
]


@dataclass(frozen=True)
class Ratings:
    """Observed entries of an ``n_users x n_items`` matrix (0-based indices). Validated on construction."""

    users: np.ndarray
    items: np.ndarray
    values: np.ndarray
    n_users: int
    n_items: int

    def __post_init__(self) -> None:
        u = np.asarray(self.users)
        i = np.asarray(self.items)
        v = np.asarray(self.values)
        if u.ndim != 1 or i.ndim != 1 or v.ndim != 1 or not (len(u) == len(i) == len(v)):
            raise InputError(
                f"users, items, values must be 1-D arrays of one length, got shapes {u.shape}, {i.shape}, {v.shape}"
            )
        for name, n in (("n_users", self.n_users), ("n_items", self.n_items)):
            if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
                raise InputError(f"{name} must be a positive int, got {n!r}")
        if len(u) and not (np.issubdtype(u.dtype, np.integer) and np.issubdtype(i.dtype, np.integer)):
            raise InputError(f"user and item indices must be integers, got dtypes {u.dtype}, {i.dtype}")
        if not np.issubdtype(v.dtype, np.number) or np.issubdtype(v.dtype, np.complexfloating):
            raise InputError(f"rating values must be real numbers, got dtype {v.dtype}")
        if len(v) and not np.all(np.isfinite(v)):
            bad = int(np.flatnonzero(~np.isfinite(v))[0])
            raise InputError(
                f"ratings must be finite; entry {bad} (user {u[bad]}, item {i[bad]}) is {v[bad]}"
            )
        if len(u) and (u.min() < 0 or u.max() >= self.n_users):
            raise InputError(f"user indices must lie in [0, {self.n_users}), got [{u.min()}, {u.max()}]")
        if len(i) and (i.min() < 0 or i.max() >= self.n_items):
            raise InputError(f"item indices must lie in [0, {self.n_items}), got [{i.min()}, {i.max()}]")
        object.__setattr__(self, "users", u.astype(np.int64, copy=False))
        object.__setattr__(self, "items", i.astype(np.int64, copy=False))
        object.__setattr__(self, "values", v.astype(np.float64, copy=False))
        object.__setattr__(self, "n_users", int(self.n_users))
        object.__setattr__(self, "n_items", int(self.n_items))

    def __len__(self) -> int:
        return len(self.values)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_users, self.n_items)

    @classmethod
    def from_dense(cls, x: np.ndarray, mask: np.ndarray, allow_empty: bool = False) -> Ratings:
        """The entries of ``x`` where ``mask`` is true. An all-missing row or column is an error unless
        ``allow_empty`` (such a user or item carries no information to complete)."""
        x = np.asarray(x)
        mask = np.asarray(mask)
        if x.ndim != 2 or mask.shape != x.shape:
            raise InputError(f"x and mask must be 2-D of one shape, got {x.shape} and {mask.shape}")
        mask = mask.astype(bool)
        if not allow_empty:
            rows = np.flatnonzero(~mask.any(axis=1))
            cols = np.flatnonzero(~mask.any(axis=0))
            if len(rows) or len(cols):
                where = f"rows {rows[:5].tolist()}" if len(rows) else f"columns {cols[:5].tolist()}"
                raise InputError(
                    f"the mask leaves {where} with no observed entry; drop them or pass allow_empty=True"
                )
        u, i = np.nonzero(mask)
        return cls(u, i, x[u, i], x.shape[0], x.shape[1])

    def to_dense(self, fill: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """``(X, M)`` of shape ``(n_users, n_items)``, unobserved entries set to ``fill``."""
        x = np.full(self.shape, fill, dtype=np.float64)
        m = np.zeros(self.shape, dtype=bool)
        x[self.users, self.items] = self.values
        m[self.users, self.items] = True
        return x, m

    def transpose(self) -> Ratings:
        return Ratings(self.items, self.users, self.values, self.n_items, self.n_users)

    def subset(self, index: np.ndarray) -> Ratings:
        """The entries at ``index`` (integer positions, or a boolean mask over the entries)."""
        idx = np.asarray(index)
        if idx.dtype == bool:
            if idx.shape != (len(self),):
                raise InputError(
                    f"a boolean index must have one flag per entry ({len(self)}), got {idx.shape}"
                )
        elif not np.issubdtype(idx.dtype, np.integer):
            raise InputError(f"index must hold integer positions or booleans, got {describe(index)}")
        elif idx.size and (idx.min() < -len(self) or idx.max() >= len(self)):
            raise InputError(f"index must lie in [0, {len(self)}), got values in [{idx.min()}, {idx.max()}]")
        index = idx
        return Ratings(self.users[index], self.items[index], self.values[index], self.n_users, self.n_items)

    def split(self, fraction: float, seed: int = 0) -> tuple[Ratings, Ratings]:
        """Random split of the entries: ``(rest, held_out)`` with ``round(fraction * len)`` held out."""
        if not (isinstance(fraction, int | float) and 0.0 < fraction < 1.0):
            raise InputError(f"fraction must lie in (0, 1), got {fraction!r}")
        k = int(round(fraction * len(self)))
        if k == 0 or k == len(self):
            raise InputError(
                f"a {fraction} split of {len(self)} ratings leaves an empty side; use more ratings or another fraction"
            )
        perm = np.random.default_rng(seed).permutation(len(self))
        return self.subset(np.sort(perm[k:])), self.subset(np.sort(perm[:k]))


# ----------------------------------------------------------------------------------------------- synthetic data

RESPONSES = {
    "linear": lambda z: z,
    # rating-like, saturating: 1 + 4 / (1 + exp(-3 z)) in [1, 5]
    "sigmoid5": lambda z: 1.0 + 4.0 / (1.0 + np.exp(-3.0 * z)),
    "tanh": np.tanh,
    "cube": lambda z: z**3,
}


@dataclass(frozen=True)
class SyntheticData:
    """A synthetic matrix ``X = phi(Z)`` (``n_rows x n_cols``, columns are samples), its training entries and the
    test entries (all the unobserved ones), ``Z`` and the observation propensities ``p``."""

    x: np.ndarray
    z: np.ndarray
    train: Ratings
    test: Ratings
    propensity: np.ndarray
    response: str
    mechanism: str


def make_synthetic(
    n_rows: int = 120,
    n_cols: int = 600,
    rank: int = 6,
    response: str = "sigmoid5",
    obs_rate: float = 0.5,
    mechanism: str = "mcar",
    mnar_strength: float = 1.5,
    seed: int = 0,
) -> SyntheticData:
    """The low-rank generator: ``Z = B A^T / sqrt(r)`` with ``A in R^{n x r}``, ``B in R^{m x r}`` standard normal
    (``m = n_rows`` features, ``n = n_cols`` samples), ``X = phi(Z)``.

    ``mechanism='mcar'``: every entry observed with probability ``obs_rate``. ``'mnar'``: with probability
    ``p_ij = sigmoid(a + s * Z_ij)`` (``s = mnar_strength``, larger values observed more often), ``a`` set so
    that the mean of ``p`` is ``obs_rate``. The test set is every unobserved entry."""
    for name, v in (("n_rows", n_rows), ("n_cols", n_cols), ("rank", rank)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10**6:
            raise InputError(f"{name} must be an int in [1, 10**6], got {v!r}")
    if n_rows * n_cols > 10**8:
        raise InputError(
            f"n_rows * n_cols must be <= 10**8 (a dense matrix is drawn), got {n_rows} x {n_cols}"
        )
    if rank > min(n_rows, n_cols):
        raise InputError(f"rank must be <= min(n_rows, n_cols) = {min(n_rows, n_cols)}, got {rank}")
    if response not in RESPONSES:
        raise InputError(f"response must be one of {sorted(RESPONSES)}, got {response!r}")
    if not (isinstance(obs_rate, int | float) and 0.0 < obs_rate < 1.0):
        raise InputError(f"obs_rate must lie in (0, 1), got {obs_rate!r}")
    if mechanism not in ("mcar", "mnar"):
        raise InputError(f"mechanism must be 'mcar' or 'mnar', got {mechanism!r}")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n_cols, rank))
    b = rng.standard_normal((n_rows, rank))
    z = b @ a.T / math.sqrt(rank)
    x = RESPONSES[response](z)
    if mechanism == "mcar":
        p = np.full(z.shape, float(obs_rate))
    else:
        lo, hi = -20.0, 20.0  # bisection on the offset so that mean(p) = obs_rate
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if np.mean(1.0 / (1.0 + np.exp(-(mid + mnar_strength * z)))) < obs_rate:
                lo = mid
            else:
                hi = mid
        p = 1.0 / (1.0 + np.exp(-(0.5 * (lo + hi) + mnar_strength * z)))
    mask = rng.random(z.shape) < p
    train = Ratings.from_dense(x, mask, allow_empty=True)
    test = Ratings.from_dense(x, ~mask, allow_empty=True)
    return SyntheticData(x, z, train, test, p, response, mechanism)


# ----------------------------------------------------------------------------------------------- real data files


def _require_file(path: str | Path, what: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise InputFileError(f"{what} not found at {p}: {_HOW_TO_GET}")
    return p


_HOW_TO_GET = (
    "MovieLens files come from https://grouplens.org/datasets/movielens/ (u.data, u1.base/u1.test in ml-100k.zip; "
    "ratings.dat in ml-1m.zip); the recbole copy of ML-100K via `iclr24 data get movielens-100k`"
)


def _parse_rows(lines: list[str], sep: str, path: Path, first_line: int) -> tuple[list, list, np.ndarray]:
    users, items, vals = [], [], []
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        parts = line.strip().split(sep) if sep != "ws" else line.split()
        if len(parts) < 3:
            raise InputError(
                f"{path}: line {k + first_line} has {len(parts)} column(s), expected at least 3 "
                f"(user, item, rating): {line.strip()[:60]!r}"
            )
        try:
            r = float(parts[2])
        except ValueError:
            raise InputError(
                f"{path}: line {k + first_line}: rating {parts[2]!r} is not a number (expected user, item, rating)"
            ) from None
        if not math.isfinite(r):
            raise InputError(f"{path}: line {k + first_line}: rating {parts[2]!r} is not finite")
        users.append(parts[0].strip())
        items.append(parts[1].strip())
        vals.append(r)
    if not vals:
        raise InputError(f"{path} holds no ratings")
    return users, items, np.asarray(vals, dtype=np.float64)


def _index(ids: list[str], order: list[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """Map raw ids to 0..K-1: numeric ids sorted numerically, otherwise lexicographically."""
    uniq = (
        order
        if order is not None
        else sorted(set(ids), key=lambda s: (0, int(s), s) if s.isdigit() else (1, 0, s))
    )
    pos = {s: k for k, s in enumerate(uniq)}
    return np.asarray([pos[s] for s in ids], dtype=np.int64), list(uniq)


def _read_triplet_file(path: Path) -> tuple[list, list, np.ndarray]:
    text = path.read_text(encoding="latin-1")
    lines = text.splitlines()
    if not lines:
        raise InputError(f"{path} is empty; expected user, item, rating rows")
    first = lines[0]
    if "::" in first:
        return _parse_rows(lines, "::", path, 1)
    sep = "\t" if "\t" in first else ("," if "," in first else "ws")
    head = first.split(sep) if sep != "ws" else first.split()
    # a header row (recbole's `user_id:token ...`, or CSV column names) is skipped
    is_header = len(head) >= 3 and any(w in first.lower() for w in ("user", "item", "rating", "movie"))
    try:
        float(head[2]) if len(head) >= 3 else None
        is_header = False
    except ValueError:
        pass
    return _parse_rows(lines[1:], sep, path, 2) if is_header else _parse_rows(lines, sep, path, 1)


def load_triplets(path: str | Path) -> tuple[Ratings, list[str], list[str]]:
    """Any ``user item rating [timestamp]`` file: tab-, comma-, whitespace- or ``::``-separated, with or without a
    header row. Returns ``(ratings, user_ids, item_ids)``; index ``k`` of the ratings is raw id ``user_ids[k]``."""
    p = _require_file(path, "ratings file")
    users, items, vals = _read_triplet_file(p)
    u, uids = _index(users)
    i, iids = _index(items)
    return Ratings(u, i, vals, len(uids), len(iids)), uids, iids


def load_movielens(path: str | Path) -> Ratings:
    """MovieLens ``u.data`` (ML-100K, tab-separated), ``ratings.dat`` (ML-1M/10M, ``::``) or recbole's
    ``ml-100k.inter``; ids re-indexed from 0 in numeric order."""
    return load_triplets(path)[0]


def load_movielens_split(base: str | Path, test: str | Path) -> tuple[Ratings, Ratings]:
    """A train/test pair such as ``u1.base``/``u1.test``, indexed jointly (ids of both files)."""
    pb, pt = _require_file(base, "training ratings file"), _require_file(test, "test ratings file")
    ub, ib, vb = _read_triplet_file(pb)
    ut, it, vt = _read_triplet_file(pt)
    _, uids = _index(ub + ut)
    _, iids = _index(ib + it)
    u_b, _ = _index(ub, uids)
    i_b, _ = _index(ib, iids)
    u_t, _ = _index(ut, uids)
    i_t, _ = _index(it, iids)
    return (Ratings(u_b, i_b, vb, len(uids), len(iids)), Ratings(u_t, i_t, vt, len(uids), len(iids)))


def load_recbole_inter(path: str | Path) -> tuple[Ratings, list[str], list[str]]:
    """recbole's ``ml-100k.inter`` (header ``user_id:token item_id:token rating:float timestamp:float``); row order
    is that of GroupLens ``u.data``."""
    p = _require_file(path, "ml-100k.inter")
    first = p.read_text(encoding="latin-1").split("\n", 1)[0]
    if "user_id" not in first or "rating" not in first:
        raise InputError(
            f"{p} does not start with recbole's header 'user_id:token item_id:token rating:float ...'; got {first[:80]!r}"
        )
    return load_triplets(p)


def movielens_100k_split(path: str | Path, fold: int = 1) -> tuple[Ratings, Ratings]:
    """The canonical ML-100K ``u{fold}`` split (``fold`` in 1..5) from recbole's ``ml-100k.inter`` (or GroupLens
    ``u.data``): GroupLens' ``mku.sh`` puts rows ``20,000 (fold - 1) + 1 .. 20,000 fold`` of ``u.data`` into
    ``u{fold}.test`` and the other 80,000 into ``u{fold}.base``; the five test sets are disjoint. Users and items
    are indexed over all 100,000 ratings, so every fold has the same 943 x 1682 shape.

    ``path`` is the ``.inter``/``u.data`` file or a folder holding one (``iclr24 data get movielens-100k``)."""
    if isinstance(fold, bool) or not isinstance(fold, int) or not 1 <= fold <= 5:
        raise InputError(f"fold must be an int in 1..5 (the u1-u5 splits), got {fold!r}")
    p = Path(path)
    if p.is_dir():
        cands = sorted(p.rglob("ml-100k.inter")) + sorted(p.rglob("u.data"))
        if not cands:
            raise InputFileError(f"no ml-100k.inter or u.data under {p}: {_HOW_TO_GET}")
        p = cands[0]
    ratings = load_movielens(p)
    if len(ratings) != 100_000:
        raise InputError(
            f"{p} holds {len(ratings)} ratings; the ML-100K u1-u5 splits need all 100,000 in u.data order"
        )
    idx = np.arange(len(ratings))
    test = (idx >= 20_000 * (fold - 1)) & (idx < 20_000 * fold)
    return ratings.subset(idx[~test]), ratings.subset(idx[test])


def movielens_100k_u1(path: str | Path) -> tuple[Ratings, Ratings]:
    """The canonical ML-100K ``u1`` split: :func:`movielens_100k_split` with ``fold=1`` (``u1.test`` = the first
    20,000 rows of ``u.data``, ``u1.base`` the other 80,000)."""
    return movielens_100k_split(path, 1)


def load_monti(path: str | Path) -> tuple[Ratings, Ratings]:
    """Douban / Flixster / YahooMusic as distributed by Monti et al. (2017): ``training_test_dataset.mat`` with the
    rating matrix ``M`` and the 0/1 masks ``Otraining``, ``Otest``. Returns ``(train, test)``.

    MATLAB v5 files are read with scipy; the v7.3 (HDF5) originals need ``h5py`` installed."""
    p = _require_file(path, "Monti et al. .mat file (training_test_dataset.mat from github.com/fmonti/mgcnn)")
    try:
        from scipy.io import loadmat
        from scipy.io.matlab import MatReadError

        try:
            mat = loadmat(p)
        except (MatReadError, IndexError, OSError, TypeError) as e:
            raise InputFileError(
                f"{p} is not a readable MATLAB .mat file ({type(e).__name__}: {e})", p
            ) from None
        get = lambda k: np.asarray(mat[k], dtype=np.float64)
    except NotImplementedError:  # v7.3
        try:
            import h5py
        except ImportError:
            raise InputError(f"{p} is a MATLAB v7.3 (HDF5) file; install h5py to read it") from None
        try:
            f = h5py.File(p, "r")
        except OSError as e:
            raise InputFileError(f"{p} is not a readable MATLAB v7.3 (HDF5) file: {e}", p) from None
        get = lambda k: np.asarray(f[k], dtype=np.float64).T
    except ValueError as e:
        raise InputFileError(f"{p} is not a MATLAB .mat file: {e}", p) from None
    try:
        m, otr, ote = get("M"), get("Otraining"), get("Otest")
    except (TypeError, ValueError) as e:
        raise InputFileError(f"{p}: M, Otraining and Otest must be numeric matrices ({e})", p) from None
    except KeyError as e:
        raise InputFileError(f"{p} lacks the variable {e}; expected M, Otraining, Otest") from None
    if otr.shape != m.shape or ote.shape != m.shape:
        raise InputError(f"{p}: M {m.shape}, Otraining {otr.shape}, Otest {ote.shape} must share one shape")
    train = Ratings.from_dense(m, otr > 0, allow_empty=True)
    test = Ratings.from_dense(m, ote > 0, allow_empty=True)
    return train, test
