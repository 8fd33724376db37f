"""Finding paired groups of outliers with opposing signals from a loss history (the paper's identification
procedure).

Notation: loss changes ``Delta_i(t)`` of tracked examples over a window of ``W`` steps (see :mod:`.tracking`),
top-k sets ``S^+_t`` (losses rising most) and ``S^-_t`` (falling most), groups ``A, B`` of tracked examples.

    m_i           = sum_t [i in S^+_t] + [i in S^-_t]          membership frequency; recurring = largest m_i
    Delta_A(t)    = (1/|A|) sum_{i in A} Delta_i(t)             change of the group-mean loss
    rho(A, B)     = Pearson(Delta_A, Delta_B)                   opposing pairs: rho << 0 (anti-phase)
    amp(A, B)     = sqrt(mean_t ((Delta_A(t) - Delta_B(t)) / 2)^2)   size of the anti-phase swing (ours)
    cos(A, B)     = <grad L_A, grad L_B> / (||grad L_A|| ||grad L_B||)      opposing gradients: cos < 0

The procedure follows the paper's description (track the training points whose loss changes most, keep the ones
that recur, group them, and pair groups whose losses move in opposite directions); the grouping rule (by label
or by k-means on the inputs) and the recurrence cut are this package's choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

import torch
from torch import Tensor
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import describe

from .tracking import LossTracker
from .tracking import per_example_loss
from .tracking import top_k_indices

__all__ = [
    "CLUSTERINGS",
    "Group",
    "OpposingPair",
    "OpposingGroups",
    "pearson",
    "antiphase_amplitude",
    "membership_frequency",
    "group_mean_changes",
    "top_k_precision",
    "kmeans",
    "find_opposing_groups",
    "group_gradient_cosine",
]

CLUSTERINGS = ("label", "kmeans")


def pearson(a: Tensor, b: Tensor) -> float:
    """Pearson correlation of two equal-length finite series. A constant series has no correlation: InputError
    (not NaN); so do NaN/inf values."""
    r = _pearson_or_nan(a, b)
    if r != r:
        raise InputError("pearson: a series is constant (zero variance), so its correlation is undefined")
    return r


def _pearson_or_nan(a: Tensor, b: Tensor) -> float:
    """:func:`pearson`, NaN for a constant series (the group search skips such pairs)."""
    a, b = _series(a, "a"), _series(b, "b")
    if a.shape != b.shape or a.numel() < 2:
        raise InputError(f"need two series of the same length >= 2, got {a.numel()} and {b.numel()}")
    a = a - a.mean()
    b = b - b.mean()
    den = a.norm() * b.norm()
    if den == 0:
        return float("nan")
    # rho = sum (a - abar)(b - bbar) / (||a - abar|| ||b - bbar||)
    return float((a @ b) / den)


def _series(x: object, name: str) -> Tensor:
    """A real 1-D float64 series from a tensor, array or list; InputError for anything else or NaN/inf."""
    if isinstance(x, Tensor):
        if x.is_complex() or x.dtype == torch.bool:
            raise InputError(f"{name} must be real numbers, got {describe(x)}")
        t = x.detach().to(torch.float64).reshape(-1)
    else:
        t = torch.from_numpy(check_array(x, name, finite=False, allow_empty=True)).reshape(-1)
    if not bool(torch.isfinite(t).all()):
        raise InputError(f"{name} holds NaN or inf ({describe(x)}); expected finite values")
    return t


def antiphase_amplitude(delta_a: Tensor, delta_b: Tensor) -> float:
    """Root mean square of the anti-phase part ``(Delta_A - Delta_B) / 2`` of two groups' loss changes.

    A correlation says *whether* two groups move in anti-phase; this says *how much* (in loss units), so a run whose
    groups barely move (a clean run) cannot score high by correlation alone."""
    a = torch.as_tensor(delta_a, dtype=torch.float64).reshape(-1)
    b = torch.as_tensor(delta_b, dtype=torch.float64).reshape(-1)
    if a.shape != b.shape or a.numel() < 1:
        raise InputError(f"need two series of the same length >= 1, got {a.numel()} and {b.numel()}")
    # amp = sqrt(mean_t ((Delta_A(t) - Delta_B(t)) / 2)^2)
    return float(((a - b) / 2).pow(2).mean().sqrt())


def membership_frequency(deltas: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """``(count_up, count_down)``: for each tracked example, in how many rows of ``deltas`` it is in S^+ / S^-."""
    n = deltas.shape[1]
    up = top_k_indices(deltas, k, "up")
    down = top_k_indices(deltas, k, "down")
    # m_i = sum_t [i in S^+_t] (and likewise for S^-_t)
    cu = torch.bincount(up.reshape(-1), minlength=n)
    cd = torch.bincount(down.reshape(-1), minlength=n)
    return cu, cd


def group_mean_changes(deltas: Tensor, positions: Tensor) -> Tensor:
    """``Delta_A(t)``: mean loss change of the tracked positions ``positions`` at each row of ``deltas``."""
    if positions.numel() == 0:
        raise InputError("a group must have at least one member")
    # Delta_A(t) = (1/|A|) sum_{i in A} Delta_i(t)
    return deltas[:, positions].mean(dim=1)


def top_k_precision(deltas: Tensor, member: Tensor, k: int, direction: str = "abs") -> Tensor:
    """Per row of ``deltas``: the fraction of the top-k movers that are in ``member`` (a bool mask over positions)."""
    if member.shape != (deltas.shape[1],):
        raise InputError(f"member mask must have shape ({deltas.shape[1]},), got {tuple(member.shape)}")
    top = top_k_indices(deltas, k, direction)
    return member.to(torch.float64)[top].mean(dim=1)


def kmeans(x: Tensor, n_clusters: int, iters: int = 50, seed: int = 0) -> Tensor:
    """Lloyd's k-means with k-means++ seeding (deterministic for a seed): cluster id per row of ``x``."""
    x = x.reshape(x.shape[0], -1).to(torch.float64)
    n = x.shape[0]
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, int) or not 1 <= n_clusters <= n:
        raise InputError(f"n_clusters must be an int in [1, {n}], got {n_clusters!r}")
    g = torch.Generator().manual_seed(int(seed))
    centers = [x[int(torch.randint(n, (1,), generator=g))]]
    for _ in range(1, n_clusters):
        d2 = torch.cdist(x, torch.stack(centers)).pow(2).min(dim=1).values
        p = d2 / d2.sum() if d2.sum() > 0 else torch.full((n,), 1.0 / n, dtype=torch.float64)
        centers.append(x[int(torch.multinomial(p, 1, generator=g))])
    c = torch.stack(centers)
    assign = torch.zeros(n, dtype=torch.long)
    for it in range(iters):
        new = torch.cdist(x, c).argmin(dim=1)
        if it > 0 and torch.equal(new, assign):
            break
        assign = new
        for j in range(n_clusters):
            if (assign == j).any():
                c[j] = x[assign == j].mean(dim=0)
    return assign


