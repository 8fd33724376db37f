"""Per-example training losses over training, their changes, and the biggest movers (the paper's identification
procedure: track the training points whose loss changes most).

Notation: tracked examples ``i = 1..n`` (a fixed subset of the training set), parameters ``theta_t`` after ``t``
steps, per-example loss ``l_i(theta_t)``, training loss ``L(theta_t) = (1/n) sum_i l_i(theta_t)``.

    MSE:  l_i = 1/2 ||f(x_i) - e_{y_i}||^2          (one-hot targets; the edge-of-stability convention)
    CE:   l_i = -log softmax(f(x_i))_{y_i}
    Delta_i(t) = l_i(theta_{t+1}) - l_i(theta_t)
    S^+_t = top-k_i Delta_i(t),   S^-_t = top-k_i (-Delta_i(t)),   S^|.|_t = top-k_i |Delta_i(t)|

Ties in a top-k are broken by the smaller index (a stable sort), so the selection is deterministic.
Under full-batch GD the losses of ``theta_t`` come from the step's own forward pass (no second pass); otherwise
:meth:`LossTracker.record` runs one evaluation pass without gradients, over physical batches of
``physical_batch_size`` examples when given (Cohen et al.'s ``compute_losses``, ``src/utilities.py``), so a 5k-image
CIFAR subset never goes through the model in one piece.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_tensor

from .hessian import check_physical_batch_size
from .hessian import trainable_parameters

__all__ = [
    "LOSSES",
    "DIRECTIONS",
    "per_example_loss",
    "evaluate_per_example_loss",
    "mean_loss",
    "loss_changes",
    "top_k_indices",
    "LossTracker",
]

LOSSES = ("mse", "ce")
DIRECTIONS = ("up", "down", "abs")


def _check_loss(loss: str) -> str:
    if loss not in LOSSES:
        raise InputError(f"loss must be one of {LOSSES}, got {loss!r}")
    return loss


def check_labels(y: object, n_classes: int | None = None, what: str = "labels y") -> Tensor:
    """``y`` must be a 1-D integer tensor with values in ``[0, n_classes)`` (``n_classes`` unknown: ``>= 0``)."""
    if not isinstance(y, Tensor):
        raise InputError(f"{what} must be a tensor, got {type(y).__name__}")
    if y.ndim != 1:
        raise InputError(f"{what} must be 1-D (one class index per example), got shape {tuple(y.shape)}")
    if y.dtype.is_floating_point or y.dtype.is_complex or y.dtype == torch.bool:
        raise InputError(f"{what} must be integer class indices (e.g. torch.long), got dtype {y.dtype}")
    if y.numel():
        lo, hi = int(y.min()), int(y.max())
        if lo < 0 or (n_classes is not None and hi >= n_classes):
            want = f"[0, {n_classes - 1}]" if n_classes is not None else "[0, ...)"
            raise InputError(f"{what} must lie in {want} (one per model output), got values in [{lo}, {hi}]")
    return y


def per_example_loss(outputs: Tensor, y: Tensor, loss: str = "mse") -> Tensor:
    """Per-example losses ``l_i`` (shape ``(n,)``) of logits ``outputs`` (``(n, C)``) against int labels ``y``
    (in ``[0, C)``; anything else is a ``ValueError`` naming what came)."""
    _check_loss(loss)
    check_tensor(outputs, "outputs", ndim=2, kind="float", allow_empty=True)
    check_tensor(y, "y", ndim=1, kind="any", allow_empty=True)
    if outputs.ndim != 2 or y.ndim != 1 or outputs.shape[0] != y.shape[0]:
        raise InputError(
            f"expected outputs (n, C) and integer labels (n,), got {tuple(outputs.shape)} and {tuple(y.shape)}"
        )
    check_labels(y, outputs.shape[1])
    if loss == "mse":
        target = torch.nn.functional.one_hot(y.long(), outputs.shape[1]).to(outputs.dtype)
        # MSE: l_i = 1/2 ||f(x_i) - e_{y_i}||^2
        return 0.5 * (outputs - target).pow(2).sum(dim=1)
    # CE: l_i = -log softmax(f(x_i))_{y_i}
    return torch.nn.functional.cross_entropy(outputs, y.long(), reduction="none")


def mean_loss(loss: str = "mse"):
    """``loss_fn(outputs, y) -> L = (1/n) sum_i l_i``: the training loss whose Hessian is the sharpness."""
    _check_loss(loss)

    def loss_fn(outputs: Tensor, y: Tensor) -> Tensor:
        return per_example_loss(outputs, y, loss).mean()

    return loss_fn


def evaluate_per_example_loss(
    model: nn.Module, x: Tensor, y: Tensor, loss: str = "mse", physical_batch_size: int | None = None
) -> Tensor:
    """``l_i`` of every example at the model's current parameters, without gradients, in physical batches of
    ``physical_batch_size`` examples (``None``: one pass). The model is put in eval mode for the pass."""
    check_physical_batch_size(physical_batch_size)
    n = x.shape[0]
    pb = n if physical_batch_size is None else physical_batch_size
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            rows = [per_example_loss(model(x[s : s + pb]), y[s : s + pb], loss) for s in range(0, n, pb)]
    finally:
        model.train(was_training)
    return torch.cat(rows)


def loss_changes(losses: Tensor) -> Tensor:
    """``Delta[t, i] = l_i(theta_{t+1}) - l_i(theta_t)`` for a ``(T, n)`` history: shape ``(T - 1, n)``."""
    if losses.ndim != 2 or losses.shape[0] < 2:
        raise InputError(f"need a (T, n) loss history with T >= 2, got shape {tuple(losses.shape)}")
    # Delta_i(t) = l_i(theta_{t+1}) - l_i(theta_t)
    return losses[1:] - losses[:-1]


def top_k_indices(delta: Tensor, k: int, direction: str = "abs") -> Tensor:
    """Indices of the ``k`` largest ``Delta`` (``"up"``), ``-Delta`` (``"down"``) or ``|Delta|`` (``"abs"``).

    ``delta`` is ``(n,)`` or ``(T, n)`` (one selection per row). Ties go to the smaller index.
    """
    if direction not in DIRECTIONS:
        raise InputError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    n = delta.shape[-1]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise InputError(f"k must be an int in [1, {n}] (the number of tracked examples), got {k!r}")
    # S^+ = top-k Delta, S^- = top-k (-Delta), S^|.| = top-k |Delta|
    score = {"up": delta, "down": -delta, "abs": delta.abs()}[direction]
    order = torch.sort(score, dim=-1, descending=True, stable=True).indices
    return order[..., :k]


class LossTracker:
    """Per-example losses of a fixed subset of ``data`` over training.

    ``LossTracker(model, (X, y), loss="mse", every=1, subset=None)``: ``subset`` is ``None`` (all examples), an
    int (that many examples drawn with ``seed``), or a sequence of indices. ``record(step)`` stores the tracked
    losses at the model's current parameters when ``step % every == 0``; a training loop that already has the
    per-example losses of the full data (full-batch GD) passes them as ``losses=`` and no extra pass runs.
    ``physical_batch_size``: the evaluation pass goes through the model that many examples at a time.
    ``loss`` is also the loss :func:`~.train.train` trains with when it gets this tracker and no ``loss=``.
    """

    def __init__(
        self,
        model: nn.Module,
        data: tuple[Tensor, Tensor],
        loss: str = "mse",
        every: int = 1,
        subset: int | Sequence[int] | Tensor | None = None,
        seed: int = 0,
        physical_batch_size: int | None = None,
    ) -> None:
        trainable_parameters(model)
        self.loss = _check_loss(loss)
        self.physical_batch_size = check_physical_batch_size(physical_batch_size)
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise InputError(f"every must be an int >= 1 (record every that many steps), got {every!r}")
        if not (isinstance(data, tuple | list) and len(data) == 2):
            raise InputError(f"data must be a pair (X, y) of tensors, got {type(data).__name__}")
        x, y = data
        if (
            not isinstance(x, Tensor)
            or not isinstance(y, Tensor)
            or x.shape[0] != y.shape[0]
            or x.shape[0] == 0
        ):
            raise InputError("data must be a pair of tensors (X, y) with the same non-zero first dimension")
        if x.ndim < 2:
            raise InputError(f"X must be (N, ...) with at least 2 dimensions, got shape {tuple(x.shape)}")
        check_labels(y)
        n = x.shape[0]
        if subset is None:
            idx = torch.arange(n)
        elif isinstance(subset, int) and not isinstance(subset, bool):
            if not 1 <= subset <= n:
                raise InputError(
                    f"subset size must be in [1, {n}] (the number of examples in data), got {subset}"
                )
            g = torch.Generator().manual_seed(int(seed))
            idx = torch.sort(torch.randperm(n, generator=g)[:subset]).values
        else:
            idx = torch.as_tensor(
                list(subset) if not isinstance(subset, Tensor) else subset, dtype=torch.long
            )
            if idx.ndim != 1 or idx.numel() == 0:
                raise InputError(
                    f"subset indices must be a non-empty 1-D sequence, got shape {tuple(idx.shape)}"
                )
            if idx.numel() > n:
                raise InputError(f"subset has {idx.numel()} indices but data has only {n} examples")
            if int(idx.min()) < 0 or int(idx.max()) >= n:
                raise InputError(
                    f"subset indices must lie in [0, {n - 1}], got [{int(idx.min())}, {int(idx.max())}]"
                )
            if torch.unique(idx).numel() != idx.numel():
                raise InputError("subset indices must be distinct")
        self.model = model
        self.x, self.y = x, y
        self.indices = idx
        self.every = every
        self.steps: list[int] = []
        self._rows: list[Tensor] = []

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def n(self) -> int:
        """Number of tracked examples."""
        return int(self.indices.numel())

    def wants(self, step: int) -> bool:
        """Whether :meth:`record` would store this step."""
        return step % self.every == 0

    def record(self, step: int, losses: Tensor | None = None) -> bool:
        """Store ``l_i(theta_step)`` of the tracked examples; returns whether anything was stored.

        ``losses`` are the per-example losses of the *whole* ``data`` (``(N,)``) computed by the caller at the
        current parameters; without them one no-grad evaluation pass over the tracked subset runs.
        """
        if not self.wants(step):
            return False
        if self.steps and step <= self.steps[-1]:
            raise InputError(f"steps must increase: got {step} after {self.steps[-1]}")
        if losses is None:
            row = evaluate_per_example_loss(
                self.model, self.x[self.indices], self.y[self.indices], self.loss, self.physical_batch_size
            )
        else:
            if losses.shape != (self.x.shape[0],):
                raise InputError(f"losses must have shape ({self.x.shape[0]},), got {tuple(losses.shape)}")
            row = losses.detach()[self.indices]
        row = row.detach().to(torch.float32).cpu()
        if not torch.isfinite(row).all():
            bad = int((~torch.isfinite(row)).sum())
            raise InputError(
                f"non-finite per-example loss at step {step} ({bad} of {row.numel()} tracked examples): training "
                "diverged; lower the learning rate"
            )
        self.steps.append(int(step))
        self._rows.append(row)
        return True

    @property
    def losses(self) -> Tensor:
        """``(T, n)`` tracked losses, one row per recorded step."""
        if not self._rows:
            raise InputError("nothing recorded yet: call record(step) during training")
        return torch.stack(self._rows)

    def deltas(self, window: int | None = None) -> Tensor:
        """``(T - 1, n)`` loss changes between consecutive records; the last ``window`` of them if given."""
        d = loss_changes(self.losses)
        if window is not None:
            if isinstance(window, bool) or not isinstance(window, int) or window < 1:
                raise InputError(f"window must be an int >= 1, got {window!r}")
            if window > d.shape[0]:
                raise InputError(
                    f"window={window} is longer than the history ({d.shape[0]} loss changes from {len(self)} "
                    "records); use a shorter window or train longer"
                )
            d = d[-window:]
        return d

    def top_movers(self, k: int = 20, direction: str = "abs", t: int = -1) -> Tensor:
        """Dataset indices of the ``k`` biggest movers at change ``t`` (default: the latest)."""
        d = self.deltas()
        return self.indices[top_k_indices(d[t], k, direction)]

    def history(self, dataset_indices: Sequence[int] | Tensor) -> Tensor:
        """``(T, m)`` loss history of the given dataset indices (they must be tracked)."""
        want = torch.as_tensor(dataset_indices, dtype=torch.long).reshape(-1)
        pos = {int(j): p for p, j in enumerate(self.indices.tolist())}
        missing = [int(j) for j in want.tolist() if int(j) not in pos]
        if missing:
            raise InputError(f"indices {missing[:5]} are not tracked (the tracker follows {self.n} examples)")
        return self.losses[:, [pos[int(j)] for j in want.tolist()]]

    def nbytes(self) -> int:
        """Memory of the stored history (float32)."""
        return 4 * len(self._rows) * self.n
