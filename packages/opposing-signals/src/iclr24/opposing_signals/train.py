"""A short, visible training loop (full-batch GD, minibatch SGD, Adam) with loss tracking and sharpness.

    GD / SGD:   m_t = g_t + beta m_{t-1} (m_0 = g_0),  theta_{t+1} = theta_t - eta m_t   (heavy ball, ``momentum=beta``;
                g_t = grad L_B(theta_t); written out in :func:`gd_step`)
    Adam:       theta_{t+1} = theta_t - eta m_hat_t / (sqrt(v_hat_t) + eps)     (torch.optim.Adam)

``B`` is the full training set for ``"gd"`` (and ``"adam"``) and a random minibatch for ``"sgd"``. The recorded
training loss at step ``t`` is ``L(theta_t) = (1/N) sum_i l_i(theta_t)`` over the full training set, taken from the
step's own forward pass under full-batch training.

The GD/SGD update is written out (:func:`gd_step`, op for op torch.optim.SGD's CPU update, so the trajectories are
bit-identical; a test checks it) and the training loop measures sharpness by double backward
(:data:`TRAIN_HVP_METHOD`): torch.optim's first step and ``torch.func`` both import ``torch._dynamo``, which cost
15 CPU s per process here without compiled bytecode (about 4.5 with it), more than a quick run's GD steps on
one run.

Physical batches (Cohen et al., ``src/gd.py`` and ``src/utilities.py``): with ``physical_batch_size = b`` every
pass over the data goes through the model ``b`` examples at a time. The full-batch gradient is accumulated as
``grad L = sum_c grad (1/N) sum_{i in c} l_i``, the per-example losses are concatenated, and the sharpness HVPs are
accumulated the same way: the results equal the one-pass ones up to float rounding, and memory is one batch's.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace

import torch
from torch import Tensor
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import describe
from iclr24.paperkit.io import fields_dict
from iclr24.paperkit.nets import mlp_layers
from iclr24.paperkit.pretrained import PretrainedMixin
from iclr24.paperkit.tracking import StepLog

from .hessian import SHARPNESS_METHODS
from .hessian import check_physical_batch_size
from .hessian import sharpness as _sharpness
from .hessian import trainable_parameters
from .tracking import LossTracker
from .tracking import _check_loss
from .tracking import check_labels
from .tracking import mean_loss
from .tracking import per_example_loss

__all__ = ["OPTIMIZERS", "TRAIN_HVP_METHOD", "MLP", "TrainConfig", "History", "gd_step", "make_mlp", "train"]

OPTIMIZERS = ("gd", "sgd", "adam")
# the Hessian-vector products of the sharpness measured during training: double backward equals torch.func's
# forward-over-reverse to float rounding (tests/test_hessian.py) and was the faster of the two on the digits MLP
# (743 vs 913 ms per 20 products, README "Benchmarks"; 0.79 vs 1.09 s in a Lanczos estimate, 2026-12-02)
TRAIN_HVP_METHOD = "double_backward"


def _check_mlp_sizes(d_in: object, width: object, depth: object, n_classes: object) -> None:
    for name, v in (("d_in", d_in), ("width", width), ("depth", depth), ("n_classes", n_classes)):
        if (
            isinstance(v, bool)
            or not isinstance(v, int)
            or not 1 <= v <= (1024 if name == "depth" else 2**17)
        ):
            raise InputError(f"{name} must be an int in [1, {1024 if name == 'depth' else 2**17}], got {v!r}")


class MLP(PretrainedMixin, nn.Sequential):
    """The ``nn.Sequential`` :func:`make_mlp` returns (same layers and state-dict keys), checking its input first:
    a ``(N, d_in)`` floating tensor of the weights' dtype, else one InputError (not torch's addmm message).

    ``MLP(*layers)`` wraps given layers; ``MLP(d_in=, width=, depth=, n_classes=)`` builds the ReLU MLP of those
    sizes (torch's default initialisation under seed 0, the global RNG untouched). Saves and loads as a model
    folder: ``save_pretrained(dir)`` / ``MLP.from_pretrained(dir)`` (the sizes in ``config.json``)."""

    def __init__(
        self,
        *layers: nn.Module,
        d_in: int | None = None,
        width: int | None = None,
        depth: int | None = None,
        n_classes: int | None = None,
    ) -> None:
        sizes = (d_in, width, depth, n_classes)
        if layers:
            if any(v is not None for v in sizes):
                raise InputError(
                    "give MLP either its layers or its sizes (d_in, width, depth, n_classes), not both"
                )
            super().__init__(*layers)
            return
        _check_mlp_sizes(*sizes)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            super().__init__(*mlp_layers(d_in, [width] * depth, n_classes))

    def pretrained_config(self) -> dict:
        """The sizes that rebuild this MLP; only the ``make_mlp`` architecture (Linear, ReLU, ..., Linear)."""
        mods = list(self)
        linear = mods[0::2]
        ok = (
            len(mods) % 2 == 1
            and all(isinstance(m, nn.Linear) and m.bias is not None for m in linear)
            and all(isinstance(m, nn.ReLU) for m in mods[1::2])
            and len({m.in_features for m in linear[1:]} | {m.out_features for m in linear[:-1]}) <= 1
        )
        if not ok:
            raise InputError(
                "save_pretrained saves the make_mlp architecture (Linear, ReLU, ..., Linear of one hidden width); "
                "save another model with torch or safetensors yourself"
            )
        if len(linear) == 1:
            raise InputError(
                "save_pretrained needs at least one hidden layer (depth >= 1), as make_mlp builds"
            )
        return {"d_in": linear[0].in_features, "width": linear[0].out_features, "depth": len(linear) - 1,
                "n_classes": linear[-1].out_features}  # fmt: skip

    def forward(self, x: Tensor) -> Tensor:
        first = self[0]
        if not isinstance(x, Tensor) or x.dim() < 1 or x.shape[-1] != first.in_features:
            raise InputError(f"the MLP takes inputs (N, {first.in_features}), got {describe(x)}")
        if x.dtype != first.weight.dtype:
            raise InputError(
                f"the MLP's weights are {first.weight.dtype}, its input is {x.dtype}: convert one"
            )
        return super().forward(x)


def make_mlp(
    d_in: int = 64, width: int = 128, depth: int = 3, n_classes: int = 10, seed: int = 0
) -> nn.Sequential:
    """ReLU MLP ``d_in -> width x depth -> n_classes`` with torch's default initialisation under ``seed``."""
    _check_mlp_sizes(d_in, width, depth, n_classes)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return MLP(*mlp_layers(d_in, [width] * depth, n_classes))


@dataclass(frozen=True)
class TrainConfig:
    """One training run. Defaults: the CPU calibration of the paper's full-batch GD / MSE setting.

    ``loss``: ``"mse"`` or ``"ce"``; ``None`` (the default) means the tracker's loss when :func:`train` gets a
    tracker, else ``"mse"``. ``batch_size``: the SGD minibatch (only for ``"sgd"``; GD and Adam here are full-batch).
    ``physical_batch_size``: how many examples go through the model at once (``None``: all); it changes memory, not
    the result. ``sharpness_subset``: measure sharpness on a fixed subset of the training set (an int: that many
    examples drawn once with ``seed``; or a tuple of indices), as Cohen et al.'s 5k ``abridged_size``.
    """

    optimizer: str = "gd"
    lr: float = 0.3
    steps: int = 1500
    loss: str | None = None
    momentum: float = 0.0
    batch_size: int | None = None
    physical_batch_size: int | None = None
    sharpness_every: int = 50
    sharpness_iters: int = 20
    sharpness_method: str = "lanczos"
    sharpness_subset: int | tuple[int, ...] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise InputError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if (
            isinstance(self.lr, bool)
            or not isinstance(self.lr, int | float)
            or not (self.lr > 0 and math.isfinite(self.lr))
        ):
            raise InputError(f"lr must be a positive finite number, got {self.lr!r}")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or not 1 <= self.steps <= 10**8:
            raise InputError(f"steps must be an int in [1, 10**8], got {self.steps!r}")
        if self.loss is not None:
            _check_loss(self.loss)
        if (
            isinstance(self.momentum, bool)
            or not isinstance(self.momentum, int | float)
            or not 0 <= self.momentum < 1
        ):
            raise InputError(f"momentum must be in [0, 1), got {self.momentum!r}")
        if self.optimizer == "adam" and self.momentum:
            raise InputError(
                f"momentum is for 'gd'/'sgd' (Adam has its own betas), got momentum={self.momentum}"
            )
        bs = self.batch_size
        if self.optimizer == "sgd":
            if isinstance(bs, bool) or not isinstance(bs, int) or bs < 1:
                raise InputError(f"optimizer 'sgd' needs batch_size >= 1, got {bs!r}")
        elif bs is not None:
            raise InputError(
                f"batch_size={bs!r} is the SGD minibatch, but optimizer {self.optimizer!r} is full-batch (it uses "
                "every example each step); use optimizer='sgd' for minibatches, or physical_batch_size to bound "
                "memory without changing the full-batch step"
            )
        check_physical_batch_size(self.physical_batch_size)
        for name in ("sharpness_every", "sharpness_iters"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise InputError(f"{name} must be an int, got {v!r}")
        if self.sharpness_every < 0 or not 1 <= self.sharpness_iters <= 10**5:
            raise InputError("sharpness_every must be >= 0 (0 = never) and sharpness_iters in [1, 10**5]")
        if self.sharpness_method not in SHARPNESS_METHODS:
            raise InputError(
                f"sharpness_method must be one of {SHARPNESS_METHODS}, got {self.sharpness_method!r}"
            )
        sub = self.sharpness_subset
        if isinstance(sub, list):
            object.__setattr__(self, "sharpness_subset", tuple(sub))
            sub = self.sharpness_subset
        if sub is not None and not (
            (isinstance(sub, int) and not isinstance(sub, bool) and sub >= 1)
            or (
                isinstance(sub, tuple)
                and sub
                and all(isinstance(i, int) and not isinstance(i, bool) for i in sub)
            )
        ):
            raise InputError(
                f"sharpness_subset must be None, an int >= 1 or a non-empty tuple of indices, got {sub!r}"
            )


@dataclass
class History:
    """What a run recorded: ``loss[t] = L(theta_t)``, ``sharpness`` at ``sharpness_steps``, the config."""

    config: TrainConfig
    loss: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    sharpness: list[float] = field(default_factory=list)
    sharpness_steps: list[int] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        """The record as plain data, the config as a dict of its fields (``sharpness_subset`` a list)."""
        return {**fields_dict(self), "config": fields_dict(self.config)}


def _check_xy(x: object, y: object) -> tuple[Tensor, Tensor]:
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        raise InputError(f"X and y must be tensors, got {type(x).__name__} and {type(y).__name__}")
    if x.ndim < 2 or y.ndim != 1 or x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise InputError(
            f"expected X (N, ...) and integer labels y (N,), got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    if not x.dtype.is_floating_point:
        raise InputError(f"X must be a floating-point tensor, got dtype {x.dtype}")
    check_labels(y)
    if not torch.isfinite(x).all():
        raise InputError("X contains NaN or inf")
    return x, y


def sharpness_indices(subset: int | Sequence[int] | None, n: int, seed: int = 0) -> Tensor | None:
    """The fixed sharpness subset's indices (sorted): ``None`` (all ``n``), ``m`` examples drawn with ``seed``, or
    the given indices (checked)."""
    if subset is None:
        return None
    if isinstance(subset, int) and not isinstance(subset, bool):
        if not 1 <= subset <= n:
            raise InputError(f"sharpness_subset must be in [1, {n}] (the training examples), got {subset}")
        g = torch.Generator().manual_seed(int(seed))
        return torch.sort(torch.randperm(n, generator=g)[:subset]).values
    idx = torch.as_tensor(list(subset), dtype=torch.long)
    if idx.ndim != 1 or idx.numel() == 0 or int(idx.min()) < 0 or int(idx.max()) >= n:
        raise InputError(f"sharpness_subset indices must be a non-empty list in [0, {n - 1}]")
    if torch.unique(idx).numel() != idx.numel():
        raise InputError("sharpness_subset indices must be distinct")
    return idx


def _resolve_loss(cfg: TrainConfig, tracker: LossTracker | None) -> str:
    if tracker is None:
        return cfg.loss or "mse"
    if not isinstance(tracker, LossTracker):
        raise InputError(f"tracker must be a LossTracker, got {type(tracker).__name__}")
    if cfg.loss is None:
        return tracker.loss
    if cfg.loss != tracker.loss:
        raise InputError(
            f"train(loss={cfg.loss!r}) but the tracker records loss={tracker.loss!r}: the tracked losses would not "
            "be the ones training minimises; pass the same loss to both (or leave train's loss unset to use the "
            "tracker's)"
        )
    return cfg.loss


def _step_callbacks(callbacks: object, model: nn.Module, hist: History) -> list:
    """The callbacks as paperkit StepLog callbacks ``(step, metrics)``: an object with ``on_step`` (and optionally
    ``on_end``) is one already; a function that takes three positional arguments is this package's original hook
    ``f(t, model, history)``, called as before; a function of two is ``f(step, metrics)``."""
    import inspect

    if callbacks is None:
        return []
    if callable(callbacks) or hasattr(callbacks, "on_step"):
        callbacks = [callbacks]
    if isinstance(callbacks, str | bytes) or not hasattr(callbacks, "__iter__"):
        raise InputError(f"callbacks must be a callable or a sequence of them, got {describe(callbacks)}")
    out = []
    for cb in callbacks:
        if hasattr(cb, "on_step"):
            out.append(cb)
            continue
        if not callable(cb):
            raise InputError(
                f"a callback must be callable or have on_step(step, metrics), got {describe(cb)}"
            )
        try:
            sig = inspect.signature(cb)
        except (TypeError, ValueError):  # a builtin without a signature: the original hook
            sig = None
        if sig is None or _binds(sig, 3):
            out.append(
                lambda step, metrics, cb=cb: cb(step, model, hist)
            )  # the original f(t, model, history)
        elif _binds(sig, 2):
            out.append(cb)
        else:
            raise InputError(
                f"a callback takes (t, model, history) or (step, metrics); {getattr(cb, '__name__', cb)!r} takes "
                f"{sig}"
            )
    return out


def _binds(sig, n: int) -> bool:
    try:
        sig.bind(*range(n))
    except TypeError:
        return False
    return True


def _train_data(x: object, y: object) -> tuple[Tensor, Tensor]:
    """``(x, y)`` tensors, or ``x`` a ``Dataset`` / ``DataLoader`` of ``(image, label)`` items (``y`` None): read
    once, in its order, into the tensors full-batch training needs."""
    from iclr24.paperkit.data.user import as_tensors
    from iclr24.paperkit.data.user import is_user_data

    if y is None:
        if not (is_user_data(x) or isinstance(x, tuple | list)):
            raise InputError(
                f"train(model, X, y) takes tensors X and y, or train(model, data) a Dataset or DataLoader of (x, y) "
                f"pairs; got {describe(x)} and no y"
            )
        return as_tensors(x, fields=2, what="train data")
    if is_user_data(x):
        raise InputError("a Dataset or DataLoader holds its own labels: call train(model, data) without y")
    return x, y


def train(
    model: nn.Module,
    x: Tensor,
    y: Tensor | None = None,
    config: TrainConfig | None = None,
    tracker: LossTracker | None = None,
    callbacks: Sequence[Callable] | Callable | None = (),
    progress: Callable[[int], None] | None = None,
    log_dir: str | os.PathLike | None = None,
    **overrides,
) -> History:
    """Train ``model`` on ``(x, y)``; ``config`` fields can be overridden by keyword (``lr=0.1``).

    ``x`` may also be a torch ``Dataset`` or ``DataLoader`` of ``(x_i, y_i)`` pairs (then no ``y``): it is read
    once, in its order, into the tensors a full-batch run needs, so the run equals the run on those tensors.

    The loss is ``loss=`` if given, else the tracker's (``tracker.loss``), else MSE; a ``loss=`` that differs from
    the tracker's is a ``ValueError``. Each step ``t``: the loss at ``theta_t`` over the whole training set is
    recorded (the step's own forward pass under full-batch training, one no-grad eval-mode pass under SGD) and
    handed to ``tracker`` without another pass when the tracker follows this model and data; sharpness is measured
    every ``sharpness_every`` steps, the callbacks run, then the update. A non-finite loss stops training with the
    step where it happened.

    Callbacks (paperkit's :class:`~iclr24.paperkit.tracking.StepLog`): ``f(t, model, history)`` (three
    arguments, as ever), ``f(step, metrics)`` or objects with ``on_step(step, metrics)`` / ``on_end(summary)``;
    ``metrics`` holds ``loss``, ``accuracy`` and, at a measured step, ``sharpness``. ``log_dir``: the same metrics
    as ``metrics.jsonl`` (and TensorBoard event files when ``tensorboard`` is installed). Logging draws no random
    number and changes nothing in the run.
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be an nn.Module, got {describe(model)}")
    x, y = _train_data(x, y)
    cfg = config or TrainConfig()
    if not isinstance(cfg, TrainConfig):
        raise InputError(f"config must be a TrainConfig, got {type(cfg).__name__}")
    if overrides:
        unknown = sorted(set(overrides) - set(cfg.__dict__))
        if unknown:
            raise InputError(f"unknown training option(s) {unknown}; TrainConfig has {sorted(cfg.__dict__)}")
        cfg = TrainConfig(**{**cfg.__dict__, **overrides})
    x, y = _check_xy(x, y)
    n = x.shape[0]
    if cfg.optimizer == "sgd" and cfg.batch_size > n:
        raise InputError(f"batch_size={cfg.batch_size} is larger than the training set ({n} examples)")
    loss_name = _resolve_loss(cfg, tracker)
    cfg = replace(cfg, loss=loss_name)
    check_labels(y, _n_outputs(model, x))
    sidx = sharpness_indices(cfg.sharpness_subset, n, cfg.seed)
    sharp_data = (x, y) if sidx is None else (x[sidx.to(x.device)], y[sidx.to(y.device)])
    params = list(trainable_parameters(model).values())
    loss_fn = mean_loss(loss_name)
    if cfg.optimizer == "adam":
        adam = torch.optim.Adam(params, lr=cfg.lr)
        step = adam.step
    else:
        bufs: list[Tensor | None] = [None] * len(params)

        def step() -> None:
            gd_step(params, bufs, cfg.lr, cfg.momentum)

    hist = History(cfg)
    full_batch = cfg.optimizer != "sgd"
    share = (
        tracker is not None
        and tracker.model is model
        and tracker.x is x
        and tracker.y is y
        and tracker.loss == loss_name
    )
    pb = n if cfg.physical_batch_size is None else min(cfg.physical_batch_size, n)
    g = torch.Generator().manual_seed(cfg.seed)
    log = StepLog(log_dir, _step_callbacks(callbacks, model, hist), name="opposing_signals")
    try:
        t0 = time.perf_counter()
        model.train()
        for t in range(cfg.steps + 1):
            if cfg.sharpness_every and t % cfg.sharpness_every == 0:
                hist.sharpness.append(
                    _sharpness(
                        model,
                        loss_fn,
                        sharp_data,
                        iters=cfg.sharpness_iters,
                        method=cfg.sharpness_method,
                        hvp_method=TRAIN_HVP_METHOD,
                        physical_batch_size=cfg.physical_batch_size,
                    )
                )
                hist.sharpness_steps.append(t)
            for p in params:
                p.grad = None
            last = t == cfg.steps
            # full-batch: L(theta_t) = (1/N) sum_i l_i with its gradient, accumulated over physical batches (train
            # mode: the step's own forward); SGD: the same losses without gradients, in eval mode (as the tracker's)
            per, correct = _full_pass(
                model, x, y, loss_name, pb, t, backward=full_batch and not last, eval_mode=not full_batch
            )
            lval = float(per.mean())
            if not math.isfinite(lval):
                raise InputError(
                    f"training loss became non-finite at step {t} (lr={cfg.lr}); lower the learning rate"
                )
            hist.loss.append(lval)
            hist.accuracy.append(correct / n)
            if tracker is not None:
                tracker.record(t, per if share else None)
            metrics = {"loss": lval, "accuracy": correct / n}
            if hist.sharpness_steps and hist.sharpness_steps[-1] == t:
                metrics["sharpness"] = hist.sharpness[-1]
            log(t, metrics)
            if progress is not None:
                progress(t)
            if last:
                break
            if not full_batch:
                idx = torch.randperm(n, generator=g)[: cfg.batch_size].to(x.device)
                bs = idx.numel()
                for s in range(0, bs, pb):
                    ib = idx[s : s + pb]
                    # L_B = (1/|B|) sum_{i in B} l_i, accumulated over physical batches
                    (per_example_loss(model(x[ib]), y[ib], loss_name).sum() / bs).backward()
            step()
        hist.seconds = time.perf_counter() - t0
    except BaseException:
        log.close()
        raise
    log.close({"final_loss": hist.loss[-1], "final_accuracy": hist.accuracy[-1], "seconds": hist.seconds})
    return hist


@torch.no_grad()
def gd_step(params: Sequence[Tensor], bufs: list[Tensor | None], lr: float, momentum: float = 0.0) -> None:
    """One (heavy-ball) gradient step on ``params`` in place from their ``.grad``; ``bufs`` holds the momentum
    buffers (``None`` before the first step). The same operations, in the same order, as torch.optim.SGD's CPU
    update (no dampening, weight decay or Nesterov): bit-identical trajectories. Parameters without a gradient
    are left alone, as torch.optim leaves them."""
    for i, p in enumerate(params):
        g = p.grad
        if g is None:
            continue
        if momentum:
            if bufs[i] is None:
                bufs[i] = g.detach().clone()  # m_0 = g_0
            else:
                bufs[i].mul_(momentum).add_(g, alpha=1)  # m_t = beta m_{t-1} + g_t
            g = bufs[i]
        p.add_(g, alpha=-lr)  # theta_{t+1} = theta_t - eta m_t


def _n_outputs(model: nn.Module, x: Tensor) -> int:
    """The model's number of outputs, from two examples in eval mode without gradients (before any work)."""
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            return _forward(model, x[:2], 0).shape[1]
    finally:
        model.train(was)


def _forward(model: nn.Module, xb: Tensor, t: int) -> Tensor:
    """``model(xb)``, with a model that cannot take ``X`` turned into one clear error at the first step."""
    if t:
        return model(xb)
    try:
        out = model(xb)
    except (RuntimeError, InputError) as e:  # torch's shape errors, or the MLP's own check
        if isinstance(e, torch.OutOfMemoryError):
            raise
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(
            f"the model could not be applied to X of shape (N, {', '.join(map(str, xb.shape[1:]))}): {msg}"
        ) from None
    if not isinstance(out, Tensor) or out.ndim != 2 or out.shape[0] != xb.shape[0]:
        shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise InputError(
            f"the model must map X (N, ...) to logits (N, C); got {shape} for {xb.shape[0]} examples"
        )
    return out


def _full_pass(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    loss: str,
    pb: int,
    t: int,
    backward: bool,
    eval_mode: bool = False,
) -> tuple[Tensor, int]:
    """Per-example losses of all of ``x`` (and the number classified correctly), ``pb`` examples at a time; with
    ``backward`` the gradient of ``(1/N) sum_i l_i`` is accumulated into ``.grad`` batch by batch."""
    n = x.shape[0]
    pers, correct = [], 0
    was_training = model.training
    if eval_mode:
        model.eval()
    try:
        with torch.set_grad_enabled(backward):
            for s in range(0, n, pb):
                out = _forward(model, x[s : s + pb], t if s == 0 else 1)
                per_c = per_example_loss(out, y[s : s + pb], loss)
                if backward:
                    (per_c.sum() / n).backward()
                pers.append(per_c.detach())
                correct += int((out.detach().argmax(1) == y[s : s + pb]).sum())
    finally:
        model.train(was_training)
    return torch.cat(pers), correct