@dataclass
class Group:
    """A group of recurring big movers: dataset indices, the label or cluster that defines it, member counts."""

    name: str
    indices: Tensor
    positions: Tensor
    key: int
    frequency: Tensor

    def __len__(self) -> int:
        return int(self.indices.numel())


@dataclass
class OpposingPair:
    """Two groups and how opposed their loss changes are: ``corr`` = Pearson(Delta_A, Delta_B); score = -corr."""

    a: str
    b: str
    corr: float
    score: float


@dataclass
class OpposingGroups:
    """The result of :func:`find_opposing_groups`: groups, pairs (most opposed first), the group-mean changes."""

    groups: list[Group]
    pairs: list[OpposingPair]
    window: int
    k: int
    recurring: Tensor
    group_changes: dict[str, Tensor] = field(default_factory=dict)

    def group(self, name: str) -> Group:
        for g in self.groups:
            if g.name == name:
                return g
        raise KeyError(f"no group named {name!r}; groups are {[g.name for g in self.groups]}")

    @property
    def best(self) -> OpposingPair | None:
        """The most opposed pair (lowest correlation), or ``None`` if fewer than two groups were found."""
        return self.pairs[0] if self.pairs else None

    def summary(self) -> dict:
        return {
            "window": self.window,
            "k": self.k,
            "groups": [{"name": g.name, "size": len(g), "indices": g.indices.tolist()} for g in self.groups],
            "pairs": [{"a": p.a, "b": p.b, "corr": p.corr, "score": p.score} for p in self.pairs],
        }


