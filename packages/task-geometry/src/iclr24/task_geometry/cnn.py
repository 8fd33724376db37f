"""The paper's image setting: a small CNN (2 conv + 2 fully connected layers) trained on binary
dichotomies of image classes, with the geometry of its last hidden layer measured over the classes.

On MNIST the conditions are the 10 digits and the targets two balanced dichotomies of them: parity (odd = 1) and
magnitude (>= 5 = 1). For CIFAR-10 (from a user path, :func:`iclr24.paperkit.data.load_cifar10`) pass the
classes' own dichotomies (e.g. animal vs vehicle) with ``in_channels=3``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe
from iclr24.paperkit.pretrained import PretrainedMixin
from iclr24.paperkit.resume import check_checkpoint_arg

from .measure import Geometry
from .measure import activations
from .measure import measure
from .students import make_activation

__all__ = ["SmallCNN", "digit_dichotomies", "train_cnn", "measure_cnn"]


def digit_dichotomies() -> np.ndarray:
    """``(10, 2)`` 0/1 targets of the digits: parity (odd) and magnitude (>= 5)."""
    d = np.arange(10)
    return np.stack([d % 2, (d >= 5).astype(int)], axis=1).astype(np.float64)


class SmallCNN(PretrainedMixin, nn.Module):
    """conv(5x5, 16) - phi - maxpool - conv(5x5, 32) - phi - maxpool - fc(128) - phi - fc(k) for square images.
    ``save_pretrained(dir)`` / ``SmallCNN.from_pretrained(dir)`` write and read a model folder."""

    def __init__(self, k: int, *, act: str = "tanh", in_channels: int = 1, side: int = 28, width: int = 128):
        super().__init__()
        k = check_int(k, "k", minimum=1, maximum=2**16)
        in_channels = check_int(in_channels, "in_channels", minimum=1, maximum=4096)
        side = check_int(side, "side", minimum=4, maximum=4096)
        width = check_int(width, "width", minimum=1, maximum=2**16)
        if 32 * (side // 4) ** 2 * width > 10**8:
            raise InputError(f"SmallCNN(side={side}, width={width}) would have more than 10**8 weights in fc")
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 16, 5, padding=2),
            make_activation(act),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 5, padding=2),
            make_activation(act),
            nn.MaxPool2d(2),
        )
        self.fc = nn.Linear(32 * (side // 4) ** 2, width)
        self.act = make_activation(act)
        self.readout = nn.Linear(width, k)
        self.side, self.in_channels = side, in_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        per = self.in_channels * self.side * self.side
        dtype = self.fc.weight.dtype
        if not torch.is_tensor(x) or x.dtype != dtype or x.dim() < 2 or len(x) == 0 or x[0].numel() != per:
            raise InputError(
                f"SmallCNN input must be {dtype} images [n, {self.in_channels}, {self.side}, {self.side}] "
                f"(or [n, {per}]), got {describe(x)}"
            )
        x = x.reshape(x.shape[0], self.in_channels, self.side, self.side)
        return self.readout(self.act(self.fc(self.features(x).flatten(1))))


def _images(x: np.ndarray | torch.Tensor, in_channels: int, side: int) -> torch.Tensor:
    """Images as ``(n, C, side, side)`` float32: from flat CHW rows ``(n, C*side*side)``, ``(n, C, side, side)``,
    or channels-last ``(n, side, side, C)`` (what ``load_cifar10`` returns); uint8 pixels are scaled to [0, 1]."""
    raw = x if torch.is_tensor(x) else np.asarray(x)
    is_uint8 = raw.dtype == (torch.uint8 if torch.is_tensor(raw) else np.uint8)
    try:
        t = torch.as_tensor(raw).to(torch.float32)
    except (TypeError, ValueError, RuntimeError, OverflowError) as e:
        raise InputError(f"images must be a numeric array, got {describe(x)}: {e}") from None
    if t.ndim < 2 or t.shape[0] == 0 or t[0].numel() != in_channels * side * side:
        raise InputError(
            f"images must have {in_channels}x{side}x{side} values each, got shape {tuple(t.shape)}"
        )
    if t.ndim == 4 and in_channels > 1 and t.shape[1:] == (side, side, in_channels):
        t = t.permute(0, 3, 1, 2)  # channels-last (HWC) -> CHW
    if is_uint8:
        t = t / 255.0
    if not torch.isfinite(t).all():
        raise InputError("images contain NaN/inf values")
    return t.reshape(t.shape[0], in_channels, side, side).contiguous()


def _targets(targets: object) -> np.ndarray:
    try:
        T = np.asarray(targets, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise InputError(
            f"targets must be (C, k) 0/1 labels per class, got {describe(targets)}: {e}"
        ) from None
    if T.ndim != 2 or T.size == 0 or not np.isin(T, (0, 1)).all():
        raise InputError(
            f"targets must be a non-empty (C, k) array of 0/1 labels per class, got {describe(T)}"
        )
    return T


def _labels(labels: object, n: int, n_classes: int) -> np.ndarray:
    y = np.asarray(labels.detach().cpu().numpy() if torch.is_tensor(labels) else labels)
    if (
        y.shape != (n,)
        or not np.issubdtype(y.dtype, np.integer)
        or (y.size and (y.min() < 0 or y.max() >= n_classes))
    ):
        raise InputError(
            f"labels must be (n,) = ({n},) integer class indices in 0..{n_classes - 1}, got {describe(y)}"
        )
    return y


def _user_images(x: object, labels: object, targets: object) -> tuple[object, object]:
    """``(images, labels)`` from a ``Dataset`` of ``(image, label)`` items or a ``DataLoader`` of such batches
    (read once, in order); ``labels`` must then be None. Arrays and tensors pass through."""
    from iclr24.paperkit.data.user import as_tensors
    from iclr24.paperkit.data.user import is_user_data

    if targets is None:
        raise InputError("targets (C, k) are required: the 0/1 dichotomies of the classes")
    if is_user_data(x):
        if labels is not None:
            raise InputError("give labels=None with a Dataset/DataLoader: its items are (image, label) pairs")
        return as_tensors(x, fields=2, what="a Dataset/DataLoader of (image, label)")
    if labels is None:
        raise InputError("labels (n,) are required with an array of images (or pass a Dataset/DataLoader)")
    return x, labels


def train_cnn(
    x: np.ndarray,
    labels: np.ndarray | None = None,
    targets: np.ndarray | None = None,
    *,
    act: str = "tanh",
    epochs: int = 2,
    lr: float = 1e-3,
    batch_size: int = 64,
    in_channels: int = 1,
    side: int = 28,
    seed: int = 0,
    callbacks: object = None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
) -> SmallCNN:
    """Train :class:`SmallCNN` with Adam on the Bernoulli loss for the class dichotomies ``targets (C, k)``;
    ``labels (n,)`` are the class of each image. ``x``: flat CHW rows, ``(n, C, side, side)`` or channels-last
    ``(n, side, side, C)`` as ``load_cifar10`` returns them; uint8 pixels are scaled to [0, 1]. Or ``x`` is your
    ``Dataset`` of ``(image, label)`` items / ``DataLoader`` of such batches with ``labels=None`` (read once, in
    order: the same model as the arrays).

    ``callbacks`` / ``log_dir``: one :class:`~iclr24.paperkit.tracking.StepLog`, ``loss`` after every Adam step.
    ``checkpoint``: a file written after every epoch; with ``resume=True`` an existing one is continued (an
    interrupted run resumed ends bit for bit as the uninterrupted one)."""
    from iclr24.paperkit.resume import load_train_state
    from iclr24.paperkit.resume import save_train_state
    from iclr24.paperkit.tracking import StepLog

    x, labels = _user_images(x, labels, targets)
    in_channels = check_int(in_channels, "in_channels", minimum=1, maximum=4096)
    side = check_int(side, "side", minimum=4, maximum=4096)
    epochs = check_int(epochs, "epochs", minimum=1, maximum=10**6)
    batch_size = check_int(batch_size, "batch_size", minimum=1, maximum=2**31)
    seed = check_int(seed, "seed", minimum=0, maximum=2**63 - 1)
    check_float(lr, "lr", minimum=0, maximum=1e6, open_min=True)
    X = _images(x, in_channels, side)
    T = _targets(targets)
    y = _labels(labels, X.shape[0], T.shape[0])
    Y = torch.as_tensor(T[y])
    check_checkpoint_arg(checkpoint, resume)
    torch.manual_seed(seed)
    model = SmallCNN(T.shape[1], act=act, in_channels=in_channels, side=side)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    loss_fn = nn.BCEWithLogitsLoss()
    meta = {"act": act, "lr": float(lr), "batch_size": batch_size, "seed": seed, "n": int(X.shape[0]),
            "side": side, "in_channels": in_channels, "k": int(T.shape[1])}  # fmt: skip
    first, step = 0, 0
    if resume and Path(checkpoint).exists():
        saved: dict = {}
        first = load_train_state(
            checkpoint, model=model, optimizer=opt, generators={"shuffle": g}, expect=meta, into=saved,
            what="task-geometry CNN training state",
        )  # fmt: skip
        step = int(saved["step"])
    with StepLog(log_dir, callbacks, name="task_geometry") as log:
        for epoch in range(first, epochs):
            model.train()
            perm = torch.randperm(X.shape[0], generator=g)
            for start in range(0, X.shape[0], batch_size):
                idx = perm[start : start + batch_size]
                loss = loss_fn(model(X[idx]), Y[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                step += 1
                log(step, {"loss": float(loss.detach()), "epoch": epoch})
            if checkpoint is not None:
                save_train_state(
                    checkpoint, step=epoch + 1, model=model, optimizer=opt, generators={"shuffle": g}, meta=meta,
                    extra={"step": step},
                )  # fmt: skip
        log.close({"steps": step, "epochs": epochs})
    model.eval()
    return model


def measure_cnn(
    model: SmallCNN,
    x: np.ndarray,
    labels: np.ndarray,
    targets: np.ndarray,
    *,
    classifier: str = "ridge",
    seed: int = 0,
) -> tuple[Geometry, float]:
    """The geometry of the last hidden layer (``act`` after ``fc``) over the classes, against the pixel kernel;
    and the target accuracy on these images."""
    if not isinstance(model, SmallCNN):
        raise InputError(f"model must be a SmallCNN, got {describe(model)}")
    X = _images(x, model.in_channels, model.side)
    T = _targets(targets)
    y = _labels(labels, X.shape[0], T.shape[0])
    if T.shape[1] != model.readout.out_features:
        raise InputError(
            f"the model has {model.readout.out_features} outputs but targets has {T.shape[1]} columns"
        )
    Z = activations(model, X, "act")
    geo = measure(Z, y, targets=T, inputs=X.flatten(1), classifier=classifier, seed=seed)
    with torch.no_grad():
        logits = torch.cat([model(X[i : i + 1024]) for i in range(0, X.shape[0], 1024)])
    return geo, float(((logits > 0).float() == torch.as_tensor(T[y])).float().mean())
