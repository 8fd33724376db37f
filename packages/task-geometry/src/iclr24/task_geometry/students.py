"""Student networks and the authors' training loop.

Notation (the paper's): input ``x in R^D``, hidden ``z = phi(W x + b) in R^N``, read-out ``y_hat = J z + c``
for ``k`` binary targets, trained with a Bernoulli likelihood:

    z     = phi(W x + b)                                                                              Eq. (S1)
    y_hat = J z + c                                                                                   Eq. (S2)
    L     = mean_i BCE(sigmoid(y_hat_i), y_i)                                                         Eq. (S3)

``depth > 1`` stacks hidden layers ``z_l = phi(W_l z_{l-1} + b_l)``; the geometry is measured on the last one.
With ``fixed_readout`` (Sec. 3.1.1) ``J`` is fixed and only ``W, b`` learn: as in the first author's
``weight_dynamics.py``, its columns are balanced signed patterns (:func:`balanced_readout`) scaled by ``1/sqrt(N)``.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import describe
from iclr24.paperkit.pretrained import PretrainedMixin
from iclr24.paperkit.resume import check_checkpoint_arg

__all__ = [
    "ACTIVATIONS",
    "TWO_SIDED",
    "TrainConfig",
    "AUTHORS",
    "balanced_readout",
    "MLP",
    "Student",
    "make_activation",
    "train_student",
    "train_students",
    "weight_projections",
]


def _clipped_relu(x: torch.Tensor) -> torch.Tensor:
    return x.clamp(0.0, 1.0)


# Sec. 7: symmetric two-sided saturation (tanh, hardtanh, sigmoid-like) vs one-sided (relu, softplus, ...)
ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "tanh": nn.Tanh,
    "relu": nn.ReLU,
    "hardtanh": nn.Hardtanh,
    "sigmoid": nn.Sigmoid,
    "softplus": nn.Softplus,
    "leaky_relu": lambda: nn.LeakyReLU(0.1),
    "elu": nn.ELU,
    "clipped_relu": lambda: _Lambda(_clipped_relu),
}
TWO_SIDED = ("tanh", "hardtanh", "sigmoid", "clipped_relu")


class _Lambda(nn.Module):
    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


def make_activation(name: str) -> nn.Module:
    """The nonlinearity ``phi`` by name: one of ``ACTIVATIONS``."""
    if not isinstance(name, str) or name not in ACTIVATIONS:
        raise InputError(f"unknown activation {name!r}; expected one of {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]()


MAX_WIDTH = 2**16  # hidden units per layer at most
MAX_PARAMETERS = 10**8  # weights of one student at most


def _check_int(name: str, v: object, minimum: int, maximum: int = 2**31) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or not minimum <= v <= maximum:
        raise InputError(f"{name} must be an int in [{minimum}, {maximum}], got {v!r}")
    return int(v)


def _check_pos(name: str, v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | np.floating) or not math.isfinite(v) or v <= 0:
        raise InputError(f"{name} must be a positive finite number, got {v!r}")
    return float(v)


def _as_float_tensor(name: str, x: object, ndim: int, last: int | None = None) -> torch.Tensor:
    """``x`` (numpy, torch or nested lists) as a finite float32 tensor of ``ndim`` dims (``last`` columns)."""
    try:
        t = torch.as_tensor(np.asarray(x) if not torch.is_tensor(x) else x).to(torch.float32)
    except (TypeError, ValueError, RuntimeError, OverflowError) as e:
        raise InputError(f"{name} must be a numeric array, got {describe(x)}: {e}") from None
    if t.ndim != ndim or (last is not None and t.shape[-1] != last) or t.shape[0] == 0:
        want = f"{ndim}-D" + ("" if last is None else f" with {last} columns") + ", not empty"
        raise InputError(f"{name} must be {want}, got shape {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise InputError(f"{name} contains NaN/inf values")
    return t


@dataclass(frozen=True)
class TrainConfig:
    """Student and optimiser settings. Defaults: the paper's CPU-scale recipe (width 128, Adam lr 1e-2, batch 64,
    30 epochs); ``AUTHORS`` is the authors' long run (up to 1000 epochs, stop when no parameter moves by more
    than ``stop_tol`` in an epoch).

    The stopping rule is the research code's (``NetworkExperiment`` in ``super_experiments.py``): students trained
    together stop together, at the first epoch in which no parameter of *any* of them moved by more than
    ``stop_tol``. ``stop_each=True`` instead freezes each student at its own first such epoch (the same as
    training it alone)."""

    width: int = 128
    depth: int = 1
    lr: float = 1e-2
    batch_size: int = 64
    epochs: int = 30
    stop_tol: float | None = None
    stop_each: bool = False
    fixed_readout: bool = False
    record_every: int = 0  # steps between snapshots of the first layer (0: none)

    def __post_init__(self) -> None:
        _check_int("width", self.width, 1, MAX_WIDTH)
        _check_int("depth", self.depth, 1, 1000)
        _check_pos("lr", self.lr)
        _check_int("batch_size", self.batch_size, 1)
        _check_int("epochs", self.epochs, 1, 10**6)
        _check_int("record_every", self.record_every, 0)
        if self.stop_tol is not None:
            _check_pos("stop_tol", self.stop_tol)


AUTHORS = TrainConfig(epochs=1000, stop_tol=1e-5)


def balanced_readout(k: int, width: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """The fixed read-out ``J (k, N)`` of the learning-dynamics analysis (Sec. 3.1.1), as the first author's
    ``weight_dynamics.py`` builds it (``pt_util.BalancedBinary(1, k)`` divided by ``sqrt(N)``).

    The distinct columns are every signed pattern with one non-zero output (``+-e_i``: 2k of them) followed by every
    pattern with all k outputs ``+-1`` (``2^k``); the N hidden units are split evenly among them in that order, and
    the ``N mod G`` left over go, one each, to randomly chosen patterns (``generator``; torch's global one when
    ``None``). Scaled by ``1/sqrt(N)``."""
    k, width = _check_int("k", k, 1, 16), _check_int("width", width, 1, MAX_WIDTH)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise InputError(f"generator must be a torch.Generator or None, got {describe(generator)}")
    patterns = []
    for n_active in (1, k):
        for outputs in itertools.combinations(range(k), n_active):
            for j in range(2**n_active):
                col = torch.zeros(k)
                col[list(outputs)] = torch.tensor([2.0 * ((j >> i) & 1) - 1 for i in range(n_active)])
                patterns.append(col)
    P = torch.stack(patterns, 1)  # (k, G)
    G = P.shape[1]
    reps = torch.full((G,), width // G, dtype=torch.long)
    reps[torch.randperm(G, generator=generator)[: width % G]] += 1
    return P.repeat_interleave(reps, dim=1) / math.sqrt(width)


class MLP(PretrainedMixin, nn.Module):
    """``depth`` hidden layers of ``width`` units with nonlinearity ``act`` and a linear read-out to ``k`` logits
    (Eqs. S1-S2); PyTorch's default initialisation, as the authors. ``save_pretrained(dir)`` /
    ``MLP.from_pretrained(dir)`` write and read a model folder (model.safetensors, config.json, provenance.json)."""

    def __init__(
        self,
        dim_in: int,
        k: int,
        *,
        width: int = 128,
        depth: int = 1,
        act: str = "tanh",
        fixed_readout: bool = False,
    ):
        super().__init__()
        dim_in, k = _check_int("dim_in", dim_in, 1, MAX_PARAMETERS), _check_int("k", k, 1, 2**16)
        width, depth = _check_int("width", width, 1, MAX_WIDTH), _check_int("depth", depth, 1, 1000)
        if (dim_in + k + (depth - 1) * width) * width > MAX_PARAMETERS:
            raise InputError(
                f"an MLP of dim_in={dim_in}, width={width}, depth={depth}, k={k} has more than "
                f"{MAX_PARAMETERS} weights"
            )
        if fixed_readout and k > 16:
            raise InputError(f"fixed_readout needs k <= 16 (2**k read-out patterns), got k={k}")
        self.act_name = act
        self.dim_in = dim_in
        layers: list[nn.Module] = []
        d = dim_in
        for _ in range(depth):
            # Eq. (S1): z = phi(W x + b)
            layers += [nn.Linear(d, width), make_activation(act)]
            d = width
        self.hidden = nn.Sequential(*layers)
        # Eq. (S2): y_hat = J z + c
        self.readout = nn.Linear(width, k)
        if fixed_readout:
            with torch.no_grad():
                self.readout.weight.copy_(balanced_readout(k, width))
                self.readout.bias.zero_()
            self.readout.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = self.readout.weight.dtype
        if not torch.is_tensor(x) or x.dim() < 1 or x.shape[-1] != self.dim_in or x.dtype != dtype:
            raise InputError(f"MLP input must be a {dtype} tensor [..., {self.dim_in}], got {describe(x)}")
        return self.readout(self.hidden(x))

    @torch.no_grad()
    def representation(self, x: torch.Tensor | np.ndarray, layer: int = -1) -> np.ndarray:
        """Hidden activations ``z`` of hidden layer ``layer`` (default: the last) for inputs ``x``: ``(n, N)``."""
        h = _as_float_tensor("x", x, 2, self.dim_in)
        n_hidden = len(self.hidden) // 2
        _check_int("layer", layer, -n_hidden, n_hidden - 1)
        stop = (layer % n_hidden) + 1
        out = self.hidden[: 2 * stop](h)
        return out.double().numpy()


@dataclass
class Student:
    """A trained student: the model, its settings, the per-epoch loss, and (optionally) first-layer snapshots."""

    model: MLP
    act: str
    config: TrainConfig
    seed: int
    losses: list[float] = field(default_factory=list)
    epochs_run: int = 0
    snapshots: list[tuple[int, np.ndarray, np.ndarray]] = field(default_factory=list)  # (step, W, b)

    def representation(self, x, layer: int = -1) -> np.ndarray:
        return self.model.representation(x, layer)

    def save_pretrained(self, folder: str | os.PathLike, *, provenance: Mapping | None = None) -> Path:
        """The model as a folder (``MLP.save_pretrained``), with this student's nonlinearity, seed, training
        config, epochs and per-epoch losses in ``provenance.json`` beside ``provenance`` (command, CPU seconds,
        the task). The first-layer snapshots are not saved."""
        prov = {
            **dict(provenance or {}),
            "act": self.act,
            "seed": self.seed,
            "train_config": asdict(self.config),
            "epochs_run": self.epochs_run,
            "losses": list(self.losses),
        }
        return self.model.save_pretrained(folder, provenance=prov)

    @classmethod
    def from_pretrained(cls, folder: str | os.PathLike) -> Student:
        """A student saved by :meth:`save_pretrained` (model in eval mode; no snapshots)."""
        from iclr24.paperkit.pretrained import read_model_folder

        _, _, prov = read_model_folder(folder)
        model = MLP.from_pretrained(folder)
        try:
            st = cls(
                model=model.eval(),
                act=str(prov["act"]),
                config=TrainConfig(**prov["train_config"]),
                seed=int(prov["seed"]),
                losses=[float(v) for v in prov["losses"]],
                epochs_run=int(prov["epochs_run"]),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise InputFileError(
                f"{Path(folder) / 'provenance.json'} does not describe a trained student ({type(e).__name__}: "
                f"{e}); load the bare model with MLP.from_pretrained",
                Path(folder) / "provenance.json",
            ) from None
        return st

    @torch.no_grad()
    def accuracy(self, x, y) -> float:
        """Fraction of targets (all ``k`` of every row) predicted right by the sign of the logits."""
        x = _as_float_tensor("x", x, 2, self.model.dim_in)
        logits = self.model(x)
        y = _as_float_tensor("y", y, 2, logits.shape[1])
        if y.shape[0] != x.shape[0]:
            raise InputError(f"x and y need the same number of rows, got {x.shape[0]} and {y.shape[0]}")
        return float(((logits > 0).float() == y).float().mean())


def _as_xy(task) -> tuple[torch.Tensor, torch.Tensor]:
    from iclr24.paperkit.data.user import as_tensors
    from iclr24.paperkit.data.user import is_user_data

    if is_user_data(task):  # a Dataset of (x, y) items or a DataLoader of (x, y) batches, read once in order
        X, Y = as_tensors(task, fields=2, what="a task's Dataset/DataLoader of (x, y)")
    elif hasattr(task, "X") and hasattr(task, "Y"):
        X, Y = task.X, task.Y
    elif isinstance(task, tuple | list) and len(task) == 2:
        X, Y = task
    else:
        raise InputError(f"a task must be a Task or a pair (X, Y), got {describe(task)}")
    X = _as_float_tensor("the inputs X", X, 2)
    try:
        Y = torch.as_tensor(np.asarray(Y) if not torch.is_tensor(Y) else Y).to(torch.float32)
    except (TypeError, ValueError, RuntimeError) as e:
        raise InputError(f"the targets Y must be a numeric array, got {describe(Y)}: {e}") from None
    if X.ndim != 2 or Y.ndim != 2 or X.shape[0] != Y.shape[0]:
        raise InputError(
            f"X must be (n, D) and Y (n, k) with the same n, got {tuple(X.shape)} and {tuple(Y.shape)}"
        )
    if not torch.isfinite(X).all():
        raise InputError("the inputs X contain NaN/inf values")
    if not ((Y == 0) | (Y == 1)).all():
        raise InputError("the targets Y must be 0/1 labels")
    return X, Y


def train_student(
    task,
    act: str = "tanh",
    config: TrainConfig | None = None,
    *,
    seed: int = 0,
    callbacks: object = None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
    **overrides,
) -> Student:
    """Train one student on ``task`` (a :class:`~.tasks.Task`, a pair ``(X, Y)``, or a ``Dataset``/``DataLoader``
    of ``(x, y)``) with Adam on the Bernoulli loss (Eq. (S3)). ``overrides`` replace fields of ``config`` (e.g.
    ``epochs=5``); ``callbacks``, ``log_dir``, ``checkpoint`` and ``resume`` as in :func:`train_students`."""
    return train_students(
        [task], [act], [seed], config, callbacks=callbacks, log_dir=log_dir, checkpoint=checkpoint,
        resume=resume, **overrides,
    )[0]  # fmt: skip


def train_students(
    tasks: list,
    acts: list[str],
    seeds: list[int],
    config: TrainConfig | None = None,
    *,
    show_progress: bool = False,
    callbacks: object = None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
    **overrides,
) -> list[Student]:
    """Train several independent students at once (one per ``(task, act, seed)`` triple), exactly as
    :func:`train_student` would train each alone: each member has its own PyTorch-default initialisation from its
    seed, its own mini-batch order, and its own Adam state (Adam is element-wise, so a stacked optimiser is the
    same as separate ones). The members' layers are stacked and run with batched matrix products, which makes an
    ensemble of inits or activations cost about as much as one student. All tasks need the same ``n``, ``D``, ``k``.

    A task is a :class:`~.tasks.Task`, a pair ``(X, Y)`` of arrays or tensors, or your own ``Dataset`` of
    ``(x, y)`` items / ``DataLoader`` of ``(x, y)`` batches (read once, in its order; the same students as the
    tensors). ``callbacks`` / ``log_dir``: one :class:`~iclr24.paperkit.tracking.StepLog`, called after every Adam
    step with ``loss`` (the members' mean) and ``loss/<i>`` (member ``i``'s), and after every epoch with
    ``epoch_loss`` (``log_dir``: ``metrics.jsonl``, TensorBoard files when installed). ``checkpoint``: a file
    written after every epoch (the stacked weights, Adam, every member's generator, losses); with
    ``resume=True`` an existing one is continued, so an interrupted run resumed ends bit for bit as the
    uninterrupted one.
    """
    if config is not None and not isinstance(config, TrainConfig):
        raise InputError(f"config must be a TrainConfig, got {describe(config)}")
    unknown = sorted(set(overrides) - set(TrainConfig.__dataclass_fields__))
    if unknown:
        raise InputError(
            f"unknown TrainConfig fields {unknown}; expected some of {list(TrainConfig.__dataclass_fields__)}"
        )
    cfg = replace(config or TrainConfig(), **overrides) if overrides else (config or TrainConfig())
    for name, v in (("tasks", tasks), ("acts", acts), ("seeds", seeds)):
        if isinstance(v, str) or not isinstance(v, list | tuple):
            raise InputError(f"{name} must be a list (one per student), got {describe(v)}")
    seeds = [_check_int("seed", s, 0, 2**63 - 1) for s in seeds]
    if not (len(tasks) == len(acts) == len(seeds)) or not tasks:
        raise InputError(
            f"give one task, act and seed per student, got {len(tasks)}, {len(acts)}, {len(seeds)}"
        )
    for a in acts:
        make_activation(a)
    data = [_as_xy(t) for t in tasks]
    shapes = {tuple(x.shape) for x, _ in data}
    if len(shapes) != 1:
        raise InputError(f"all tasks of one ensemble need the same X shape (n, D), got {sorted(shapes)}")
    ks = [y.shape[1] for _, y in data]
    k = max(ks)
    X = torch.stack([x for x, _ in data])  # (S, n, D)
    Y = torch.stack([nn.functional.pad(y, (0, k - y.shape[1])) for _, y in data])  # (S, n, k_max)
    mask = torch.stack([(torch.arange(k) < ki).float() for ki in ks])[:, None, :]  # (S, 1, k_max)
    k_per = torch.tensor(ks, dtype=torch.float32)
    S, n, D = X.shape
    models = []
    for a, sd, ki in zip(acts, seeds, ks, strict=True):
        torch.manual_seed(int(sd))
        models.append(MLP(D, ki, width=cfg.width, depth=cfg.depth, act=a, fixed_readout=cfg.fixed_readout))
    layers = [
        [
            nn.Parameter(torch.stack([m.hidden[2 * i].weight.detach().T for m in models]))
            for i in range(cfg.depth)
        ],
        [
            nn.Parameter(torch.stack([m.hidden[2 * i].bias.detach() for m in models])[:, None, :])
            for i in range(cfg.depth)
        ],
    ]
    J = nn.Parameter(torch.stack([_pad(m.readout.weight.detach().T, k) for m in models]))
    c = nn.Parameter(torch.stack([_pad(m.readout.bias.detach(), k) for m in models])[:, None, :])
    params = layers[0] + layers[1] + ([] if cfg.fixed_readout else [J, c])
    opt = torch.optim.Adam(params, lr=cfg.lr)
    groups = {a: torch.tensor([i for i, b in enumerate(acts) if b == a]) for a in dict.fromkeys(acts)}
    fns = {a: make_activation(a) for a in groups}

    def hidden(xb: torch.Tensor) -> torch.Tensor:
        h = xb
        for W, b in zip(layers[0], layers[1], strict=True):
            # Eq. (S1): z = phi(W x + b), every member at once
            pre = torch.baddbmm(b, h, W)
            if len(groups) == 1:
                h = fns[acts[0]](pre)
            else:
                h = torch.empty_like(pre)
                for a, idx in groups.items():
                    h[idx] = fns[a](pre[idx])
        return h

    gens = [torch.Generator().manual_seed(int(sd)) for sd in seeds]
    students = [
        Student(model=m, act=a, config=cfg, seed=int(sd))
        for m, a, sd in zip(models, acts, seeds, strict=True)
    ]
    active = torch.ones(S, dtype=torch.bool)
    rows = torch.arange(S)[:, None]
    step = 0
    from iclr24.paperkit import progress
    from iclr24.paperkit.resume import load_train_state
    from iclr24.paperkit.resume import save_train_state
    from iclr24.paperkit.tracking import StepLog

    check_checkpoint_arg(checkpoint, resume)
    holder = nn.ParameterList([*layers[0], *layers[1], J, c])  # every stacked weight, for the training state
    named_gens = {f"member{i}": g for i, g in enumerate(gens)}
    meta = {"config": asdict(cfg), "acts": list(acts), "seeds": list(seeds), "shape": [S, n, D], "ks": ks}
    first_epoch, stopped = 0, False
    if resume and Path(checkpoint).exists():
        saved: dict = {}
        first_epoch = load_train_state(
            checkpoint, model=holder, optimizer=opt, generators=named_gens, expect=meta, into=saved,
            what="task-geometry training state",
        )  # fmt: skip
        active, step, stopped = saved["active"].clone(), int(saved["step"]), bool(saved["stopped"])
        for i, st in enumerate(students):
            st.losses, st.epochs_run = [float(v) for v in saved["losses"][i]], int(saved["epochs_run"][i])
            st.snapshots = [(int(t), W.numpy(), b.numpy()) for t, W, b in saved["snapshots"][i]]
    log = StepLog(log_dir, callbacks, name="task_geometry")
    try:
        epochs = range(first_epoch, cfg.epochs) if not stopped else range(0)
        bar = progress(epochs, desc=f"training {S} students", disable=None if show_progress else True)
        for _epoch in bar:
            before = [p.detach().clone() for p in params] if cfg.stop_tol is not None else None
            perms = torch.stack([torch.randperm(n, generator=g) for g in gens])  # (S, n)
            total = torch.zeros(S)
            for start in range(0, n, cfg.batch_size):
                idx = perms[:, start : start + cfg.batch_size]
                if cfg.record_every and step % cfg.record_every == 0:
                    _snapshot(students, layers, step)
                # Eq. (S2): y_hat = J z + c, every member at once
                logits = torch.baddbmm(c, hidden(X[rows, idx]), J)
                # Eq. (S3): L = mean_i BCE(sigmoid(y_hat_i), y_i) per member; the members' losses are summed
                bce = nn.functional.binary_cross_entropy_with_logits(logits, Y[rows, idx], reduction="none")
                per = (bce * mask).sum((1, 2)) / (idx.shape[1] * k_per)
                opt.zero_grad(set_to_none=True)
                per.sum().backward()
                if cfg.stop_each and before is not None and not active.all():
                    saved = [p.detach()[~active].clone() for p in params]
                opt.step()
                if cfg.stop_each and before is not None and not active.all():
                    with torch.no_grad():
                        for p, sv in zip(params, saved, strict=True):
                            p[~active] = sv  # a member that met the stopping rule stays where it stopped
                total += per.detach() * idx.shape[1]
                step += 1
                member_losses = per.detach().tolist()
                log(
                    step,
                    {"loss": sum(member_losses) / S, **{f"loss/{i}": v for i, v in enumerate(member_losses)}},
                )
            for i, st in enumerate(students):
                if active[i]:
                    st.losses.append(float(total[i]) / n)
                    st.epochs_run += 1
            log(step, {"epoch": _epoch, "epoch_loss": float(total.sum()) / (n * S)})
            if before is not None:
                moved = (
                    torch.stack(
                        [
                            (p.detach() - b).abs().flatten(1).max(1).values
                            for p, b in zip(params, before, strict=True)
                        ]
                    )
                    .max(0)
                    .values
                )
                if cfg.stop_each:
                    active &= moved > cfg.stop_tol
                    stopped = not active.any()
                else:
                    # the research code's rule: stop every student once none of them moved by more than stop_tol
                    stopped = bool((moved <= cfg.stop_tol).all())
            if checkpoint is not None:
                save_train_state(
                    checkpoint, step=_epoch + 1, model=holder, optimizer=opt, generators=named_gens, meta=meta,
                    extra={"active": active, "step": step, "stopped": stopped,
                           "losses": [st.losses for st in students], "epochs_run": [st.epochs_run for st in students],
                           "snapshots": [[(t, torch.from_numpy(W), torch.from_numpy(b)) for t, W, b in st.snapshots]
                                         for st in students]},
                )  # fmt: skip
            if stopped:
                break
        log.close({"steps": step, "epochs_run": max(st.epochs_run for st in students)})
    finally:
        log.close()  # an interrupted run closes its files too
    if cfg.record_every:
        _snapshot(students, layers, step)
    with torch.no_grad():
        for i, m in enumerate(models):
            for li in range(cfg.depth):
                m.hidden[2 * li].weight.copy_(layers[0][li][i].T)
                m.hidden[2 * li].bias.copy_(layers[1][li][i, 0])
            m.readout.weight.copy_(J[i, :, : ks[i]].T)
            m.readout.bias.copy_(c[i, 0, : ks[i]])
            m.eval()
    return students


def _pad(t: torch.Tensor, k: int) -> torch.Tensor:
    return nn.functional.pad(t, (0, k - t.shape[-1]))


def _snapshot(students: list[Student], layers, step: int) -> None:
    W, b = layers[0][0].detach(), layers[1][0].detach()
    for i, st in enumerate(students):
        st.snapshots.append((step, W[i].T.numpy().copy(), b[i, 0].numpy().copy()))


def weight_projections(W: np.ndarray, means: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Sec. 3.1.1: each hidden unit's input weights ``W (N, D)`` projected on the unit inter-class axis (difference
    of the class centroids of the input means) and on the intra-class axis (top principal axis of the means after
    removing their class centroid, orthogonalised to the first): ``(N, 2)``."""
    W = np.asarray(W, dtype=np.float64)
    M = np.asarray(means, dtype=np.float64)
    y = np.asarray(labels).reshape(-1)
    if y.shape[0] != M.shape[0] or not np.isin(y, (0, 1)).all() or y.min() == y.max():
        raise InputError(f"labels must be 0/1 per condition with both classes present (length {M.shape[0]})")
    inter = M[y == 1].mean(0) - M[y == 0].mean(0)
    inter /= np.linalg.norm(inter)
    within = M - np.where(y[:, None] == 1, M[y == 1].mean(0), M[y == 0].mean(0))
    within = within - np.outer(within @ inter, inter)
    _, _, vt = np.linalg.svd(within, full_matrices=False)
    intra = vt[0]
    return np.stack([W @ inter, W @ intra], axis=1)
