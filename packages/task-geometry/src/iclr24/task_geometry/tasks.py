"""The paper's task families: P input conditions (clusters) with binary targets and a prescribed input-label
alignment.

Notation (the paper's): ``P`` conditions, ``n = log2 P`` bits ``F in {0,1}^{P x n}``, ``k`` binary targets
``Y in {0,1}^{P x k}``, input condition means ``M in R^{P x m}`` linearly expanded to ``D`` dimensions, noise std
``sigma``. Kernels ``K_x = M M^T`` and ``K_y = (2Y-1)(2Y-1)^T``; the alignment is ``c = CKA(K_x, K_y)``.

Walsh cube (the deterministic analogue of the authors' ``RandomOrthogonal`` task):

    H       = F S^T mod 2             every non-constant parity of the bits, ordered by popcount then lexicographic
    Phi     = 2H - 1  in {+-1}^{P x (P-1)},   Phi^T Phi = P I                                            Eq. (W1)
    pi_j    = a (j < k),  b = (P-1-k a)/(P-1-k) (j >= k),  sum_j pi_j = P - 1                            Eq. (W2)
    M       = Phi diag(sqrt(pi))                                                                         Eq. (W3)
    c(a)    = sqrt(k) a / sqrt(k a^2 + (P-1-k) b^2)                                                      Eq. (W4)
    x       = M[cond] Q + sigma eps,   Q in R^{(P-1) x D}: orthonormal rows times sqrt(D), seed 0        Eq. (W5)

``a = 0`` hides the labels from any linear read-out of the means (XOR-like), ``a = 1`` is the isotropic cube
(``c = sqrt(k/(P-1))``) and ``a = (P-1)/k`` puts all input variance on the targets (``c = 1``).

Random kernel classification (the authors' ``RandomKernelClassification``): k random balanced dichotomies and a
random PSD input kernel with exactly the prescribed alignment (Eq. (R1) below).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from dataclasses import field

import numpy as np
import torch

from iclr24.paperkit.errors import InputError

__all__ = [
    "Task",
    "walsh_functions",
    "cube_bits",
    "alignment_of_a",
    "a_of_alignment",
    "walsh_cube",
    "random_kernel",
    "linear_expansion",
    "cube_dichotomy_classes",
]


MAX_BITS = 10  # P = 2**n_bits conditions at most 1024 (the Walsh matrix is P x (P-1))
MAX_CONDITIONS = 2**MAX_BITS
MAX_VALUES = 10**8  # most floats one call draws (samples x dim)


def _check_int(name: str, v: object, minimum: int, maximum: int | None = None) -> int:
    if (
        isinstance(v, bool)
        or not isinstance(v, int | np.integer)
        or v < minimum
        or (maximum is not None and v > maximum)
    ):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise InputError(f"{name} must be an int {bound}, got {v!r}")
    return int(v)


def _check_seed(name: str, v: object) -> int:
    return _check_int(name, v, 0, 2**63 - 1)


def _check_size(what: str, n: int, dim: int) -> None:
    if n * dim > MAX_VALUES:
        raise InputError(f"{what}: {n} samples x {dim} dimensions is more than {MAX_VALUES} values")


def _check_nonneg(name: str, v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | np.floating) or not math.isfinite(v) or v < 0:
        raise InputError(f"{name} must be a finite number >= 0, got {v!r}")
    return float(v)


def n_bits_of(P: int) -> int:
    """``log2 P`` for a power of two ``P >= 2``; a clear ``ValueError`` otherwise."""
    P = _check_int("P", P, 2)
    if P & (P - 1) or P > 2**62:
        raise InputError(f"P must be a power of two for the Walsh cube task (2, 4, 8, 16, ...), got P={P}")
    return P.bit_length() - 1


def cube_bits(n_bits: int) -> np.ndarray:
    """``F in {0,1}^{P x n}``: row p is the binary code of condition p (most significant bit first)."""
    n = _check_int("n_bits", n_bits, 1, 20)
    P = 2**n
    return ((np.arange(P)[:, None] >> np.arange(n - 1, -1, -1)[None, :]) & 1).astype(np.int64)


def walsh_functions(n_bits: int) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """All ``P - 1`` non-constant Walsh functions of ``n`` bits as 0/1 labels ``H (P x (P-1))``.

    Columns are ordered by popcount of the subset ``S`` and then lexicographically, so the first ``n`` columns are
    the single bits (the cube's "faces"). Returns ``(H, subsets)``.
    """
    F = cube_bits(n_bits)
    n = F.shape[1]
    subsets = [s for r in range(1, n + 1) for s in itertools.combinations(range(n), r)]
    S = np.zeros((len(subsets), n), dtype=np.int64)
    for j, s in enumerate(subsets):
        S[j, list(s)] = 1
    # Eq. (W1): H = F S^T mod 2
    H = (F @ S.T) % 2
    return H, subsets


def alignment_of_a(a: float, P: int, k: int) -> float:
    """Closed form of the Walsh cube's alignment ``c(a)`` (Eq. (W4))."""
    P, k, a = _check_cube_params(P, k, a)
    m = P - 1 - k
    b = (P - 1 - k * a) / m
    # Eq. (W4): c(a) = sqrt(k) a / sqrt(k a^2 + (P-1-k) b^2)
    return math.sqrt(k) * a / math.sqrt(k * a * a + m * b * b)


def a_of_alignment(c: float, P: int, k: int) -> float:
    """Inverse of Eq. (W4): the target variance ``a`` that gives alignment ``c in [0, 1]``.

    With ``r = b/a``, Eq. (W4) reads ``c^2 = k / (k + m r^2)``, so ``r = sqrt(k (1-c^2) / (m c^2))`` and
    ``a = (P-1)/(k + m r)`` from ``k a + m b = P - 1``.
    """
    c = _check_nonneg("alignment", c)
    if c > 1:
        raise InputError(f"alignment must be in [0, 1], got {c}")
    P, k, _ = _check_cube_params(P, k, 0.0)
    if c == 0:
        return 0.0
    m = P - 1 - k
    r = math.sqrt(k * (1 - c * c) / (m * c * c))
    return (P - 1) / (k + m * r)


def _check_cube_params(P: int, k: int, a: float) -> tuple[int, int, float]:
    P = _check_int("P", P, 4)
    n_bits_of(P)
    k = _check_int("k", k, 1)
    if k > P - 2:
        raise InputError(
            f"k must be between 1 and P-2={P - 2} (some non-target direction is needed), got k={k}"
        )
    a = _check_nonneg("a", a)
    if a > (P - 1) / k + 1e-12:
        raise InputError(f"a must be in [0, (P-1)/k] = [0, {(P - 1) / k:g}] so that b >= 0, got a={a}")
    return P, k, min(a, (P - 1) / k)


def linear_expansion(m: int, dim: int, seed: int = 0) -> np.ndarray:
    """``Q in R^{m x D}``: the first ``m`` rows of a seeded random orthonormal matrix, times ``sqrt(D)`` (Eq. (W5))."""
    m = _check_int("rank", m, 1)
    dim = _check_int("dim", dim, 1)
    if dim < m:
        raise InputError(f"dim must be >= the rank of the input means ({m}), got dim={dim}")
    _check_size("linear_expansion", dim, m)
    g = np.random.default_rng(_check_seed("expansion_seed", seed))
    q, r = np.linalg.qr(g.standard_normal((dim, m)))
    q = q * np.sign(np.diag(r))[None, :]  # a unique QR (Haar-distributed columns)
    return q.T * math.sqrt(dim)


@dataclass(frozen=True)
class Task:
    """A classification task over ``P`` conditions: noisy training samples plus the noise-free geometry.

    ``X`` (n, D) float32 inputs, ``Y`` (n, k) float32 0/1 targets, ``cond`` (n,) int64 condition of each sample,
    ``means`` (P, D) noise-free input means, ``targets`` (P, k) 0/1 labels of each condition, ``K_x``/``K_y`` (P, P)
    kernels, ``alignment`` = CKA(K_x, K_y), ``noise`` the input noise std, ``a`` the Walsh target variance (or None).
    """

    name: str
    X: torch.Tensor
    Y: torch.Tensor
    cond: torch.Tensor
    means: np.ndarray
    targets: np.ndarray
    K_x: np.ndarray
    K_y: np.ndarray
    alignment: float
    noise: float
    a: float | None = None
    info: dict = field(default_factory=dict)

    @property
    def P(self) -> int:
        return int(self.means.shape[0])

    @property
    def k(self) -> int:
        return int(self.targets.shape[1])

    @property
    def dim(self) -> int:
        return int(self.means.shape[1])

    def trials(self, n_per_condition: int, noise: float | None = None, seed: int = 0):
        """Fresh noisy samples, ``n_per_condition`` of every condition: ``(X, cond)`` (float32, int64)."""
        n = _check_int("n_per_condition", n_per_condition, 1)
        sigma = self.noise if noise is None else _check_nonneg("noise", noise)
        _check_size("trials", n * self.P, self.dim)
        g = np.random.default_rng(_check_seed("seed", seed))
        cond = np.repeat(np.arange(self.P), n)
        x = self.means[cond] + sigma * g.standard_normal((cond.size, self.dim))
        return torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(cond)


def _samples(means: np.ndarray, targets: np.ndarray, n: int, noise: float, seed: int):
    g = np.random.default_rng(seed)
    cond = g.integers(0, means.shape[0], size=n)
    x = means[cond] + noise * g.standard_normal((n, means.shape[1]))
    return (
        torch.as_tensor(x, dtype=torch.float32),
        torch.as_tensor(targets[cond], dtype=torch.float32),
        torch.as_tensor(cond),
    )


def _cka(A: np.ndarray, B: np.ndarray) -> float:
    from .metrics import cka

    return cka(A, B)


def _sampled_task(name, means, targets, K_x, K_y, n: int, noise: float, seed: int, **fields) -> Task:
    """The :class:`Task` of a geometry: ``n`` noisy samples of its condition means (:func:`_samples`) and the
    CKA alignment of its input and target kernels; ``fields``: the generator's own (``a``, ``info``)."""
    X, Y, cond = _samples(means, targets, n, noise, seed)
    return Task(
        name=name,
        X=X,
        Y=Y,
        cond=cond,
        means=means,
        targets=targets,
        K_x=K_x,
        K_y=K_y,
        alignment=_cka(K_x, K_y),
        noise=noise,
        **fields,
    )


def walsh_cube(
    n_bits: int = 3,
    k: int = 1,
    a: float | None = 1.0,
    *,
    alignment: float | None = None,
    dim: int = 100,
    noise: float = 1.0,
    n_samples: int = 5000,
    seed: int = 0,
    expansion_seed: int = 0,
) -> Task:
    """The Walsh cube task with ``P = 2**n_bits`` conditions, the first ``k`` Walsh functions as targets and input
    alignment set either by the target variance ``a`` or directly by ``alignment`` (Eqs. W1-W5).

    >>> t = walsh_cube(3, k=1, a=1.0)     # the isotropic cube: alignment 1/sqrt(7)
    """
    n = _check_int("n_bits", n_bits, 2, MAX_BITS)
    P = 2**n
    if alignment is not None:
        a = a_of_alignment(alignment, P, k)
    if a is None:
        raise InputError("give the target variance a or the alignment c, got neither")
    P, k, a = _check_cube_params(P, k, a)
    noise = _check_nonneg("noise", noise)
    n_samples = _check_int("n_samples", n_samples, 1)
    dim = _check_int("dim", dim, 1)
    _check_size("walsh_cube", n_samples, dim)
    seed = _check_seed("seed", seed)
    H, subsets = walsh_functions(n)
    Phi = 2.0 * H - 1.0
    m = P - 1 - k
    # Eq. (W2): pi_j = a for the k targets, b = (P-1-k a)/(P-1-k) for the rest
    pi = np.concatenate([np.full(k, a), np.full(m, (P - 1 - k * a) / m)])
    # Eq. (W3): M = Phi diag(sqrt(pi))
    M = Phi * np.sqrt(pi)[None, :]
    # Eq. (W5): x = M[cond] Q + sigma eps
    means = M @ linear_expansion(P - 1, dim, expansion_seed)
    targets = H[:, :k].astype(np.float64)
    K_x = M @ M.T
    K_y = (2 * targets - 1) @ (2 * targets - 1).T
    name = f"walsh_cube(P={P}, k={k}, a={a:g})"
    info = {"subsets": subsets, "pi": pi, "bits": cube_bits(n)}
    return _sampled_task(name, means, targets, K_x, K_y, n_samples, noise, seed, a=a, info=info)


def random_kernel(
    P: int = 32,
    k: int = 1,
    alignment: float = 0.5,
    *,
    max_rank: int | None = None,
    dim: int = 100,
    noise: float = 1.0,
    n_samples: int = 5000,
    seed: int = 0,
    expansion_seed: int = 0,
) -> Task:
    """Random kernel classification: ``k`` random balanced dichotomies of ``P`` conditions and a random PSD input
    kernel whose centred alignment to ``K_y`` is exactly ``alignment``.

    With ``Ky_hat = K_y/||K_y||`` and a random PSD ``R`` (Dirichlet spectrum on a random orthonormal basis of the
    complement of ``span{1, y_1..y_k}``, so ``<R, K_y> = 0`` and ``HRH = R``):

        K_x = t Ky_hat + (1-t) R/||R||,   t = c / (c + sqrt(1-c^2))   =>   CKA(K_x, K_y) = c          Eq. (R1)

    ``trace K_x`` is scaled to ``P (P-1)`` as in the Walsh cube; the means are the eigen-embedding ``V sqrt(L)``
    expanded to ``dim`` dimensions. ``P`` need not be a power of two but must be even.
    """
    P = _check_int("P", P, 4, MAX_CONDITIONS)
    if P % 2:
        raise InputError(f"P must be even so that balanced dichotomies exist, got P={P}")
    k = _check_int("k", k, 1, P - 2)
    c = _check_nonneg("alignment", alignment)
    if c > 1:
        raise InputError(f"alignment must be in [0, 1], got {c}")
    noise = _check_nonneg("noise", noise)
    n_samples = _check_int("n_samples", n_samples, 1)
    dim = _check_int("dim", dim, 1)
    _check_size("random_kernel", n_samples, dim)
    _check_seed("expansion_seed", expansion_seed)
    g = np.random.default_rng(_check_seed("seed", seed))
    labels: list[np.ndarray] = []
    seen: set[bytes] = set()
    for _ in range(1000 * k):
        if len(labels) == k:
            break
        y = np.zeros(P)
        y[g.permutation(P)[: P // 2]] = 1
        key = (y if y[0] == 0 else 1 - y).tobytes()
        if key not in seen:
            seen.add(key)
            labels.append(y)
    if len(labels) < k:
        raise InputError(f"could not draw k={k} distinct balanced dichotomies of P={P} conditions")
    targets = np.stack(labels, axis=1)
    S = 2 * targets - 1
    K_y = S @ S.T
    basis = np.concatenate([np.ones((P, 1)), S], axis=1)
    rank_y = int(np.linalg.matrix_rank(S))
    max_rank = P - 1 if max_rank is None else _check_int("max_rank", max_rank, rank_y)
    if max_rank > P - 1:
        raise InputError(f"max_rank must be <= P-1={P - 1} (centred kernels), got {max_rank}")
    r = max_rank - rank_y
    if r == 0 and c < 1:
        raise InputError(
            f"max_rank={max_rank} leaves no room beside the targets; alignment < 1 needs more rank"
        )
    # Eq. (R1): K_x = t Ky_hat + (1-t) R_hat with <R, K_y> = 0
    t = c / (c + math.sqrt(1 - c * c)) if c < 1 else 1.0
    K = t * K_y / np.linalg.norm(K_y)
    if r > 0:
        proj = np.eye(P) - basis @ np.linalg.pinv(basis)
        U, _ = np.linalg.qr(proj @ g.standard_normal((P, r)))  # orthonormal, inside the complement
        lam = g.dirichlet(np.ones(r))
        R = (U * lam[None, :]) @ U.T
        K = K + (1 - t) * R / np.linalg.norm(R)
    K = 0.5 * (K + K.T)
    K *= P * (P - 1) / np.trace(K)
    evals, evecs = np.linalg.eigh(K)
    keep = evals > 1e-9 * evals.max()
    emb = evecs[:, keep] * np.sqrt(evals[keep])[None, :]
    means = emb @ linear_expansion(emb.shape[1], dim, expansion_seed)
    K_x = emb @ emb.T
    name = f"random_kernel(P={P}, k={k}, c={c:g})"
    info = {"max_rank": max_rank, "t": t}
    return _sampled_task(name, means, targets, K_x, K_y, n_samples, noise, seed + 1, info=info)


def cube_dichotomy_classes() -> dict[str, list[np.ndarray]]:
    """The 35 balanced dichotomies of the 3-cube (P = 8), grouped by the graph the 4 vertices of one side induce
    on the cube: ``face`` (a 4-cycle; one bit), ``corner`` (a vertex and its 3 neighbours), ``snake`` (an induced
    path of 4), ``net`` (a path of 3 plus an isolated vertex), ``xor2`` (two opposite edges; parity of two bits),
    ``xor3`` (no edges; parity of three bits). Each dichotomy is a 0/1 vector with condition 0 on side 0.
    """
    F = cube_bits(3)
    adj = (np.abs(F[:, None, :] - F[None, :, :]).sum(-1) == 1).astype(int)
    out: dict[str, list[np.ndarray]] = {k: [] for k in ("face", "corner", "snake", "net", "xor2", "xor3")}
    for side in itertools.combinations(range(1, 8), 4):
        idx = list(side)
        sub = adj[np.ix_(idx, idx)]
        deg = sorted(sub.sum(1).tolist())
        n_edges = sum(deg) // 2
        if n_edges == 4:
            name = "face"
        elif n_edges == 3:
            name = "corner" if deg[-1] == 3 else "snake"
        elif n_edges == 2:
            name = "xor2" if deg == [1, 1, 1, 1] else "net"
        else:
            name = "xor3"
        y = np.zeros(8)
        y[idx] = 1
        out[name].append(y)
    return out