def find_opposing_groups(
    tracker: LossTracker,
    k: int = 20,
    window: int = 100,
    cluster: str = "label",
    n_clusters: int = 4,
    max_points: int | None = None,
    min_group_size: int = 3,
    seed: int = 0,
) -> OpposingGroups:
    """The paper's procedure on a :class:`LossTracker`: recurring big movers over the last ``window`` loss changes,
    grouped by label (``cluster="label"``) or by k-means on the inputs (``"kmeans"``), and every pair of groups
    scored by the correlation of their group-mean loss changes (most negative first).

    ``max_points`` (default ``4 k``) recurring examples are kept: those most often in ``S^+_t`` or ``S^-_t``.
    """
    if not isinstance(tracker, LossTracker):
        raise InputError(f"tracker must be a LossTracker, got {type(tracker).__name__}")
    if cluster not in CLUSTERINGS:
        raise InputError(f"cluster must be one of {CLUSTERINGS}, got {cluster!r}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= tracker.n:
        raise InputError(f"k must be an int in [1, {tracker.n}] (the number of tracked examples), got {k!r}")
    if isinstance(window, bool) or not isinstance(window, int) or window < 2:
        raise InputError(f"window must be an int >= 2, got {window!r}")
    d = tracker.deltas(window)
    cap = 4 * k if max_points is None else max_points
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise InputError(f"max_points must be an int >= 1, got {max_points!r}")
    cu, cd = membership_frequency(d, k)
    m = cu + cd
    order = torch.sort(m, descending=True, stable=True).indices
    rec = order[: min(cap, int((m > 0).sum()))]
    rec = torch.sort(rec).values
    labels = tracker.y[tracker.indices[rec]].long().cpu()
    if cluster == "label":
        keys = labels
    else:
        feats = tracker.x[tracker.indices[rec]].cpu()
        keys = kmeans(feats, min(n_clusters, int(rec.numel())), seed=seed)
    groups: list[Group] = []
    for key in torch.unique(keys).tolist():
        pos = rec[keys == key]
        if pos.numel() < min_group_size:
            continue
        name = f"label {key}" if cluster == "label" else f"cluster {key}"
        groups.append(Group(name, tracker.indices[pos], pos, int(key), m[pos]))
    changes = {g.name: group_mean_changes(d, g.positions) for g in groups}
    pairs: list[OpposingPair] = []
    for i in range(len(groups)):
        for j in range(i + 1, len(groups)):
            r = _pearson_or_nan(changes[groups[i].name], changes[groups[j].name])
            if r == r:  # skip constant series (nan)
                pairs.append(OpposingPair(groups[i].name, groups[j].name, r, -r))
    pairs.sort(key=lambda p: (p.corr, p.a, p.b))
    return OpposingGroups(groups, pairs, window, k, tracker.indices[rec], changes)


def group_gradient_cosine(
    model: nn.Module, x: Tensor, y: Tensor, group_a: Tensor, group_b: Tensor, loss: str = "mse"
) -> float:
    """``cos(grad L_A, grad L_B)`` of the two groups' mean losses at the model's current parameters."""
    from .train import _check_xy

    if not isinstance(model, nn.Module):
        raise InputError(f"model must be an nn.Module, got {describe(model)}")
    x, y = _check_xy(x, y)
    group_a, group_b = _indices(group_a, len(x), "group_a"), _indices(group_b, len(x), "group_b")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise InputError(f"{type(model).__name__} has no parameters that require grad")

    def flat_grad(idx: Tensor) -> Tensor:
        if idx.numel() == 0:
            raise InputError("a group must have at least one member")
        with torch.enable_grad():
            la = per_example_loss(model(x[idx]), y[idx], loss).mean()
            g = torch.autograd.grad(la, params)
        return torch.cat([t.reshape(-1) for t in g])

    ga, gb = flat_grad(torch.as_tensor(group_a)), flat_grad(torch.as_tensor(group_b))
    # cos(A, B) = <grad L_A, grad L_B> / (||grad L_A|| ||grad L_B||)
    c = float(ga @ gb / (ga.norm() * gb.norm()).clamp_min(1e-30))
    if c != c or abs(c) == float("inf"):
        raise InputError(
            "the group gradients are not finite (the loss overflows at these inputs or parameters)"
        )
    return c


def _indices(idx: object, n: int, name: str) -> Tensor:
    t = torch.as_tensor(idx) if not isinstance(idx, Tensor) else idx
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool or t.dim() != 1:
        raise InputError(f"{name} must be a 1-D tensor of example indices, got {describe(idx)}")
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= n):
        raise InputError(
            f"{name} must index the {n} examples, got values in [{int(t.min())}, {int(t.max())}]"
        )
    return t
